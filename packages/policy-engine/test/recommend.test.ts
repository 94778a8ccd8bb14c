import { describe, expect, it } from 'vitest';
import { recommend, confidenceOf, MIGRATION_GBPS } from '../src/recommend/index.js';
import { analyzeInput, type AnalysisResult } from '../src/analyze/analyze.js';
import { manualPolicy } from '../src/policies/index.js';
import { formatLatencyNs, formatShare, formatSpeedup } from '../src/format.js';
import { replayInputFromTable } from './helpers/replay-table.js';

const of = (r: AnalysisResult, policy: string) => r.policies.find((p) => p.policy === policy)!;

const streamcluster = replayInputFromTable({
  preset: 'amd-opteron-8385-4p',
  threads: 16,
  pages: 1024,
  threadNodes: '0-3:0 4-7:1 8-11:2 12-15:3',
  pageNodes: '0-1023:0',
  windowUs: 10_000,
  ipc: 0.15, // Streamcluster's IPC (§1): the module's IBS samples per access follow it
  table: `
    window | threads | pages  | loads | stores
    0-5    | 0-15    | 0-1023 | 60    | 4`,
});
const context = { sources: ['ibs-op'], command: ['./streamcluster', '16'] };

describe('recommend', () => {
  it('recommends interleaving the hot range, with gain, cost and confidence', () => {
    const result = analyzeInput(streamcluster, { policies: ['first-touch', 'carrefour'], baseline: 'first-touch' });
    const ft = of(result, 'first-touch');
    const carrefour = of(result, 'carrefour');
    const recs = recommend(streamcluster, ft, result.policies, context);
    const rec = recs.find((r) => r.id === 'carrefour:interleave')!;
    expect(rec.kind).toBe('interleave-ranges');
    expect(rec.planable).toBe(true);
    // The gain is the policy's own headline numbers (steady state), the ones shown for it everywhere.
    expect(rec.gain.speedup).toBe(carrefour.predictedSpeedup);
    expect(rec.gain.speedup).toBeGreaterThan(1.02);
    expect(rec.gain.latencyNsBefore).toBe(ft.memoryLatencyNs);
    expect(rec.gain.latencyNsAfter).toBe(carrefour.memoryLatencyNs);
    expect(rec.gain.latencyNsAfter).toBeLessThan(rec.gain.latencyNsBefore);
    // The pages are those the steady-state placement has elsewhere than the recording.
    expect(rec.cost.pages).toBe(rec.pageIndices!.length);
    // With the module's own IBS samples (a few per page per round) some shared pages were seen
    // from one node only and migrated there: the interleave and the move together are its moves.
    const move = recs.find((r) => r.id === 'carrefour:move');
    expect(rec.cost.pages + (move?.cost.pages ?? 0)).toBe(carrefour.pagesToMove);
    expect(rec.cost.pages).toBeGreaterThan(carrefour.pagesToMove / 2);
    for (const p of rec.pageIndices!) expect(carrefour.placement.pageNode[p]).not.toBe(streamcluster.initial.pageNode[p]);
    expect(rec.cost.seconds).toBeCloseTo((rec.cost.pages * 4096) / (MIGRATION_GBPS * 1e9), 12);
    expect(rec.title).toContain(
      `as carrefour does: predicted ${formatSpeedup(carrefour.predictedSpeedup)} vs first-touch (memory latency ${formatLatencyNs(ft.memoryLatencyNs)} → ${formatLatencyNs(carrefour.memoryLatencyNs)}, local ${formatShare(ft.localAccessRatio)} → ${formatShare(carrefour.localAccessRatio)})`,
    );
    // The preset's latencies and links are estimated: confidence says so.
    expect(rec.confidence.reasons.join('; ')).toMatch(/machine numbers not measured/);
  });

  it('gives a numactl line when static interleaving helps', () => {
    const result = analyzeInput(streamcluster, { policies: ['first-touch', 'interleave'] });
    const recs = recommend(streamcluster, of(result, 'first-touch'), result.policies, context);
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
    const blocks = manualPolicy({ threads: [], pages: [16, 32, 48].map((first, i) => ({ firstPage: first, lastPage: first + 15, node: i + 1 })) });
    const result = analyzeInput(input, { policies: ['first-touch', blocks] });
    const ft = of(result, 'first-touch');
    const split = recommend(input, ft, [ft], { ...context, timeScale: result.timeScale }).find((r) => r.codeChange === 'block-wise-split')!;
    expect(split.pageIndices!.length).toBe(48);
    expect(split.threads).toEqual([1, 2, 3]);
    // Its gain is that placement predicted like a policy's: here the manual policy places the same
    // pages on the same nodes, so the two predictions are one number.
    const manual = of(result, 'manual');
    expect(split.gain.speedup).toBeGreaterThan(1.02);
    expect(split.gain.speedup).toBeCloseTo(ft.predictedUs / manual.predictedUs, 9);
    expect(split.gain.latencyNsAfter).toBeCloseTo(manual.memoryLatencyNs, 9);
    expect(split.gain.localAccessRatioAfter).toBeCloseTo(manual.localAccessRatio, 9);
    expect(split.title).toMatch(/predicted [\d.]+× vs first-touch/);
    // Without analyze's anchoring its gain is unknown: not listed.
    expect(recommend(input, ft, [ft], context).some((r) => r.codeChange === 'block-wise-split')).toBe(false);
  });

  it('re-bases speedups on the baseline it is given, as a ratio of predicted times', () => {
    const result = analyzeInput(streamcluster, { policies: ['first-touch', 'interleave', manualPolicy({ threads: [], pages: [] })], baseline: 'first-touch' });
    const manual = of(result, 'manual');
    const il = of(result, 'interleave');
    const recs = recommend(streamcluster, manual, result.policies, context);
    const line = recs.find((r) => r.kind === 'numactl')!;
    expect(line.gain.speedup).toBeCloseTo(manual.predictedUs / il.predictedUs, 9);
  });
});

