import { describe, expect, it } from 'vitest';
import type { AccessWindow, Placement } from '../src/model/contract.js';
import { CACHE_LINE_BYTES, sampleCvPct, simulateWindow } from '../src/engine/simulate.js';
import { PROBE_BYTES, PROBE_RESPONSE_BYTES, REQUEST_BYTES, RESPONSE_BYTES, trafficModel } from '../src/machine/traffic.js';
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

  it('conserves bytes: a load moves one line through its controller, a store two (read for ownership + write-back)', () => {
    const m = simulateWindow(opteron, w, p, WINDOW_US, 4096);
    const seconds = m.predictedUs * 1e-6;
    const loads = 1e6 + 2e6 + 1e6;
    const stores = 5e5 + 3e5;
    const mcBytes = m.mcLoadBytesPerS.reduce((a, b) => a + b, 0) * seconds;
    expect(mcBytes).toBeCloseTo((loads + 2 * stores) * CACHE_LINE_BYTES, 0);
    expect(m.localAccessRatio).toBeCloseTo(2e6 / (loads + stores), 12);
    expect(m.accessesPerUs * m.predictedUs).toBeCloseTo(loads + stores, 3);
  });

  it('carries requests, data and broadcast probes on the links (Opteron 8385: no probe filter)', () => {
    const t = trafficModel(opteron);
    expect(t.coherence.value).toBe('broadcast');
    // One remote load, node 0 reading node 3 (2 hops, shared over the two 2-hop paths).
    const one = windowOf('0 1 1 0');
    const m = simulateWindow(opteron, one, p, WINDOW_US, 4096);
    const linkBytes = m.linkLoadBytesPerS.reduce((a, b) => a + b, 0) * m.predictedUs * 1e-6;
    // request 0→3 and data 3→0, 2 hops each; probes from 3 to nodes 0, 1, 2 (2, 1, 1 hops);
    // responses from nodes 1, 2, 3 to node 0 (1, 1, 2 hops).
    const expected = 2 * REQUEST_BYTES + 2 * (RESPONSE_BYTES + CACHE_LINE_BYTES) + 4 * PROBE_BYTES + 4 * PROBE_RESPONSE_BYTES;
    expect(linkBytes).toBeCloseTo(expected, 6);
    // The two equal-cost paths 3→1→0 and 3→2→0 share the data: both links into node 0 carry half.
    const into0 = opteron.links.map((l, k) => (l.to === 0 ? m.linkLoadBytesPerS[k]! : 0)).filter((x) => x > 0);
    expect(into0).toHaveLength(2);
    expect(into0[0]!).toBeCloseTo(into0[1]!, 6);
  });

  it('serves reads of a replicated page locally and writes at the home node', () => {
    const m = simulateWindow(opteron, w, placement([0, 3], [0, 3], [1]), WINDOW_US, 4096);
    const seconds = m.predictedUs * 1e-6;
    // page 1 reads by thread 0 (2e6) now local on node 0; its 5e5 writes still go to node 3.
    // (page 0 is not replicated: thread 1's 3e5 writes to it stay on node 0.)
    // (a store moves two lines: read for ownership and write-back)
    expect(m.mcLoadBytesPerS[0]! * seconds).toBeCloseTo((1e6 + 2e6 + 2 * 3e5) * 64, 0);
    expect(m.mcLoadBytesPerS[3]! * seconds).toBeCloseTo((2 * 5e5 + 1e6) * 64, 0);
  });

  it('never drives a resource to its sustained capacity: demand beyond it stretches the window, latency uncapped', () => {
    const hot = scaled(w, 1000); // ~3.5 TB/s of demand on controllers that sustain ~5.8 GB/s
    const m = simulateWindow(opteron, hot, p, WINDOW_US, 4096);
    for (const u of [...m.mcUtilisation, ...m.linkUtilisation]) expect(u).toBeLessThan(1);
    expect(Math.max(...m.mcUtilisation)).toBeGreaterThan(0.9);
    expect(m.predictedUs).toBeGreaterThan(10 * WINDOW_US);
    // far past the old 190 ns cap per resource
    expect(m.memoryLatencyNs).toBeGreaterThan(1000);
  });

  it('the fixed point holds: T = W((1 − s) + s·L/L_local) for the stall share the window carries', () => {
    for (const share of [0.1, 0.5, 0.9]) {
      const m = simulateWindow(opteron, { ...w, stallShare: share }, p, WINDOW_US, 4096);
      // accesses-weighted idle local latency: both threads' nodes have 100 ns local. L is the mean
      // over every access: the reported latency is the loads' (idle 115 ns: 1M + 1M local at 100,
      // 2M two hops at 130), every access's idle 117.5 ns (the 0.8M stores go two hops).
      const loadIdle = (1e6 * 100 + 2e6 * 130 + 1e6 * 100) / 4e6;
      const allIdle = (4e6 * loadIdle + 8e5 * 130) / 4.8e6;
      expect(m.idleLatencyNs).toBeCloseTo(loadIdle, 9);
      const lAll = m.memoryLatencyNs - loadIdle + allIdle;
      expect(m.predictedUs / (WINDOW_US * (1 - share + (share * lAll) / 100))).toBeCloseTo(1, 6);
    }
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
