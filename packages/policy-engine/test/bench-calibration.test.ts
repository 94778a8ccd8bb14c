/**
 * A `numascope bench --json` machine (test/fixtures/bench-quick-1node.json: a real quick run on
 * the one-node development VM, small arrays) through the engine: the loader keeps the calibration,
 * the machine model and the traffic model use the measured numbers (rule S2), and a trace's
 * embedded calibration is preferred to its sysfs machine.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MachineLoadError, machineFromJson, recordedMachine } from '../src/machine/loaders.js';
import { machineModel } from '../src/machine/model.js';
import { trafficModel } from '../src/machine/traffic.js';

const text = readFileSync(resolve(__dirname, 'fixtures/bench-quick-1node.json'), 'utf8');
const raw = JSON.parse(text) as Record<string, unknown> & { calibration: { sustainedGBps: number[] } };

describe('numascope bench output in the engine', () => {
  it('loads through machineFromJson with its calibration and measured provenance', () => {
    const m = machineFromJson(text, 'bench.json');
    expect(m.calibration?.tool).toBe('numascope-bench');
    expect(m.calibration?.sustainedGBps).toEqual(raw.calibration.sustainedGBps);
    expect(m.provenance['memoryBandwidthGBps']).toMatch(/^measured:numascope-bench /);
    expect(m.latenciesNs![0]![0]).toBeGreaterThan(0);
  });

  it('the traffic model uses the measured sustained capacity and idle latency (rule S2), not rule S1', () => {
    const model = machineModel(machineFromJson(text));
    const t = trafficModel(model);
    expect(t.mcCapacity.value[0]).toBeCloseTo(raw.calibration.sustainedGBps[0]! * 1e9, 0);
    expect(t.mcCapacity.source).toMatch(/^measured:numascope-bench .*rule S2/);
    expect(model.idleLatencyNs.source).toMatch(/^measured:numascope-bench /);
    // The same machine without its calibration falls back to the estimate.
    const plain = machineFromJson(JSON.stringify({ ...raw, calibration: undefined }));
    expect(trafficModel(machineModel(plain)).mcCapacity.source).toMatch(/^estimated:S1/);
  });

  it('rejects a calibration that does not match the machine', () => {
    const bad = { ...raw, calibration: { ...raw.calibration, sustainedGBps: [1, 2] } };
    expect(() => machineFromJson(JSON.stringify(bad), 'bad.json')).toThrow(MachineLoadError);
    const negative = { ...raw, calibration: { ...raw.calibration, sustainedGBps: [-3] } };
    expect(() => machineFromJson(JSON.stringify(negative), 'neg.json')).toThrow(/positive numbers or null/);
  });

  it('a trace prefers its embedded calibration when it describes the same nodes', () => {
    const sysfs = machineFromJson(JSON.stringify({ ...raw, calibration: undefined, source: 'sysfs' }));
    const used = recordedMachine({ machine: sysfs, calibration: machineFromJson(text) });
    expect(used.machine.calibration).toBeDefined();
    expect(used.note).toMatch(/calibrated by numascope bench/);
    expect(recordedMachine({ machine: sysfs }).machine).toBe(sysfs);
    const other = { ...sysfs, nodes: [{ ...sysfs.nodes[0]!, id: 5 }] };
    const skipped = recordedMachine({ machine: other, calibration: machineFromJson(text) });
    expect(skipped.machine).toBe(other);
    expect(skipped.note).toMatch(/differ/);
  });
});
