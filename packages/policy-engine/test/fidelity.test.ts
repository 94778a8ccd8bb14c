/**
 * The fidelity check (fidelity/, docs/fidelity.md): mirrors of the published workloads of
 * the published measurements (docs/fidelity.md) §1–§3 (Gaud et al. CACM 2015 / Dashti et al.
 * ASPLOS'13; Lepers et al. ATC'15; Bergstrom 2011). Fails when a stated direction flips, when a
 * figure that is within ±25 % of the published value leaves the band, or when docs/fidelity.md is
 * not what `npm run fidelity` writes.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BAND, fidelityReport, SOURCES, streamclusterConcurrency, summary } from '../fidelity/fidelity.js';
import { fidelityMarkdown } from '../fidelity/markdown.js';

const report = fidelityReport();
const key = (r: { workload: string; metric: string }) => `${r.workload} | ${r.metric}`;

/** Figures within ±25 % today: each must stay within its band. */
const WITHIN = [
  'Streamcluster | memory latency F/I',
  'Streamcluster | IPC I/F (speedup of I, = time F/I)',
  'Streamcluster | memory latency I',
  'Streamcluster | interconnect imbalance F',
  'Streamcluster | interconnect usage F',
  'Streamcluster | local access ratio I',
  'PCA | memory latency F/I',
  'PCA | IPC I/F (speedup of I, = time F/I)',
  'PCA | memory latency I',
  'PCA | interconnect imbalance F',
  'PCA | local access ratio I',
  'Streamcluster, machine A (64 cores) | worst/best pair time',
  'STREAM, AMD 4× Opteron 6172 | sustained bandwidth, NUMA-aware, all cores',
  'STREAM, Intel 4× Xeon X7560 | sustained bandwidth, NUMA-aware, all cores',
  'STREAM-like, one socket DRAM + CXL | best DRAM:CXL weight ratio',
  'STREAM-like, one socket DRAM + CXL | bandwidth lost by 1:1 interleave against DRAM only',
];
/** Stated directions the model does not reproduce today (docs/fidelity.md says why). */
const DIRECTIONS_NOT_REPRODUCED: string[] = [];

describe('fidelity against the published measurements', () => {
  it('every stated direction holds, except the ones the report lists as not reproduced', () => {
    const failing = report.directions.filter((d) => !d.holds).map((d) => d.statement);
    expect(failing).toEqual(DIRECTIONS_NOT_REPRODUCED);
    expect(report.directions.length).toBeGreaterThanOrEqual(16);
  });

  it.each(WITHIN)('%s stays within ±25 % of the published value', (k) => {
    const r = report.rows.find((x) => key(x) === k);
    expect(r, k).toBeDefined();
    expect(r!.kind).toBe('prediction');
    expect(Math.abs(r!.predicted! / r!.published! - 1)).toBeLessThanOrEqual(BAND);
  });

  it('the headline ratios of §1 sit in their bands (latency F/I 2.51 and 1.42, speedup 1.93 and 1.44)', () => {
    const get = (w: string, m: string) => report.rows.find((r) => r.workload === w && r.metric === m)!.predicted!;
    expect(get('Streamcluster', 'memory latency F/I')).toBeGreaterThan(2.51 * 0.75);
    expect(get('Streamcluster', 'memory latency F/I')).toBeLessThan(2.51 * 1.25);
    expect(get('PCA', 'memory latency F/I')).toBeGreaterThan(1.42 * 0.75);
    expect(get('PCA', 'memory latency F/I')).toBeLessThan(1.42 * 1.25);
    expect(get('Streamcluster', 'IPC I/F (speedup of I, = time F/I)')).toBeGreaterThan(1.93 * 0.75);
    expect(get('PCA', 'IPC I/F (speedup of I, = time F/I)')).toBeGreaterThan(1.44 * 0.75);
  });

  it('counts: predictions within the band and inputs are kept apart', () => {
    const s = summary(report);
    expect(s.within).toBeGreaterThanOrEqual(WITHIN.length);
    // Issue 29's closed-loop model (docs/fidelity.md): 16 of 24 within; it was 20 of 24 with the
    // old open-queue curve, which gave microsecond latencies on the sample traces. The four that
    // left the band (interconnect usage under interleave, machine A's latency gap) are listed there.
    expect(s.within / s.predictions).toBeGreaterThanOrEqual(16 / 24);
    // rule S1's leave-one-out checks are shown apart and never counted
    expect(report.ruleChecks).toHaveLength(2);
    expect(report.rows.some((r) => r.metric.includes('leave-one-out'))).toBe(false);
    expect(s.predictions).toBe(report.rows.filter((r) => r.kind === 'prediction' && r.within !== null).length);
    // inputs are never counted
    expect(report.rows.filter((r) => r.kind === 'input').every((r) => r.within === null)).toBe(true);
    // machines B–D have no preset and are listed as not predicted
    expect(report.rows.filter((r) => r.kind === 'not-predicted')).toHaveLength(3);
  });

  it('Streamcluster\'s concurrency for §2 comes from §1\'s published ratios (Little\'s law), not from §2', () => {
    const c = streamclusterConcurrency();
    // s0 from τ = 1.93, r_F = 1197/230, r_I = 476/230; m = R_F · L_F / s_F
    expect(c.value).toBeGreaterThan(2.5);
    expect(c.value).toBeLessThan(4);
    expect(c.text).toMatch(/while stalled/);
  });

  it('the report cites the papers by name, never notes outside the repository', () => {
    const md = fidelityMarkdown(report);
    expect(md).not.toMatch(/reference §|shared\/|reference\/|published-measurements/i);
    expect(md).toContain('Gaud, Lepers, Funston, Dashti, Fedorova, Quéma, Lachaize, Roth, "Challenges of Memory Management on Modern NUMA Systems"');
    expect(md).toContain('Lepers, Quéma, Fedorova, "Thread and Memory Placement on NUMA Systems: Asymmetry Matters", USENIX ATC 2015');
    expect(md).toContain('Bergstrom, "Measuring NUMA effects with the STREAM benchmark", 2011');
    // Every row and direction names its paper in its section cell.
    const sections = new Set([...report.rows, ...report.ruleChecks, ...report.directions].map((r) => r.section));
    expect([...sections].sort()).toEqual(Object.values(SOURCES).map((s) => s.section).sort());
  });

  it('docs/fidelity.md is what npm run fidelity writes', () => {
    const committed = readFileSync(resolve(__dirname, '../../../docs/fidelity.md'), 'utf8');
    expect(committed).toBe(fidelityMarkdown(report));
  });
});
