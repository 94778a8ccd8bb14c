// node --test: loads the built addon (numascope.node) and calls it.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const addon = require('..');

test('probe() lists every source and metric with a reason', async () => {
  const p = await addon.probe();
  const ids = p.sources.map((s) => s.id);
  for (const id of ['page-faults', 'procfs', 'sysfs-topology', 'ibs-op', 'pebs-load', 'pebs-store', 'damon', 'core-counters', 'uncore']) {
    assert.ok(ids.includes(id), `missing source ${id}`);
  }
  assert.strictEqual(p.capabilities.length, 14);
  assert.ok(p.capabilities.some((c) => c.metric === 'allocation-sites'));
  for (const s of p.sources) assert.ok(s.reason.length > 0);
  assert.ok(p.nodes >= 1);
});

test('topology() returns the manifest machine object', async () => {
  const m = await addon.topology();
  assert.strictEqual(m.source, 'sysfs');
  assert.ok(m.nodes.length >= 1);
  assert.ok('memoryBandwidthGBps' in m.nodes[0]);
  assert.strictEqual(m.distances.length, m.nodes.length);
});

test('record() launches a command and writes a trace', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'numascope-node-'));
  const out = path.join(dir, 'sh.numascope');
  const r = await addon.record({ command: ['sh', '-c', 'exit 0'], output: out, durationMs: 10000 });
  assert.strictEqual(r.stopReason, 'process-exit');
  assert.strictEqual(r.exitCode, 0);
  assert.strictEqual(r.leftRunning, false);
  assert.ok(fs.statSync(out).size > 0);
  assert.ok(fs.readFileSync(out).subarray(0, 2).toString() === 'PK');
  fs.rmSync(dir, { recursive: true, force: true });
});

test('record({ allocSites: false }) records no allocation sites, and the trace says why', async () => {
  const { unzipSync } = require('fflate');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'numascope-node-'));
  const capability = async (extra) => {
    const out = path.join(dir, `sites-${Object.keys(extra).length}.numascope`);
    await addon.record({ command: ['sh', '-c', 'exit 0'], output: out, durationMs: 10000, ...extra });
    const manifest = JSON.parse(Buffer.from(unzipSync(fs.readFileSync(out))['manifest.json']).toString('utf8'));
    return manifest.capture.capabilities.find((c) => c.metric === 'allocation-sites');
  };
  const off = await capability({ allocSites: false });
  assert.strictEqual(off.status, 'unavailable');
  assert.match(off.reason, /switched off/);
  // By default the shim is preloaded (or, where it cannot be found, the reason says that instead).
  const on = await capability({});
  assert.doesNotMatch(on.reason, /switched off/);
  assert.throws(() => addon.record({ command: ['true'], output: '/tmp/x.numascope', allocSites: 'no' }), /allocSites|boolean/i);
  fs.rmSync(dir, { recursive: true, force: true });
});

test('record() rejects bad options', () => {
  assert.throws(() => addon.record({ output: '/tmp/x.numascope' }), /nothing to record: give pid or command/);
  assert.throws(() => addon.record({ pid: 1, command: ['true'], output: '/tmp/x.numascope' }), /give either pid or command, not both/);
  assert.throws(() => addon.record({ command: ['true'], output: '/tmp/x.numascope', faultPeriod: 1, faultRateHz: 1000 }), /faultPeriod or faultRateHz, not both/);
  assert.throws(() => addon.record({ command: ['true'], output: '/tmp/x.numascope', faultPeriod: 0 }), /faultPeriod must be an integer from 1/);
  assert.throws(() => addon.record({ command: ['true'], output: '/tmp/x.numascope', faultRateHz: 10 }), /faultRateHz must be an integer from 100/);
  assert.throws(() => addon.record({ command: ['true'], output: '/tmp/x.numascope', faultEvent: 'pmu' }), /fault event "pmu": expected auto, software or tracepoint/);
  assert.throws(() => addon.record({ command: ['true'], output: '/tmp/x.numascope', numaBalancing: 'off' }), /numaBalancing: "off": expected "leave" or "on"/);
});

test('recordLimits() is the table record() checks options against', () => {
  const l = addon.recordLimits();
  assert.strictEqual(l.durationMaxS, 2592000);
  assert.deepStrictEqual(l.intervalMs, { min: 1, max: 60000, default: 100 });
  assert.deepStrictEqual(l.faultPeriod, { min: 1, max: 1000000, default: null });
  assert.deepStrictEqual(l.faultRateHz, { min: 100, max: 1000000, default: 10000 });
  assert.deepStrictEqual(l.windowMs, { min: 10, max: 60000, default: 250 });
  assert.deepStrictEqual(l.faultEvents, ['auto', 'software', 'tracepoint']);
  const opts = { command: ['true'], output: '/tmp/x.numascope' };
  for (const [field, limit] of [['intervalMs', l.intervalMs], ['faultRateHz', l.faultRateHz], ['windowMs', l.windowMs]]) {
    const want = new RegExp(`record: ${field} must be an integer from ${limit.min} to ${limit.max}$`);
    assert.throws(() => addon.record({ ...opts, [field]: limit.max + 1 }), want);
    assert.throws(() => addon.record({ ...opts, [field]: limit.min - 1 }), want);
  }
  const overMs = (l.durationMaxS + 1) * 1000;
  assert.throws(() => addon.record({ ...opts, durationMs: overMs }), /durationMs must be a number of milliseconds > 0 and <= 2592000000/);
  assert.throws(() => addon.record({ ...opts, durationMs: 0 }), /durationMs must be/);
});

/** The state letter of /proc/PID/stat (R, S, T, Z…); null once the pid is gone. */
function procState(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return null;
  }
}

async function goneWithin(pid, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (procState(pid) === null) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}

test('stopRecordings() stops a running record; the command is left running, then reaped when it exits', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'numascope-node-'));
  const out = path.join(dir, 'sleep.numascope');
  const pending = addon.record({ command: ['sleep', '30'], output: out });
  await new Promise((r) => setTimeout(r, 500));
  assert.strictEqual(addon.stopRecordings(), 1);
  const r = await pending;
  assert.strictEqual(r.stopReason, 'signal');
  assert.strictEqual(r.leftRunning, true);
  assert.ok(['S', 'R'].includes(procState(r.pid)), `running, not stopped: state ${procState(r.pid)}`);
  assert.ok(fs.existsSync(out));
  // It exits later: the binding reaps it (no zombie left in this Node process).
  process.kill(r.pid, 'SIGTERM');
  assert.ok(await goneWithin(r.pid, 5000), `pid ${r.pid} not reaped: state ${procState(r.pid)}`);
  fs.rmSync(dir, { recursive: true, force: true });
});

test('record({ killOnStop: true }) terminates the command at the stop', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'numascope-node-'));
  const out = path.join(dir, 'kill.numascope');
  const r = await addon.record({ command: ['sleep', '30'], output: out, durationMs: 400, killOnStop: true });
  assert.strictEqual(r.stopReason, 'duration');
  assert.strictEqual(r.leftRunning, false);
  assert.strictEqual(procState(r.pid), null);
  fs.rmSync(dir, { recursive: true, force: true });
});
