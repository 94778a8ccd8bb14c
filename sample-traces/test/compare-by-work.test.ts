/**
 * Comparing recordings by work, not by duration (issue 30): the same program over half the time
 * (its steady phase, 500 ms against 1 s) is as fast per DRAM access, while its predicted time is
 * half; a different program is called out.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { analysisReport, compareRecordings, readTrace, speedupPerWork } from '@numascope/policy-engine';
import { generateTraceBytes } from '../generator/generate.js';

const sample = readTrace(new Uint8Array(readFileSync(new URL('../partitioned.numascope', import.meta.url))));
const part = (fromUs: number, toUs: number) => analysisReport(sample, { policies: ['observed'], diagnose: false, range: { fromUs, toUs } }, { traceFile: 'partitioned.numascope' }).report;

const report = (model: string, samples: number) =>
  analysisReport(readTrace(generateTraceBytes({ model, seed: 1, samples })), { policies: ['observed'], diagnose: false }, { traceFile: `${model}-${samples}.numascope` }).report;

describe('recordings compared by work', () => {
  it('a run half as long: the plain ratio is about 2×, per DRAM access about 1×', () => {
    const long = part(300_000, 1_300_000);
    const short = part(300_000, 800_000);
    expect(short.recordedUs).toBeLessThan(0.7 * long.recordedUs);
    const c = compareRecordings(long, short);
    expect(c.unit).toBe('DRAM accesses');
    expect(c.warnings.filter((w) => w.startsWith('different programs'))).toEqual([]);
    const a = long.policies[0]!.predictedUs;
    const b = short.policies[0]!.predictedUs;
    expect(a / b).toBeGreaterThan(1.4);
    expect(Math.abs(speedupPerWork(c, a, b)! - 1)).toBeLessThan(0.05);
  });

  it('two different programs are called out', () => {
    const c = compareRecordings(report('partitioned', 20_000), report('streamcluster-hotspot', 20_000));
    expect(c.warnings.some((w) => /^different programs: .* ran ".*", .* ".*"/.test(w))).toBe(true);
  });

  it('only one side calibrated is called out', () => {
    const a = part(300_000, 800_000);
    const b = structuredClone(a);
    b.machine.capacitySource = 'measured:numascope-bench 0.1.0 2026-01-01 (rule S2)';
    expect(compareRecordings(a, b).warnings.some((w) => /only .* has a numascope bench calibration/.test(w))).toBe(true);
    expect(compareRecordings(a, structuredClone(a)).warnings.some((w) => w.includes('calibration'))).toBe(false);
  });
});
