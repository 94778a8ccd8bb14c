/**
 * The engine requests the views send the Worker: one shared policy set (so one cached analysis
 * serves every view) and the Recommendations' request. Pure functions of the URL state.
 */
import { POLICY_IDS } from '@numascope/policy-engine';
import type { TimeRange } from '@numascope/policy-engine';
import type { AnalyzeRequest } from '../../worker/analysis';
import type { ViewState } from '../url-state';

/**
 * Every view asks for the same policy set, so one Worker analysis (cached) serves them all. With
 * a brushed time range, only the windows that overlap it are replayed.
 */
export function engineRequest(
  machine: string | null,
  estimate: boolean,
  range: TimeRange | null = null,
  baseline: string | null = null,
  windowMs: number | null = null,
  accessRates: 'bandwidth-bound' | null = null,
): AnalyzeRequest {
  return {
    policies: [...POLICY_IDS],
    machine,
    estimate,
    windowMs,
    range: range ? { fromUs: range.fromUs, toUs: range.toUs } : null,
    baseline,
    // Absent unless asked for, so that the requests (and the Worker's cache keys) of every other analysis stay as they were.
    ...(accessRates ? { accessRates } : {}),
  };
}

/**
 * The Recommendations view's request, which the ranked list of actions comes from wherever it is
 * shown (Overview, Diagnostics, Recommendations): one request, so one list.
 */
export function actionsRequest(state: Pick<ViewState, 'estimate' | 'range' | 'base' | 'win' | 'rates'>): AnalyzeRequest {
  return engineRequest(null, state.estimate, state.range, state.base, state.win, state.rates);
}
