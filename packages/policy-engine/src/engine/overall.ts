/** One replay's per-window metrics summarised over the recording (the numbers every front end shows). */
import type { WindowMetrics } from '../model/contract.js';

export interface OverallMetrics {
  localAccessRatio: number;
  memoryLatencyNs: number;
  mcImbalancePct: number;
  interconnectUsagePct: number;
  interconnectImbalancePct: number;
  /** Predicted total time, µs: Σ over windows, anchored on what actually ran (docs/engine.md, "Predicted time"). */
  predictedUs: number;
  /** Memory accesses in the replay (Σ samples × weight). */
  accesses: number;
  /** The decomposition of predictedUs (anchored the same way): time not waiting for memory … */
  computeUs: number;
  /** … and time waiting for memory at the policy's latency with the windows' concurrency. */
  stallUs: number;
}

/**
 * Accesses-weighted means of per-window metrics. With `timeScale`, window w's predicted time counts
 * as predictedUs × timeScale[w] (the anchoring of analyze: real window length / the model's time
 * for what actually ran).
 */
export function overallMetrics(windows: readonly WindowMetrics[], timeScale?: ArrayLike<number>): OverallMetrics {
  let accesses = 0;
  let loadWeight = 0;
  let predictedUs = 0;
  let computeUs = 0;
  let stallUs = 0;
  const sum = { lar: 0, lat: 0, mc: 0, icu: 0, ici: 0 };
  for (let i = 0; i < windows.length; i++) {
    const w = windows[i]!;
    // Weighted by the recorded accesses (samples × weight), not by the rates the loop assumed.
    const a = w.accesses ?? w.accessesPerUs * w.predictedUs;
    accesses += a;
    const scale = timeScale ? timeScale[i]! : 1;
    predictedUs += w.predictedUs * scale;
    computeUs += (w.computeUs ?? w.predictedUs) * scale;
    stallUs += (w.stallUs ?? 0) * scale;
    sum.lar += a * w.localAccessRatio;
    // Latency: the loads' mean (what a PMU measures; stores are posted), accesses where a window has no load count.
    const l = w.loads ?? a;
    loadWeight += l;
    sum.lat += l * w.memoryLatencyNs;
    sum.mc += a * w.mcImbalancePct;
    sum.icu += a * w.interconnectUsagePct;
    sum.ici += a * w.interconnectImbalancePct;
  }
  const mean = (x: number) => (accesses > 0 ? x / accesses : 0);
  return {
    localAccessRatio: accesses > 0 ? sum.lar / accesses : 1,
    memoryLatencyNs: loadWeight > 0 ? sum.lat / loadWeight : mean(sum.lat),
    mcImbalancePct: mean(sum.mc),
    interconnectUsagePct: mean(sum.icu),
    interconnectImbalancePct: mean(sum.ici),
    predictedUs,
    accesses,
    computeUs,
    stallUs,
  };
}
