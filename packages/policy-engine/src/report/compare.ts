/**
 * Two recordings compared by work, not by duration (issue 30): a 0.5 s run and a 5 s run of a
 * program are compared per instruction (both have instruction counters) or per DRAM access, and
 * what makes the comparison doubtful is said: different programs, one side calibrated, different
 * machines, an estimate.
 */
import type { AnalysisReport } from './report.js';

export interface RecordingComparison {
  /** The unit both are measured in; null when one side has no measure of work (an estimate). */
  unit: 'instructions' | 'DRAM accesses' | null;
  aWork: number | null;
  bWork: number | null;
  /** Warnings that make the comparison doubtful, one sentence each. */
  warnings: string[];
}

const same = (a: readonly string[] | null, b: readonly string[] | null) => a !== null && b !== null && a.length === b.length && a.every((x, i) => x === b[i]);
// A bench calibration: embedded in the trace, or offered (its measured capacities, rule S2).
const calibrated = (r: AnalysisReport) => r.machine.choice.used === 'embedded-calibration' || r.machine.capacitySource.includes('(rule S2)');

export function compareRecordings(a: AnalysisReport, b: AnalysisReport): RecordingComparison {
  const warnings: string[] = [];
  const name = (r: AnalysisReport, side: string) => r.trace.file ?? side;
  if (a.trace.command && b.trace.command && !same(a.trace.command, b.trace.command)) {
    warnings.push(`different programs: ${name(a, 'A')} ran "${a.trace.command.join(' ')}", ${name(b, 'B')} "${b.trace.command.join(' ')}": a ratio per unit of work compares different work`);
  } else if (!a.trace.command || !b.trace.command) {
    warnings.push('one recording names no program: whether both ran the same one is not known');
  }
  if (calibrated(a) !== calibrated(b)) {
    warnings.push(`only ${calibrated(a) ? name(a, 'A') : name(b, 'B')} has a numascope bench calibration: its latencies and capacities are measured, the other's estimated, so differences may be the models'`);
  }
  if (a.machine.name !== b.machine.name) warnings.push(`different machines: ${a.machine.name} and ${b.machine.name}`);
  let unit: RecordingComparison['unit'] = null;
  let aWork: number | null = null;
  let bWork: number | null = null;
  if (!a.work || !b.work) {
    warnings.push('no measure of work on both sides (a placement-only estimate): the ratio is of predicted times, not per unit of work');
  } else {
    // The same unit on both sides: instructions where both have them, else DRAM accesses.
    const both = a.work.unit === 'instructions' && b.work.unit === 'instructions';
    unit = both ? 'instructions' : 'DRAM accesses';
    const amount = (r: AnalysisReport) => (both ? r.work!.amount : r.work!.unit === 'DRAM accesses' ? r.work!.amount : dramAccesses(r));
    aWork = amount(a);
    bWork = amount(b);
  }
  return { unit, aWork, bWork, warnings };
}

function dramAccesses(r: AnalysisReport): number {
  const ran = r.policies.find((p) => p.policy === 'observed') ?? r.policies.find((p) => p.policy === r.baseline) ?? r.policies[0];
  return ran?.accesses ?? 0;
}

/**
 * B's speedup over A per unit of work: A's predicted time per unit / B's (> 1: B does the same work
 * faster); the plain ratio of predicted times when there is no measure of work on both sides.
 */
export function speedupPerWork(c: RecordingComparison, aPredictedUs: number, bPredictedUs: number): number | null {
  if (!(aPredictedUs > 0) || !(bPredictedUs > 0)) return null;
  if (c.aWork === null || c.bWork === null || !(c.aWork > 0) || !(c.bWork > 0)) return aPredictedUs / bPredictedUs;
  return aPredictedUs / c.aWork / (bPredictedUs / c.bWork);
}
