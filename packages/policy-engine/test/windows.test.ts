import { describe, expect, it } from 'vitest';
import { isEngineError } from '../src/model/errors.js';
import { retarget, retargetNodeMap } from '../src/engine/retarget.js';
import { simulateWindow } from '../src/engine/simulate.js';
import { buildReplayInput } from '../src/analyze/replay-input.js';
import { machineModel } from '../src/machine/model.js';
import { getPreset } from '../src/machine/presets.js';
import { getPolicy } from '../src/policies/index.js';
import { textTrace } from './helpers/text-trace.js';

const twoThreads = `thread node
                     0     0
                     1     1`;

describe('buildReplayInput', () => {
  const trace = textTrace({
    machine: 'amd-opteron-8385-4p',
    threads: twoThreads,
    pages: `page node first_touch_thread
              0    0    0
              1    1    1
              2    -1   -1`,
    samples: `time_us thread page op    weight data_source
                 1      1     1   load  10     local-dram
                 2      0     1   load  5      remote-dram
                 3      1     1   store 7      local-dram
                 4      0     0   load  3      l1
                 5      1     0   load  0      remote-dram
                 9      0     2   fault 1      unknown
              1500      1     2   load  2      remote-dram
              1600      0     1   load  4      remote-dram`,
    durationUs: 2000,
  });
  const input = buildReplayInput(trace, { windowMs: 1 });

  it('aggregates (thread, page) per window, sorted by page then thread, scaled by weight', () => {
    expect(input.windows.length).toBe(2);
    const [w0, w1] = input.windows;
    // window 0: (page 0, thread 1) 1 load [weight 0 read as 1]; (page 1, thread 0) 5 loads; (page 1, thread 1) 10 loads + 7 stores.
    expect(Array.from(w0!.page)).toEqual([0, 1, 1]);
    expect(Array.from(w0!.thread)).toEqual([1, 0, 1]);
    expect(Array.from(w0!.loads)).toEqual([1, 5, 10]);
    expect(Array.from(w0!.stores)).toEqual([0, 0, 7]);
    expect(w0!.sampleCount).toBe(4); // the l1 hit and the fault row are not accesses
    expect(Array.from(w1!.page)).toEqual([1, 2]);
    expect(Array.from(w1!.thread)).toEqual([0, 1]);
    expect(w1!.startUs).toBe(1000);
  });

  it('takes the initial placement from the trace and first touch from faults', () => {
    expect(Array.from(input.initial.threadNode)).toEqual([0, 1]);
    // page 2 has no node: its first-touch fault was by thread 0, so it goes to thread 0's node.
    expect(Array.from(input.initial.pageNode)).toEqual([0, 1, 0]);
    expect(Array.from(input.firstTouchThread)).toEqual([0, 1, 0]);
    expect(input.notes!.join('\n')).toMatch(/1 load\/store samples that hit a cache/);
    expect(input.counters).toBeNull();
  });

  it('refuses a trace with only page-fault samples, saying access data is unavailable', () => {
    const faultsOnly = textTrace({
      machine: 'amd-opteron-8385-4p',
      threads: twoThreads,
      pages: `page node first_touch_thread
                0    0    0`,
      samples: `time_us thread page op
                  1      0      0    fault`,
    });
    let error: unknown;
    try {
      buildReplayInput(faultsOnly, { windowMs: 1 });
    } catch (e) {
      error = e;
    }
    expect(isEngineError(error) && error.code).toBe('no-access-data');
    expect(String(error)).toMatch(/1 page-fault rows.*0 load\/store samples.*IBS or PEBS/s);
  });

  it('rejects a window length that is not positive', () => {
    expect(() => buildReplayInput(trace, { windowMs: 0 })).toThrow(/window length must be a positive number/);
  });
});

describe('retarget', () => {
  const spr = machineModel(getPreset('intel-spr-2s'));
  const genoa4 = machineModel(getPreset('amd-genoa-2s-nps4'));
  const cxl = machineModel(getPreset('cxl-expander'));

  it('maps node indices by the documented rules, never onto a node without cpus', () => {
    expect(Array.from(retargetNodeMap(4, spr, 'modulo'))).toEqual([0, 1, 0, 1]);
    expect(Array.from(retargetNodeMap(4, spr, 'proportional'))).toEqual([0, 0, 1, 1]);
    expect(Array.from(retargetNodeMap(2, genoa4, 'proportional'))).toEqual([0, 4]);
    expect(Array.from(retargetNodeMap(3, cxl, 'modulo'))).toEqual([0, 1, 0]);
  });

  it('keeps the accesses and locality of a partitioned recording on the new machine', () => {
    const trace = textTrace({
      machine: 'amd-opteron-8385-4p',
      threads: `thread node
                  0     0
                  1     1
                  2     2
                  3     3`,
      pages: `page node first_touch_thread
                0    0    0
                1    1    1
                2    2    2
                3    3    3`,
      samples: `time_us thread page op weight
                  1       0      0    load 100
                  1       1      1    load 100
                  1       2      2    load 100
                  1       3      3    load 100`,
    });
    const input = buildReplayInput(trace, { windowMs: 1 });
    const moved = retarget(input, genoa4, 'proportional');
    expect(moved.machine.name).toBe('amd-genoa-2s-nps4');
    expect(Array.from(moved.initial.threadNode)).toEqual([0, 2, 4, 6]);
    expect(Array.from(moved.initial.pageNode)).toEqual([0, 2, 4, 6]);
    expect(moved.windows).toBe(input.windows);
    const replay = getPolicy('first-touch').replay(moved, { seed: 1, simulate: simulateWindow });
    expect(replay.windows[0]!.localAccessRatio).toBe(1);
    expect(replay.windows[0]!.mcLoadBytesPerS.length).toBe(8);
    expect(moved.notes!.at(-1)).toMatch(/re-targeted from "amd-opteron-8385-4p" \(4 nodes\) onto "amd-genoa-2s-nps4" \(8 nodes\) by rule proportional/);
    // buildReplayInput re-targets by itself when given another machine
    const direct = buildReplayInput(trace, { windowMs: 1, machine: spr });
    expect(Array.from(direct.initial.pageNode)).toEqual([0, 1, 0, 1]);
  });
});
