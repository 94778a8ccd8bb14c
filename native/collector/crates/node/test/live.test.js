// node --test: record, cancel and apply against a real child process (numascope-testload).
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const zlib = require('node:zlib');
const { spawn } = require('node:child_process');
const addon = require('..');

const root = path.join(__dirname, '..', '..', '..');
const testload =
  process.env.NUMASCOPE_TESTLOAD ||
  [path.join(root, 'target', 'debug', 'numascope-testload'), path.join(root, 'target', 'release', 'numascope-testload')].find(
    (p) => fs.existsSync(p),
  );
const skip = testload ? false : 'numascope-testload not built (cargo build -p numascope-testload)';

/** The manifest of a trace (a ZIP): found through the central directory, inflated with zlib. */
function readManifest(file) {
  const b = fs.readFileSync(file);
  assert.strictEqual(b.subarray(0, 2).toString(), 'PK');
  const eocd = b.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  assert.ok(eocd >= 0, 'no end of central directory');
  let off = b.readUInt32LE(eocd + 16);
  const n = b.readUInt16LE(eocd + 10);
  for (let i = 0; i < n; i++) {
    const method = b.readUInt16LE(off + 10);
    const csize = b.readUInt32LE(off + 20);
    const nameLen = b.readUInt16LE(off + 28);
    const extraLen = b.readUInt16LE(off + 30);
    const commentLen = b.readUInt16LE(off + 32);
    const local = b.readUInt32LE(off + 42);
    const name = b.subarray(off + 46, off + 46 + nameLen).toString();
    if (name === 'manifest.json') {
      const start = local + 30 + b.readUInt16LE(local + 26) + b.readUInt16LE(local + 28);
      const data = b.subarray(start, start + csize);
      return JSON.parse((method === 8 ? zlib.inflateRawSync(data) : data).toString());
    }
    off += 46 + nameLen + extraLen + commentLen;
  }
  throw new Error('no manifest.json');
}

function tmpdir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'numascope-node-live-'));
}

/** Spawns testload and resolves once its buffers are described (`shared` line seen). */
function startTestload(args) {
  const child = spawn(testload, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  const ready = new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d;
      if (/^done$/m.test(out) || /^holding /m.test(out)) resolve(out);
    });
    child.on('exit', (c) => reject(new Error(`testload exited early (${c}): ${out}`)));
  });
  return { child, ready };
}

test('record() launches a testload for 1 s and resolves to the summary', { skip }, async () => {
  const dir = tmpdir();
  const out = path.join(dir, 'one.numascope');
  const r = await addon.record({
    command: [testload, '--threads', '2', '--mib', '8', '--seconds', '10'],
    killOnStop: true, // not about stopping: end the busy testload with the recording
    output: out,
    durationMs: 1000,
    faultPeriod: 1, // every fault: every page of the buffers is in the trace
  });
  assert.strictEqual(r.stopReason, 'duration');
  assert.ok(r.durationUs >= 900_000 && r.durationUs < 3_000_000, `durationUs ${r.durationUs}`);
  assert.ok(r.samples > 2 * 2048, `samples ${r.samples}`);
  assert.ok(r.pages > 2 * 2048);
  assert.strictEqual(r.damon, 'not-requested');
  const m = readManifest(out);
  assert.strictEqual(m.format, 'numascope-trace');
  assert.strictEqual(m.capture.stopReason, 'duration');
  assert.strictEqual(m.capture.sampleCount, r.samples);
  fs.rmSync(dir, { recursive: true, force: true });
});

test('an AbortSignal cancels a long recording early; the trace is still valid', { skip }, async () => {
  const dir = tmpdir();
  const out = path.join(dir, 'cancel.numascope');
  const ac = new AbortController();
  const t0 = Date.now();
  const pending = addon.record({
    command: [testload, '--threads', '1', '--mib', '4', '--seconds', '60'],
    killOnStop: true, // not about stopping: end the busy testload with the recording
    output: out,
    durationMs: 60_000,
    signal: ac.signal,
  });
  setTimeout(() => ac.abort(), 700);
  const r = await pending;
  const took = Date.now() - t0;
  assert.strictEqual(r.stopReason, 'signal');
  assert.ok(took < 10_000, `stopped after ${took} ms`);
  assert.ok(r.durationUs < 5_000_000);
  const m = readManifest(out);
  assert.strictEqual(m.capture.stopReason, 'signal');
  assert.ok(m.capture.notes.some((n) => n.includes('stop flag')));
  assert.ok(m.tables.length >= 8);
  fs.rmSync(dir, { recursive: true, force: true });
});

test('startRecording() returns a handle whose stop() ends the recording', { skip }, async () => {
  const dir = tmpdir();
  const out = path.join(dir, 'handle.numascope');
  const h = addon.startRecording({ command: [testload, '--threads', '1', '--mib', '4', '--seconds', '60'], output: out, killOnStop: true });
  await new Promise((r) => setTimeout(r, 500));
  h.stop();
  const r = await h.result;
  assert.strictEqual(r.stopReason, 'signal');
  assert.strictEqual(readManifest(out).capture.stopReason, 'signal');
  fs.rmSync(dir, { recursive: true, force: true });
});

test("onWindow streams the collector's own live windows, all before the Promise settles", { skip }, async () => {
  const dir = tmpdir();
  const out = path.join(dir, 'live.numascope');
  const windows = [];
  const r = await addon.record({
    command: [testload, '--threads', '2', '--mib', '8', '--seconds', '10'],
    killOnStop: true, // not about stopping: end the busy testload with the recording
    output: out,
    durationMs: 1000,
    windowMs: 100,
    onWindow: (w) => windows.push(w),
  });
  // Everything arrived before the Promise resolved: the final window is already here.
  assert.ok(windows.length >= 5, `${windows.length} windows`);
  assert.deepStrictEqual(
    windows.map((w) => w.seq),
    windows.map((_, i) => i),
  );
  assert.deepStrictEqual(
    windows.map((w) => w.final),
    windows.map((_, i) => i === windows.length - 1),
  );
  for (let i = 1; i < windows.length; i++) assert.strictEqual(windows[i].startUs, windows[i - 1].endUs);
  const last = windows[windows.length - 1];
  assert.strictEqual(last.pid, r.pid);
  // core live.rs: the final window agrees with the trace (launching: no duplicate samples).
  assert.strictEqual(last.totals.faults, r.samples);
  assert.strictEqual(last.totals.pages, r.pages);
  assert.strictEqual(
    windows.reduce((n, w) => n + w.faults, 0),
    r.samples,
  );
  assert.ok(last.threadsSeen >= 2);
  assert.ok(windows.some((w) => w.threads.length > 0));
  for (const k of ['seq', 'startUs', 'endUs', 'elapsedUs', 'final', 'pid', 'faults', 'faultsByNode', 'totals', 'threads', 'threadsSeen', 'lostSamples'])
    assert.ok(k in last, k);
  fs.rmSync(dir, { recursive: true, force: true });
});

test('a throwing onWindow is reported, and the recording still completes', { skip }, async () => {
  const dir = tmpdir();
  const warnings = [];
  const onWarning = (w) => warnings.push(String(w.message));
  process.on('warning', onWarning);
  try {
    let calls = 0;
    const r = await addon.record({
      command: [testload, '--threads', '1', '--mib', '2', '--seconds', '10'],
      killOnStop: true,
    killOnStop: true, // not about stopping: end the busy testload with the recording
      output: path.join(dir, 'throws.numascope'),
      durationMs: 400,
      windowMs: 100,
      onWindow: () => {
        calls++;
        throw new Error('boom');
      },
    });
    assert.strictEqual(r.stopReason, 'duration');
    assert.ok(calls >= 2);
    await new Promise((res) => setImmediate(res));
    assert.ok(warnings.some((m) => m.includes('onWindow callback threw') && m.includes('boom')), warnings.join('\n'));
    assert.throws(() => addon.record({ command: [testload], output: path.join(dir, 'x.numascope'), onWindow: 7 }), /onWindow must be a function/);
  } finally {
    process.off('warning', onWarning);
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('apply() dry-runs a plan on a running child', { skip }, async () => {
  const { child, ready } = startTestload(['--threads', '2', '--mib', '4', '--seconds', '0.1', '--hold', '30']);
  try {
    const stdout = await ready;
    const bufs = [...stdout.matchAll(/^buffer tid=(\d+) addr=0x([0-9a-f]+) len=(\d+)/gm)].map((m) => ({
      tid: Number(m[1]),
      addr: BigInt('0x' + m[2]),
      len: BigInt(m[3]),
    }));
    assert.strictEqual(bufs.length, 2, stdout);
    const example = JSON.parse(fs.readFileSync(path.join(root, '..', '..', 'docs', 'examples', 'plan-move-and-pin.json'), 'utf8'));
    const plan = {
      ...example,
      target: { ...example.target, pid: child.pid, startTimeTicks: null, command: [testload], machine: { nodeIds: [0], distances: null } },
      pageRanges: bufs.map((b) => ({
        start: '0x' + b.addr.toString(16),
        end: '0x' + (b.addr + b.len).toString(16),
        action: 'move',
        toNodes: [0],
        expectedNodes: null,
        reason: 'worker buffer stays on node 0',
      })),
      threads: bufs.map((b) => ({ tid: b.tid, toNodes: [0], expectedNode: 0, reason: 'pin the worker to node 0' })),
      expected: null,
    };
    const report = await addon.apply(JSON.stringify(plan), { pid: child.pid, dryRun: true });
    assert.strictEqual(report.dryRun, true);
    assert.strictEqual(report.pid, child.pid);
    assert.strictEqual(report.operation, 'apply');
    assert.strictEqual(report.ranges.length, 2);
    assert.strictEqual(report.threads.length, 2);
    assert.ok(!('rollback' in report));
    await assert.rejects(addon.apply(JSON.stringify(plan), { pid: child.pid + 100000, dryRun: true }), /targets process/);
    // systemWeights: not written without setSystemWeights (a warning says so); with it, a dry
    // run reads the kernel's weights and reports what it would write, writing nothing.
    const weighted = { ...plan, systemWeights: { weights: { 0: 3 }, reason: 'binding test' } };
    const quiet = await addon.apply(JSON.stringify(weighted), { pid: child.pid, dryRun: true });
    assert.ok(!('systemWeights' in quiet));
    assert.ok(quiet.warnings.some((w) => /systemWeights \(.*\) were not applied/.test(w)), quiet.warnings.join('\n'));
    const wiDir = '/sys/kernel/mm/mempolicy/weighted_interleave';
    if (fs.existsSync(path.join(wiDir, 'node0'))) {
      const before = fs.readFileSync(path.join(wiDir, 'node0'), 'utf8').trim();
      const asked = await addon.apply(JSON.stringify(weighted), { pid: child.pid, dryRun: true, setSystemWeights: true });
      assert.deepStrictEqual(asked.systemWeights.planned, { 0: 3 });
      assert.strictEqual(asked.systemWeights.after, null);
      assert.strictEqual(asked.systemWeights.before.weights['0'], Number(before));
      assert.strictEqual(fs.readFileSync(path.join(wiDir, 'node0'), 'utf8').trim(), before);
    } else {
      await assert.rejects(addon.apply(JSON.stringify(weighted), { pid: child.pid, dryRun: true, setSystemWeights: true }), /weighted.interleave|6\.9/i);
    }
  } finally {
    child.kill('SIGKILL');
  }
});

test('runPlan() launches a program with a plan and reports the site it placed and the thread it pinned', { skip }, async () => {
  const numascope = [path.join(root, 'target', 'debug', 'numascope'), path.join(root, 'target', 'release', 'numascope')].find((p) => fs.existsSync(p));
  if (!numascope) return;
  const { spawnSync } = require('node:child_process');
  const args = ['--threads', '1', '--mib', '1', '--shared-mib', '3', '--seconds', '0.05'];
  // The shared buffer's allocation site, from a run recorded by the allocation shim.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'numascope-runplan-'));
  try {
    const shim = path.join(path.dirname(numascope), 'libnumascope_allocshim.so');
    const rec = spawnSync(testload, args, { env: { ...process.env, LD_PRELOAD: shim, NUMASCOPE_ALLOC_DIR: dir, NUMASCOPE_ALLOC_SAMPLE_BYTES: '0' } });
    assert.strictEqual(rec.status, 0, String(rec.stderr));
    const frames = spawnSync(numascope, ['debug', 'alloc-frames', dir, '--min-bytes', '4000000'], { encoding: 'utf8' });
    const size = (3 << 20) + (2 << 20) + 8192; // the shared buffer's mmap: 3 MiB, 2 MiB for alignment, two guard pages
    const site = frames.stdout.trim().split('\n').map((l) => JSON.parse(l)).find((e) => e.size === size);
    assert.ok(site, frames.stdout + frames.stderr);
    const plan = {
      format: 'numascope-plan',
      version: 1,
      source: { policy: 'manual' },
      target: { pid: 1, command: [testload, ...args], machine: { nodeIds: [0] } },
      pageRanges: [],
      threads: [{ tid: 2, order: 1, name: 'testload-w0', toNodes: [0] }],
      objects: [{ site: 'shared buffer', frames: site.frames.slice(0, 3), size: { min: size, max: size }, policy: 'bind', nodes: [0] }],
    };
    const dry = await addon.runPlan(JSON.stringify(plan), { dryRun: true });
    assert.strictEqual(dry.dryRun, true);
    assert.strictEqual(dry.pid, null);
    assert.strictEqual(dry.objects[0].matches, 0);
    // setSystemWeights: a dry run reads the kernel's weights and says what it would write for the
    // run, writing nothing (on a kernel without weighted interleave: refused, naming the version).
    const weighted = { ...plan, systemWeights: { weights: { 0: 3 }, reason: 'binding test' } };
    const wiDir = '/sys/kernel/mm/mempolicy/weighted_interleave';
    if (fs.existsSync(path.join(wiDir, 'node0'))) {
      const before = fs.readFileSync(path.join(wiDir, 'node0'), 'utf8').trim();
      const asked = await addon.runPlan(JSON.stringify(weighted), { dryRun: true, setSystemWeights: true });
      assert.ok(asked.warnings.some((w) => /would write the system-wide weights .*3.* restore them after it/.test(w)), asked.warnings.join('\n'));
      assert.strictEqual(fs.readFileSync(path.join(wiDir, 'node0'), 'utf8').trim(), before);
      const quiet = await addon.runPlan(JSON.stringify(weighted), { dryRun: true });
      assert.ok(!quiet.warnings.some((w) => /would write the system-wide weights/.test(w)), quiet.warnings.join('\n'));
    } else {
      await assert.rejects(addon.runPlan(JSON.stringify(weighted), { dryRun: true, setSystemWeights: true }), /weighted.interleave|6\.9/i);
    }
    const report = await addon.runPlan(JSON.stringify(plan));
    assert.strictEqual(report.exitCode, 0);
    assert.ok(report.pid > 0);
    assert.strictEqual(report.objects[0].matches, 1, JSON.stringify(report));
    assert.ok(report.objects[0].bytesPerNode['0'] >= 3 << 20, JSON.stringify(report.objects[0]));
    assert.deepStrictEqual(report.unmatchedObjects, []);
    assert.strictEqual(report.threads[0].pinned.length, 1, JSON.stringify(report.threads));
    // refusals name the problem
    await assert.rejects(addon.runPlan(JSON.stringify({ ...plan, objects: [], threads: [] })), /nothing to apply at launch/);
    await assert.rejects(addon.runPlan(JSON.stringify(plan), { command: ['/no/such/program'] }), /made for .* Pass --any-program/);
    await assert.rejects(addon.runPlan(JSON.stringify(plan), { command: ['/no/such/program'], anyProgram: true }), /not found/);
    await assert.rejects(addon.runPlan(JSON.stringify(plan), { weightsFallback: 'maybe' }), /weightsFallback/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
