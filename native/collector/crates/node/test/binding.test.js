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
  assert.strictEqual(p.capabilities.length, 13);
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
  assert.ok(fs.statSync(out).size > 0);
  assert.ok(fs.readFileSync(out).subarray(0, 2).toString() === 'PK');
  fs.rmSync(dir, { recursive: true, force: true });
});

test('record() rejects bad options', () => {
  assert.throws(() => addon.record({ output: '/tmp/x.numascope' }), /exactly one of/);
  assert.throws(() => addon.record({ command: ['true'], output: '/tmp/x.numascope', faultPeriod: 1, faultRateHz: 1000 }), /faultPeriod or faultRateHz, not both/);
  assert.throws(() => addon.record({ command: ['true'], output: '/tmp/x.numascope', faultPeriod: 0 }), /faultPeriod must be an integer from 1/);
  assert.throws(() => addon.record({ command: ['true'], output: '/tmp/x.numascope', faultRateHz: 10 }), /faultRateHz must be an integer from 100/);
  assert.throws(() => addon.record({ command: ['true'], output: '/tmp/x.numascope', faultEvent: 'pmu' }), /fault event "pmu": expected auto, software or tracepoint/);
});

test('stopRecordings() stops a running record', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'numascope-node-'));
  const out = path.join(dir, 'sleep.numascope');
  const pending = addon.record({ command: ['sleep', '30'], output: out });
  await new Promise((r) => setTimeout(r, 500));
  assert.strictEqual(addon.stopRecordings(), 1);
  const r = await pending;
  assert.strictEqual(r.stopReason, 'signal');
  assert.ok(fs.existsSync(out));
  fs.rmSync(dir, { recursive: true, force: true });
});
