import { describe, expect, it } from 'vitest';
import { recommend, confidenceOf, MIGRATION_GBPS } from '../src/recommend/index.js';
import { carrefourPolicy } from '../src/policies/carrefour.js';
import { simulateWindow } from '../src/engine/simulate.js';
import type { Placement, PolicyReplay, ReplayInput } from '../src/engine/contract.js';
import { replayInputFromTable } from './helpers/replay-table.js';

/** A replay that keeps one placement for every window (first-touch, or static interleave). */
function staticReplay(policy: string, input: ReplayInput, placement: Placement): PolicyReplay {
  return {
    policy,
    windows: [...input.windows].map((w) => simulateWindow(input.machine, w, placement, input.windowUs, input.pageBytes)),
    threadNodeByWindow: [...input.windows].map(() => placement.threadNode),
    finalPlacement: placement,
    migratedPages: 0,
    migratedBytes: 0,
    decisions: [],
  };
}

const streamcluster = replayInputFromTable({
  preset: 'amd-opteron-8385-4p',
  threads: 16,
  pages: 1024,
  threadNodes: '0-3:0 4-7:1 8-11:2 12-15:3',
  pageNodes: '0-1023:0',
  windowUs: 10_000,
  table: `
    window | threads | pages  | loads | stores
    0-5    | 0-15    | 0-1023 | 60    | 4`,
});
const firstTouch = staticReplay('first-touch', streamcluster, streamcluster.initial);
const context = { sources: ['ibs-op'], command: ['./streamcluster', '16'] };

describe('recommend', () => {
  it('recommends interleaving the hot range, with gain, cost and confidence', () => {
    const carrefour = carrefourPolicy.replay(streamcluster, { seed: 1, simulate: simulateWindow });
    const recs = recommend(streamcluster, firstTouch, [firstTouch, carrefour], context);
    const rec = recs.find((r) => r.id === 'carrefour:interleave')!;
    expect(rec.kind).toBe('interleave-ranges');
    expect(rec.planable).toBe(true);
    expect(rec.gain.speedup).toBeGreaterThan(1.02);
    expect(rec.gain.latencyNsAfter).toBeLessThan(rec.gain.latencyNsBefore);
    expect(rec.cost.pages).toBe(rec.pageIndices!.length);
    expect(rec.cost.seconds).toBeCloseTo((rec.cost.pages * 4096) / (MIGRATION_GBPS * 1e9), 12);
    expect(rec.title).toMatch(/^interleave \d+ hot pages over the nodes as carrefour does: predicted 1\.\d\d× \(memory latency 292 → 1\d\d ns, local 25% → 25%\)/);
    // The preset's latencies and links are estimated: confidence says so.
    expect(rec.confidence.reasons.join('; ')).toMatch(/machine numbers not measured/);
  });

  it('gives a numactl line when static interleaving helps', () => {
    const n = streamcluster.machine.nodeCount;
    const interleaved: Placement = { ...streamcluster.initial, pageNode: Int16Array.from({ length: 1024 }, (_, p) => p % n) };
    const recs = recommend(streamcluster, firstTouch, [staticReplay('interleave', streamcluster, interleaved)], context);
    const line = recs.find((r) => r.kind === 'numactl')!;
    expect(line.command).toBe('numactl --interleave=all ./streamcluster 16');
    expect(line.gain.speedup).toBeGreaterThan(1.02);
  });

  it('lowers confidence for page-fault-only traces and few samples', () => {
    const faultsOnly = confidenceOf(streamcluster, { sources: ['page-faults', 'procfs'] });
    const ibs = confidenceOf(streamcluster, { sources: ['ibs-op'] });
    expect(faultsOnly.score).toBeLessThan(ibs.score);
    expect(faultsOnly.reasons).toContain('page-fault samples only: accesses after first touch are not seen');
  });

  it('suggests a block-wise split when each page is one thread\'s but sits on another node', () => {
    const input = replayInputFromTable({
      preset: 'amd-opteron-8385-4p',
      threads: 4,
      pages: 64,
      threadNodes: '0:0 1:1 2:2 3:3',
      pageNodes: '0-63:0',
      windowUs: 10_000,
      table: `
        window | threads | pages | loads | stores
        0-1    | 0       | 0-15  | 100   | 10
        0-1    | 1       | 16-31 | 100   | 10
        0-1    | 2       | 32-47 | 100   | 10
        0-1    | 3       | 48-63 | 100   | 10`,
    });
    const base = staticReplay('first-touch', input, input.initial);
    const split = recommend(input, base, [base], context).find((r) => r.codeChange === 'block-wise-split')!;
    expect(split.pageIndices!.length).toBe(48);
    expect(split.threads).toEqual([1, 2, 3]);
  });
});
