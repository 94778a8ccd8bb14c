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
import { fitServiceScaleNs, trafficModel } from '../src/machine/traffic.js';

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

describe('loaded-latency fit (rule LQ2)', () => {
  const C = 20e9;
  const curve = (S: number, unloaded: number, us: number[], noise: number[] = []) =>
    us.map((u, i) => ({ deliveredBytesPerS: u * C, latencyNs: (unloaded + (S * u) / (1 - u)) * (1 + (noise[i] ?? 0)) }));

  it('recovers the service scale of points on the curve, exactly and with ±3 % noise', () => {
    expect(fitServiceScaleNs(curve(150, 100, [0, 0.2, 0.5, 0.8]), C, 100)!.scaleNs).toBeCloseTo(150, 6);
    const noisy = fitServiceScaleNs(curve(150, 100, [0.1, 0.3, 0.6, 0.85], [0.03, -0.03, 0.02, -0.02]), C, 100)!;
    expect(noisy.points).toBe(4);
    expect(Math.abs(noisy.scaleNs - 150) / 150).toBeLessThan(0.05);
  });

  it('clamps utilisation above 0.95 and refuses what is no fit: no loaded point, latency falling with load, bad capacity', () => {
    // A read-only load delivering more than the triad capacity is taken at u = 0.95, not past the pole.
    expect(fitServiceScaleNs([{ deliveredBytesPerS: 1.5 * C, latencyNs: 100 + 150 * 19 }], C, 100)!.scaleNs).toBeCloseTo(150, 6);
    expect(fitServiceScaleNs([{ deliveredBytesPerS: 0, latencyNs: 100 }], C, 100)).toBeNull();
    expect(fitServiceScaleNs([{ deliveredBytesPerS: 0.5 * C, latencyNs: 80 }], C, 100)).toBeNull();
    expect(fitServiceScaleNs(curve(150, 100, [0.5]), 0, 100)).toBeNull();
  });

  it('the traffic model of a calibrated machine uses the fitted scale and says so; without curves the idle rule (LQ0)', () => {
    // The fixture's real quick run: an unloaded point and one point with one load thread.
    const cal = raw.calibration as unknown as { loadedLatency: Array<{ points: Array<{ deliveredGBps: number; latencyNs: number }> }> };
    const pts = cal.loadedLatency[0]!.points;
    const u = pts[1]!.deliveredGBps / raw.calibration.sustainedGBps[0]!;
    const expected = (pts[1]!.latencyNs - pts[0]!.latencyNs) / (u / (1 - u));
    const t = trafficModel(machineModel(machineFromJson(text)));
    expect(t.mcServiceNs[0]).toBeCloseTo(expected, 6);
    expect(t.mcServiceSource).toMatch(/^measured:numascope-bench .*rule LQ2.*node 0 \d+ ns from 1 points/);
    const noCurves = machineFromJson(JSON.stringify({ ...raw, calibration: { ...raw.calibration, loadedLatency: [] } }));
    const plain = trafficModel(machineModel(noCurves));
    expect(plain.mcServiceSource).toMatch(/^estimated:LQ0/);
    expect(plain.mcServiceNs[0]).toBeCloseTo(machineModel(noCurves).idleLatencyNs.value[0]!, 6);
  });

  it('a hostile calibration cannot make the model allocate without bound: curves and points are capped', () => {
    const many = Array.from({ length: 2000 }, () => ({ memoryNode: 0, points: Array.from({ length: 100 }, () => ({ deliveredGBps: 1, latencyNs: 500 })) }));
    const m = machineModel(machineFromJson(JSON.stringify({ ...raw, calibration: { ...raw.calibration, loadedLatency: many } })));
    expect(m.loadedLatency!.value[0]!.length).toBeLessThanOrEqual(1024 * 64);
  });
});
