/**
 * Weighted interleave's recommendation in words: the weights, their ratio, the headline sentence
 * and the predicted gains; pure functions of the Worker's WeightsView, used by WeightsPanel, the
 * Apply panel and the Markdown summary.
 */
import { formatPercent, nodeLabel } from '@numascope/viz';
import type { AnalysisView, PolicyView, WeightsView } from '../../worker/analysis';

/** "node 0 ×9, node 2 ×2". */
export function weightsText(nodes: readonly number[], weights: readonly number[]): string {
  return nodes.map((n, k) => `${nodeLabel(n)} ×${weights[k]}`).join(', ');
}

/** "9:2" (the ratio as numactl users write it). */
export function weightsRatio(weights: readonly number[]): string {
  return weights.join(':');
}

/**
 * The headline sentence: "node 0 ×9, node 2 ×2: 81.8% of pages on DRAM". DRAM = the fast side of
 * the recommendation (nodes with cpus, else the top memory tier); given weights (no
 * recommendation) have no sides, so no share.
 */
export function weightsSentence(w: WeightsView): string {
  const words = weightsText(w.nodes, w.weights);
  const r = w.recommendation;
  if (!r) return `${words} (weights as given)`;
  if (r.slowNodes.length === 0) return `${words}: one memory tier, no DRAM share to choose`;
  return `${words}: ${formatPercent(r.dramShare)} of pages on DRAM`;
}

/** Speedups of the recommended weights (the app's convention: other time ÷ this time), from the curve's model times. */
export function weightGains(w: WeightsView): { vsDramOnly: number | null; vsEqual: number | null } {
  const r = w.recommendation;
  if (!r || r.timeVsDramOnly === null || r.timeVsDramOnly <= 0) return { vsDramOnly: null, vsEqual: null };
  return {
    vsDramOnly: 1 / r.timeVsDramOnly,
    vsEqual: r.equalWeightsTimeVsDramOnly !== null ? r.equalWeightsTimeVsDramOnly / r.timeVsDramOnly : null,
  };
}

/** The policies of an analysis that carry weights (weighted-interleave, weighted-interleave:N,M, …). */
export function weightedPolicies(a: AnalysisView): PolicyView[] {
  return a.policies.filter((p) => p.weights !== null);
}
