import { diagnose, type DiagnoseOptions, type Diagnosis } from '../diagnose/diagnose.js';
import { predictFixGains } from '../diagnose/fixes.js';
import type { Trace } from '../trace/types.js';
import type { AnalysisResult } from './analyze.js';

/**
 * A trace's diagnosis (diagnose/) with each fix's predicted gain against the analysis baseline:
 * the baseline's headline placement with that fix alone, anchored as the analysis is.
 */
export function diagnoseAnalysis(trace: Trace, result: AnalysisResult, options: DiagnoseOptions = {}): Diagnosis {
  const d = diagnose(trace, options);
  const base = result.policies.find((p) => p.policy === result.baseline);
  if (!base) {
    d.notes.push(`fix gains not predicted: the analysis has no result for its baseline ${result.baseline}`);
    return d;
  }
  return predictFixGains(d, result.input, { baseline: { policy: base.policy, placement: base.placement, predictedUs: base.predictedUs }, timeScale: result.timeScale });
}
