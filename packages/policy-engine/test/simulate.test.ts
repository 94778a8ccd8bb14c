import { describe, expect, it } from 'vitest';
import type { AccessWindow, Placement } from '../src/engine/contract.js';
import { CACHE_LINE_BYTES, MAX_UTILISATION, sampleCvPct, simulateWindow } from '../src/engine/simulate.js';
import { machineModel } from '../src/machine/model.js';
import { getPreset } from '../src/machine/presets.js';

const opteron = machineModel(getPreset('amd-opteron-8385-4p'));
const WINDOW_US = 100_000;

/** One window from rows "thread page loads stores". */
function windowOf(rows: string): AccessWindow {
  const parsed = rows.trim().split('\n').map((l) => l.trim().split(/\s+/).map(Number));
  return {
    index: 0,
    startUs: 0,
    endUs: WINDOW_US,
    sampleCount: parsed.length,
    thread: Int32Array.from(parsed, (r) => r[0]!),
    page: Int32Array.from(parsed, (r) => r[1]!),
    loads: Float64Array.from(parsed, (r) => r[2]!),
    stores: Float64Array.from(parsed, (r) => r[3]!),
  };
}

function placement(threadNode: number[], pageNode: number[], replicated: number[] = []): Placement {
  const r = new Uint8Array(pageNode.length);
  for (const p of replicated) r[p] = 1;
  return { threadNode: Int16Array.from(threadNode), pageNode: Int16Array.from(pageNode), replicated: r };
}

function scaled(w: AccessWindow, k: number): AccessWindow {
  return { ...w, loads: w.loads.map((v) => v * k), stores: w.stores.map((v) => v * k) };
}

describe('simulateWindow', () => {
  // thread 0 on node 0, thread 1 on node 3; page 0 on node 0, page 1 on node 3.
  const w = windowOf(`
    0 0 1000000 0
    0 1 2000000 500000
    1 1 1000000 0
    1 0 0       300000`);
  const p = placement([0, 3], [0, 3]);

  it('conserves bytes: MC loads sum to accesses × 64 B, links carry each remote flow once per hop', () => {
    const m = simulateWindow(opteron, w, p, WINDOW_US, 4096);
    const seconds = m.predictedUs * 1e-6;
    const totalAccesses = 1e6 + 2.5e6 + 1e6 + 3e5;
    const mcBytes = m.mcLoadBytesPerS.reduce((a, b) => a + b, 0) * seconds;
    expect(mcBytes).toBeCloseTo(totalAccesses * CACHE_LINE_BYTES, 0);
    // node 0 ↔ node 3 is 2 hops on the square: remote bytes (2.5e6 + 3e5 accesses) cross 2 links each.
    const linkBytes = m.linkLoadBytesPerS.reduce((a, b) => a + b, 0) * seconds;
    expect(linkBytes).toBeCloseTo((2.5e6 + 3e5) * CACHE_LINE_BYTES * 2, 0);
    expect(m.localAccessRatio).toBeCloseTo(2e6 / totalAccesses, 12);
    expect(m.accessesPerUs * m.predictedUs).toBeCloseTo(totalAccesses, 3);
  });

  it('serves reads of a replicated page locally and writes at the home node', () => {
    const m = simulateWindow(opteron, w, placement([0, 3], [0, 3], [1]), WINDOW_US, 4096);
    const seconds = m.predictedUs * 1e-6;
    // page 1 reads by thread 0 (2e6) now local on node 0; its 5e5 writes still go to node 3.
    // (page 0 is not replicated: thread 1's 3e5 writes to it stay on node 0.)
    expect(m.mcLoadBytesPerS[0]! * seconds).toBeCloseTo((1e6 + 2e6 + 3e5) * 64, 0);
    expect(m.mcLoadBytesPerS[3]! * seconds).toBeCloseTo((5e5 + 1e6) * 64, 0);
  });

  it('never drives a resource above 100 %: demand beyond capacity stretches the window', () => {
    const hot = scaled(w, 1000); // ~3.5 TB/s of demand on 12.8 GB/s controllers
    const m = simulateWindow(opteron, hot, p, WINDOW_US, 4096);
    for (const u of [...m.mcUtilisation, ...m.linkUtilisation]) expect(u).toBeLessThanOrEqual(MAX_UTILISATION + 1e-9);
    expect(m.predictedUs).toBeGreaterThan(10 * WINDOW_US);
  });

  it('raises latency with load', () => {
    const light = simulateWindow(opteron, scaled(w, 0.01), p, WINDOW_US, 4096);
    const medium = simulateWindow(opteron, w, p, WINDOW_US, 4096);
    const heavy = simulateWindow(opteron, scaled(w, 5), p, WINDOW_US, 4096);
    expect(light.memoryLatencyNs).toBeLessThan(medium.memoryLatencyNs);
    expect(medium.memoryLatencyNs).toBeLessThan(heavy.memoryLatencyNs);
    // Idle: mix of local (100 ns) and 2-hop (130 ns) accesses.
    expect(light.memoryLatencyNs).toBeGreaterThan(100);
    expect(light.memoryLatencyNs).toBeLessThan(131);
    expect(heavy.predictedUs).toBeGreaterThan(light.predictedUs);
  });

  it('returns the window unchanged and zero load when it has no accesses', () => {
    const m = simulateWindow(opteron, windowOf('0 0 0 0'), p, WINDOW_US, 4096);
    expect(m.predictedUs).toBe(WINDOW_US);
    expect(m.mcImbalancePct).toBe(0);
  });
});

describe('imbalance statistic', () => {
  it('is the sample standard deviation (N−1) as % of the mean, like gsl_stats_sd_m', () => {
    // mean 2.5, Σ(x−mean)² = 5, N−1 = 3 → sd 1.2910 → 51.64 %
    expect(sampleCvPct([1, 2, 3, 4])).toBeCloseTo(51.6398, 3);
    expect(sampleCvPct([4, 0, 0, 0])).toBeCloseTo(200, 9);
    expect(sampleCvPct([3, 3, 3])).toBe(0);
    expect(sampleCvPct([0, 0])).toBe(0);
  });
});
