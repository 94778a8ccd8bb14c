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
import { fitLoadedLatencyCurve, LQ_CONTENTION_SHARE, LQ_QUEUE_SCALE, MLC_REFERENCE_CURVE, trafficModel } from '../src/machine/traffic.js';

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

describe('loaded-latency fit (rule LQ2) and the reference curve (rule LQ0)', () => {
  const C = 20e9;
  const curve = (c: number, q: number, unloaded: number, us: number[], noise: number[] = []) =>
    us.map((u, i) => ({ deliveredBytesPerS: u * C, latencyNs: (unloaded + c * u + (q * u) / (1 - u)) * (1 + (noise[i] ?? 0)) }));

  it('recovers both coefficients of points on the curve, exactly and with ±3 % noise', () => {
    const exact = fitLoadedLatencyCurve(curve(40, 5, 100, [0, 0.2, 0.5, 0.8, 0.9]), C, 100)!;
    expect(exact.contentionNs).toBeCloseTo(40, 6);
    expect(exact.queueNs).toBeCloseTo(5, 6);
    const noisy = fitLoadedLatencyCurve(curve(40, 5, 100, [0.1, 0.3, 0.6, 0.85, 0.92], [0.01, -0.01, 0.01, -0.01, 0.01]), C, 100)!;
    expect(noisy.points).toBe(5);
    expect(Math.abs(noisy.contentionNs - 40) / 40).toBeLessThan(0.25);
    expect(Math.abs(noisy.queueNs - 5) / 5).toBeLessThan(0.25);
  });

  it('leaves out saturated points and refuses what is no fit: no loaded point, latency falling with load, bad capacity', () => {
    // A point at or past the capacity is the closed loop's saturation, not the open curve: left out.
    expect(fitLoadedLatencyCurve([{ deliveredBytesPerS: 1.5 * C, latencyNs: 900 }], C, 100)).toBeNull();
    // One point: the better one-coefficient fit.
    const one = fitLoadedLatencyCurve([{ deliveredBytesPerS: 0.5 * C, latencyNs: 120 }], C, 100)!;
    expect(one.contentionNs * 0.5 + one.queueNs).toBeCloseTo(20, 6);
    expect(fitLoadedLatencyCurve([{ deliveredBytesPerS: 0, latencyNs: 100 }], C, 100)).toBeNull();
    expect(fitLoadedLatencyCurve([{ deliveredBytesPerS: 0.5 * C, latencyNs: 80 }], C, 100)).toBeNull();
    expect(fitLoadedLatencyCurve(curve(40, 5, 100, [0.5]), 0, 100)).toBeNull();
  });

  it('rule LQ0 is the published MLC curve: flat past half of the peak, within 10 % of every point below saturation', () => {
    const pts = MLC_REFERENCE_CURVE.points;
    const peak = Math.max(...pts.map((p) => p[1]));
    const unloaded = pts[0]![0];
    const q = (LQ_QUEUE_SCALE * 64e9) / (peak * 1e6);
    for (const [lat, mbps] of pts) {
      const u = mbps / peak;
      if (u >= 0.98) continue;
      const model = unloaded + LQ_CONTENTION_SHARE * unloaded * u + (q * u) / (1 - u);
      expect(Math.abs(model / lat - 1), `at ${mbps} MB/s`).toBeLessThan(0.1);
    }
    // at half the peak the latency is within 30 % of idle, not doubled (the old d(u) = idle · u/(1 − u))
    expect(LQ_CONTENTION_SHARE * 0.5 + (q / unloaded) * 1).toBeLessThan(0.3);
  });

  it('the traffic model of a calibrated machine uses the fitted curve and says so; without curves rule LQ0', () => {
    // The fixture's real quick run: an unloaded point and one point with one load thread.
    const cal = raw.calibration as unknown as { loadedLatency: Array<{ points: Array<{ deliveredGBps: number; latencyNs: number }> }> };
    const pts = cal.loadedLatency[0]!.points;
    const u = pts[1]!.deliveredGBps / raw.calibration.sustainedGBps[0]!;
    const t = trafficModel(machineModel(machineFromJson(text)));
    // one loaded point: the curve passes through it
    expect(pts[0]!.latencyNs + t.mcContentionNs[0]! * u + (t.mcQueueNs[0]! * u) / (1 - u)).toBeCloseTo(pts[1]!.latencyNs, 6);
    expect(t.mcCurveSource).toMatch(/^measured:numascope-bench .*rule LQ2.*node 0 c [\d.]+ ns, q [\d.]+ ns from 1 points/);
    const noCurves = machineFromJson(JSON.stringify({ ...raw, calibration: { ...raw.calibration, loadedLatency: [] } }));
    const plain = trafficModel(machineModel(noCurves));
    expect(plain.mcCurveSource).toMatch(/^estimated:LQ0/);
    expect(plain.mcContentionNs[0]).toBeCloseTo(LQ_CONTENTION_SHARE * machineModel(noCurves).idleLatencyNs.value[0]!, 6);
  });

  it('a hostile calibration cannot make the model allocate without bound: curves and points are capped', () => {
    const many = Array.from({ length: 2000 }, () => ({ memoryNode: 0, points: Array.from({ length: 100 }, () => ({ deliveredGBps: 1, latencyNs: 500 })) }));
    const m = machineModel(machineFromJson(JSON.stringify({ ...raw, calibration: { ...raw.calibration, loadedLatency: many } })));
    expect(m.loadedLatency!.value[0]!.length).toBeLessThanOrEqual(1024 * 64);
  });
});
