/**
 * Replaying part of a recording (AnalyzeOptions.timeRangeUs / ReplayInputOptions.timeRangeUs):
 * only the windows that overlap the range, renumbered from 0, threads starting where they were.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { windowPredictedUs, analyze } from '../src/analyze/analyze.js';
import { isEngineError } from '../src/model/errors.js';
import { buildReplayInput } from '../src/analyze/replay-input.js';
import { machineModel } from '../src/machine/model.js';
import { getPreset } from '../src/machine/presets.js';
import { readTrace } from '../src/trace/reader.js';
import { textTrace } from './helpers/text-trace.js';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

// 4 windows of 1 ms. Thread 1 moves from node 1 to node 2 at 1.5 ms.
const trace = textTrace({
  machine: 'amd-opteron-8385-4p',
  threads: `thread node
              0     0
              1     1`,
  pages: `page node first_touch_thread
            0    0    0
            1    1    1`,
  placements: `time_us thread node
                 1500      1     2`,
  samples: `time_us thread page op    weight
               100      0     0   load  10
               200      1     1   load  20
              1100      0     1   load  30
              2100      1     0   store 40
              2200      1     1   load  50
              3900      0     0   load  60`,
  durationUs: 4000,
});

function expectEngineError(f: () => unknown, code: string, message: RegExp) {
  try {
    f();
  } catch (e) {
    expect(isEngineError(e) && e.code).toBe(code);
    expect((e as Error).message).toMatch(message);
    return;
  }
  throw new Error('expected an EngineError');
}

describe('time range', () => {
  it('keeps the windows that overlap the range, renumbered from 0, with their own times and samples', () => {
    const whole = buildReplayInput(trace, { windowMs: 1 });
    expect(whole.windows.length).toBe(4);
    expect(whole.timeRange).toBeUndefined();
    // 1.5–2.5 ms overlaps windows 1 and 2.
    const input = buildReplayInput(trace, { windowMs: 1, timeRangeUs: { startUs: 1500, endUs: 2500 } });
    expect(input.windows.length).toBe(2);
    expect(input.timeRange).toEqual({ requestedStartUs: 1500, requestedEndUs: 2500, startUs: 1000, endUs: 3000, firstWindow: 1, totalWindows: 4 });
    const [a, b] = [...input.windows];
    expect([a!.index, a!.startUs, a!.endUs, a!.sampleCount]).toEqual([0, 1000, 2000, 1]);
    expect(Array.from(a!.loads)).toEqual([30]);
    expect([b!.index, b!.startUs, b!.endUs, b!.sampleCount]).toEqual([1, 2000, 3000, 2]);
    expect(Array.from(b!.page)).toEqual([0, 1]);
    expect(Array.from(b!.stores)).toEqual([40, 0]);
    expect(input.windows.info(1)).toEqual({ index: 1, startUs: 2000, endUs: 3000, sampleCount: 2 });
    expect(() => input.windows.get(2)).toThrow(RangeError);
    // Threads start where they were when the first kept window starts (1 ms): thread 1 still on node 1; it is
    // observed on node 2 from 1.5 ms, so the observed placement of both kept windows has it there.
    expect(Array.from(input.initial.threadNode)).toEqual([0, 1]);
    expect(input.observedThreadNode!.map((n) => Array.from(n))).toEqual([
      [0, 2],
      [0, 2],
    ]);
    expect(input.notes!.join('\n')).toMatch(/time range 1\.5 ms–2\.5 ms: replaying windows 1–2 of 0–3 \(1 ms–3 ms\)/);
  });

  it('starts threads where they were last observed before the first kept window', () => {
    const input = buildReplayInput(trace, { windowMs: 1, timeRangeUs: { startUs: 2000, endUs: 4000 } });
    expect(input.timeRange!.firstWindow).toBe(2);
    expect(Array.from(input.initial.threadNode)).toEqual([0, 2]);
  });

  it('a range covering the whole trace replays every window, and says so', () => {
    const input = buildReplayInput(trace, { windowMs: 1, timeRangeUs: { startUs: 0, endUs: 10_000 } });
    expect(input.windows.length).toBe(4);
    expect(input.timeRange!.firstWindow).toBe(0);
    expect(input.notes!.join('\n')).toMatch(/every window overlaps it/);
  });

  it('refuses a range that overlaps no window, or is empty, naming it', () => {
    expectEngineError(() => buildReplayInput(trace, { windowMs: 1, timeRangeUs: { startUs: 5000, endUs: 6000 } }), 'bad-option', /5 ms–6 ms overlaps no window of the trace \(it covers 0–4 ms\)/);
    expectEngineError(() => buildReplayInput(trace, { windowMs: 1, timeRangeUs: { startUs: 2000, endUs: 2000 } }), 'bad-option', /0 ≤ start < end/);
    expectEngineError(() => buildReplayInput(trace, { windowMs: 1, timeRangeUs: { startUs: -1, endUs: 2000 } }), 'bad-option', /0 ≤ start < end/);
  });

  it('re-targets the range (the cut happens before the mapping)', () => {
    const genoa = machineModel(getPreset('amd-genoa-2s-nps4'));
    const input = buildReplayInput(trace, { windowMs: 1, machine: genoa, timeRangeUs: { startUs: 2000, endUs: 3000 } });
    expect(input.machine.name).toBe(genoa.name);
    expect(input.windows.length).toBe(1);
    expect(input.timeRange!.firstWindow).toBe(2);
  });

  it('analyze: per-window metrics of the range equal those windows of the whole replay, and progress counts the kept windows', () => {
    const hotspot = readTrace(new Uint8Array(readFileSync(join(REPO_ROOT, 'sample-traces', 'streamcluster-hotspot.numascope'))));
    const policies = ['first-touch', 'interleave'];
    const whole = analyze(hotspot, { windowMs: 100, policies });
    expect(whole.timeRange).toBeNull();
    const progress: Array<[number, number]> = [];
    const part = analyze(hotspot, { windowMs: 100, policies, timeRangeUs: { startUs: 450_000, endUs: 1_020_000 }, onProgress: (d, t) => progress.push([d, t]) });
    // 450–1020 ms overlaps windows 4..10 (400–1100 ms).
    expect(part.timeRange).toMatchObject({ startUs: 400_000, endUs: 1_100_000, firstWindow: 4, totalWindows: whole.windowCount });
    expect(part.windowCount).toBe(7);
    expect(progress).toEqual(Array.from({ length: 7 }, (_, i) => [i + 1, 7]));
    for (const id of policies) {
      const w = whole.policies.find((p) => p.policy === id)!.replay.windows.slice(4, 11);
      const r = part.policies.find((p) => p.policy === id)!;
      expect(r.replay.windows.length).toBe(7);
      r.replay.windows.forEach((m, i) => {
        expect(m.predictedUs).toBeCloseTo(w[i]!.predictedUs, 9);
        expect(m.mcImbalancePct).toBeCloseTo(w[i]!.mcImbalancePct, 9);
      });
      // The overall figures are those of the range alone: its windows' predicted times, anchored
      // on the real window lengths as for the whole trace.
      const anchored = windowPredictedUs(whole, whole.policies.find((p) => p.policy === id)!.replay.windows).slice(4, 11);
      expect(windowPredictedUs(part, r.replay.windows).map((x) => +x.toFixed(3))).toEqual(anchored.map((x) => +x.toFixed(3)));
      expect(r.predictedUs).toBeCloseTo(anchored.reduce((s, x) => s + x, 0), 6);
      expect(r.accesses).toBeLessThan(whole.policies.find((p) => p.policy === id)!.accesses);
    }
  });
});
