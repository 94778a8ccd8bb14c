import { describe, expect, it } from 'vitest';
import { createCarrefourPolicy, carrefourPolicy } from '../src/policies/carrefour.js';
import { simulateWindow } from '../src/engine/simulate.js';
import { windowsOf, type PolicyReplay, type ReplayInput } from '../src/model/contract.js';
import { meanOf, replayInputFromTable } from './helpers/replay-table.js';

const OPTERON = 'amd-opteron-8385-4p';
const options = { seed: 1, simulate: simulateWindow };

/** First-touch: the initial placement kept for every window. */
function firstTouchLatencies(input: ReplayInput): number[] {
  return [...input.windows].map((w) => simulateWindow(input.machine, w, input.initial, input.windowUs, input.pageBytes).memoryLatencyNs);
}

const kinds = (r: PolicyReplay, kind: string) => r.decisions.filter((d) => d.kind === kind);

// Streamcluster-like: the master thread first-touched every page on node 0; 16 threads on 4 nodes
// all read and write all of it.
const streamcluster = (loads: number, stores: number) =>
  replayInputFromTable({
    preset: OPTERON,
    threads: 16,
    pages: 1024,
    threadNodes: '0-3:0 4-7:1 8-11:2 12-15:3',
    pageNodes: '0-1023:0',
    windowUs: 10_000,
    // Streamcluster's IPC on this machine (§1: 0.15): the module's IBS samples per access follow it.
    ipc: 0.15,
    table: `
      window | threads | pages  | loads   | stores
      0-5    | 0-15    | 0-1023 | ${loads} | ${stores}`,
  });

describe('Carrefour on amd-opteron-8385-4p', () => {
  it('turns interleaving on for a Streamcluster-like trace and predicts lower latency than first-touch', () => {
    const input = streamcluster(60, 4);
    const replay = carrefourPolicy.replay(input, options);
    const ft = firstTouchLatencies(input);
    const cf = replay.windows.map((w) => w.memoryLatencyNs);

    expect(replay.windows[0]!.mcImbalancePct).toBeCloseTo(200, 0); // one node serves everything
    const on = replay.decisions.find((d) => d.window === 0 && d.kind === 'enable' && d.explanation.startsWith('interleaving on'));
    expect(on?.explanation).toMatch(/MC imbalance 200\.0% > 35%/);
    const interleaved = kinds(replay, 'interleave').reduce((s, d) => s + d.pages!, 0);
    expect(interleaved).toBeGreaterThan(600); // ≈ 3/4 of 1024 pages leave node 0 in round 0
    // The hot controller sheds nearly all its shared pages (weight 100 − 100 = 0 for node 0), so
    // round 1 moves some back; by round 2 the imbalance is 18% and interleaving turns off. Pages
    // the module's few IBS samples saw from one node only are migrated there on the way.
    expect(replay.windows.map((w) => Math.round(w.mcImbalancePct))).toEqual([200, 35, 18, 18, 18, 18]);
    expect(replay.decisions.find((d) => d.explanation.startsWith('interleaving off'))?.window).toBe(2);
    expect(replay.decisions.find((d) => d.explanation.startsWith("the module's IBS samples"))?.explanation).toMatch(/one sample per 9829 DRAM accesses at the accurate rate \(IPC 0\.15 from the trace's counters\)/);
    // Loaded latency (docs/engine.md, "Traffic model"): node 0 near its sustained capacity under
    // first-touch, four controllers sharing the load once interleaved.
    // (rule LQ0's curve: flat well past half of the capacity, steep near it)
    expect(Math.round(ft[1]!)).toBe(179);
    expect(Math.round(cf[5]!)).toBe(134);
    expect(meanOf(cf, 1)).toBeLessThan(meanOf(ft, 1));
    // Nothing is replicated: 94% reads < 95%.
    expect(kinds(replay, 'replicate')).toHaveLength(0);
  });

  it('keeps pages local on a partitioned trace (no interleaving)', () => {
    const input = replayInputFromTable({
      preset: OPTERON,
      threads: 16,
      pages: 1024,
      threadNodes: '0-3:0 4-7:1 8-11:2 12-15:3',
      pageNodes: '0-255:0 256-511:1 512-767:2 768-1023:3',
      windowUs: 10_000,
      table: `
        window | threads | pages    | loads | stores
        0-3    | 0-3     | 0-255    | 200   | 40
        0-3    | 4-7     | 256-511  | 200   | 40
        0-3    | 8-11    | 512-767  | 200   | 40
        0-3    | 12-15   | 768-1023 | 200   | 40`,
    });
    const replay = carrefourPolicy.replay(input, options);
    expect(replay.windows[0]!.localAccessRatio).toBe(1);
    expect(replay.windows[0]!.accessesPerUs).toBeGreaterThan(50);
    expect(replay.decisions.find((d) => d.explanation.startsWith('interleaving off'))?.explanation).toMatch(/MC imbalance 0\.0% ≤ 35%, LAR 100\.0%/);
    expect(kinds(replay, 'interleave')).toHaveLength(0);
    expect(kinds(replay, 'migrate')).toHaveLength(0);
    expect(replay.migratedPages).toBe(0);
    expect([...replay.finalPlacement.pageNode]).toEqual([...input.initial.pageNode]);
  });

  describe('replicates a read-mostly shared region only when the write share and memory use allow it', () => {
    const shared = (stores: number) =>
      replayInputFromTable({
        preset: OPTERON,
        threads: 16,
        pages: 600,
        threadNodes: '0-3:0 4-7:1 8-11:2 12-15:3',
        pageNodes: '0-599:0',
        windowUs: 10_000,
        ipc: 0.15, // a memory-bound program's IPC (§1): enough IBS samples per page for the module
        table: `
          window | threads | pages | loads | stores
          0-2    | 0-15    | 0-599 | 200   | ${stores}`,
      });

    it('read-only, memory use 10%: all 600 pages replicated (≥ 500 orders in the first round)', () => {
      const replay = createCarrefourPolicy({ memoryUsagePct: 10 }).replay(shared(0), options);
      const repl = kinds(replay, 'replicate');
      // 599 orders in the first round (one page's samples came from one node), the last page next.
      expect(repl).toHaveLength(2);
      expect(repl[0]!.window).toBe(0);
      expect(repl[0]!.pages).toBeGreaterThanOrEqual(590);
      expect(repl[0]!.pages! + repl[1]!.pages!).toBe(600);
      expect(repl[0]!.explanation).toMatch(/memory usage 10\.0% ≤ 25%, read ratio 100\.0% ≥ 95%/);
      expect(replay.finalPlacement.replicated.every((x) => x === 1)).toBe(true);
      expect(replay.windows[2]!.localAccessRatio).toBe(1);
    });

    it('10% stores: read ratio 90% < 95%, no replication (interleaved instead)', () => {
      const replay = createCarrefourPolicy({ memoryUsagePct: 10 }).replay(shared(22), options);
      expect(kinds(replay, 'replicate')).toHaveLength(0);
      expect(replay.decisions.find((d) => d.explanation.startsWith('replication off'))?.explanation).toMatch(/read ratio 90\.1% < 95%/);
      expect(kinds(replay, 'interleave').length).toBeGreaterThan(0);
    });

    it('read-only but memory use 40% > 25%: no replication', () => {
      const replay = createCarrefourPolicy({ memoryUsagePct: 40 }).replay(shared(0), options);
      expect(kinds(replay, 'replicate')).toHaveLength(0);
      expect(replay.decisions.find((d) => d.explanation.startsWith('replication off'))?.explanation).toMatch(/memory usage 40\.0% > 25%/);
    });

    it('fewer than 500 candidate pages in the first round: replication bootstrap holds back', () => {
      const input = shared(0);
      const small = { ...input };
      // Keep only pages 0-99 in the windows.
      small.windows = windowsOf([...input.windows].map((w) => {
        const keep = [...w.page.keys()].filter((i) => w.page[i]! < 100);
        return {
          ...w,
          sampleCount: Math.round(w.sampleCount / 6),
          thread: Int32Array.from(keep, (i) => w.thread[i]!),
          page: Int32Array.from(keep, (i) => w.page[i]!),
          loads: Float64Array.from(keep, (i) => w.loads[i]! * 6),
          // (a sixth of the pages at six times the rate: the same MAPTU)
          stores: Float64Array.from(keep, (i) => w.stores[i]!),
        };
      }));
      const replay = createCarrefourPolicy({ memoryUsagePct: 10 }).replay(small, options);
      expect(kinds(replay, 'replicate')).toHaveLength(0);
      expect(replay.decisions.some((d) => /100 read-only pages .* needs ≥ 500 orders/.test(d.explanation))).toBe(true);
    });
  });

  it('does nothing when the access rate is under its threshold (MAPTU < 50)', () => {
    const input = streamcluster(8, 1);
    const replay = carrefourPolicy.replay(input, options);
    expect(replay.windows[0]!.accessesPerUs).toBeLessThan(50);
    expect(replay.decisions.every((d) => d.kind === 'none')).toBe(true);
    expect(replay.decisions[0]!.explanation).toMatch(/^Carrefour off: MAPTU 13\.3 accesses\/µs < 50/);
    expect(replay.migratedPages).toBe(0);
  });

  it('is deterministic: same seed, same decisions; another seed, other interleave draws', () => {
    const input = streamcluster(60, 4);
    const a = carrefourPolicy.replay(input, options);
    const b = carrefourPolicy.replay(input, options);
    expect(b.decisions).toEqual(a.decisions);
    expect([...b.finalPlacement.pageNode]).toEqual([...a.finalPlacement.pageNode]);
    const c = carrefourPolicy.replay(input, { ...options, seed: 2 });
    expect([...c.finalPlacement.pageNode]).not.toEqual([...a.finalPlacement.pageNode]);
  });
});
