// node --test: bench() through the addon: progress messages, the calibrated machine, a stop
// (AbortSignal, startBench().stop()) that resolves with what was measured, option checks.
// Small arrays and save: false, so that each run takes seconds and nothing is stored.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const os = require('node:os');
const path = require('node:path');
const addon = require('..');

// Whatever happens, calibrations go to a cache directory of this test's own, not the user's.
process.env.XDG_CACHE_HOME = path.join(os.tmpdir(), `numascope-bench-node-test-${process.pid}`);

const SMALL = { quick: true, arrayBytes: 1 << 20, chaseBytes: 1 << 20, save: false };

test('bench() reports progress and resolves to a calibrated machine', async () => {
  const progress = [];
  const out = await addon.bench({ ...SMALL, onProgress: (p) => progress.push(p) });
  const cal = out.machine.calibration;
  assert.strictEqual(cal.tool, 'numascope-bench');
  assert.strictEqual(cal.partial, false);
  assert.strictEqual(cal.stepsDone, cal.stepsPlanned);
  assert.ok(cal.bandwidthGBps.triad[0][0].value > 0, JSON.stringify(cal.bandwidthGBps.triad));
  assert.ok(cal.latencyNs[0][0].value > 0);
  assert.match(out.machine.provenance.memoryBandwidthGBps, /^measured:numascope-bench /);
  assert.strictEqual(out.storedAs, null);
  assert.match(out.storeNote, /save was false/);
  // Every step announced once, in order, with elapsed time; an estimate from the second on.
  assert.deepStrictEqual(progress.map((p) => p.step), Array.from({ length: cal.stepsPlanned }, (_, i) => i + 1));
  assert.ok(progress.every((p) => p.steps === cal.stepsPlanned && typeof p.what === 'string' && p.elapsedS >= 0));
  assert.strictEqual(progress[0].remainingS, null);
  if (progress.length > 1) assert.ok(progress[1].remainingS >= 0);
  if (out.machine.nodes.length === 1) assert.ok(cal.notes.some((n) => /one NUMA node/.test(n) && /no remote/.test(n)), cal.notes.join('\n'));
});

test('an aborted bench() resolves with what was measured, marked partial', async () => {
  const ac = new AbortController();
  const out = await addon.bench({
    ...SMALL,
    save: true,
    signal: ac.signal,
    onProgress: (p) => {
      if (p.step === 2) ac.abort();
    },
  });
  const cal = out.machine.calibration;
  assert.strictEqual(cal.partial, true);
  assert.match(cal.stoppedBy, /interrupted/);
  assert.ok(cal.stepsDone >= 1 && cal.stepsDone < cal.stepsPlanned, `${cal.stepsDone} of ${cal.stepsPlanned}`);
  assert.ok(cal.bandwidthGBps.triad[0][0].value > 0, 'the first pair was measured');
  assert.strictEqual(out.storedAs, null, 'a partial run is never stored');
  assert.match(out.storeNote, /partial/);
});

test('startBench().stop() before the first step gives an empty partial result', async () => {
  const h = addon.startBench(SMALL);
  h.stop();
  const out = await h.result;
  assert.strictEqual(out.machine.calibration.partial, true);
});

test('bench() refuses bad options with the field named', async () => {
  await assert.rejects(() => addon.bench({ maxSeconds: -1 }), /maxSeconds/);
  await assert.rejects(() => addon.bench({ chaseBytes: 100 }), /chaseBytes/);
  await assert.rejects(() => addon.bench({ arrayBytes: 1.5 }), /arrayBytes/);
  await assert.rejects(() => addon.bench({ onProgress: 3 }), /onProgress must be a function/);
  assert.throws(() => addon.startBench({ quick: 'yes' }), /quick/);
});
