/**
 * What each figure of the engine views is, in its unit, which way is better, and where it comes
 * from (docs/engine.md, "Metrics"): the cards' captions and the provenance tooltips read these,
 * so every number says what it is.
 */
export type MetricKey =
  | 'localAccessRatio'
  | 'memoryLatencyNs'
  | 'mcImbalancePct'
  | 'interconnectUsagePct'
  | 'interconnectImbalancePct'
  | 'predictedUs'
  | 'predictedSpeedup'
  | 'pagesToMove'
  | 'l3Mpki'
  | 'ipc';

export interface MetricInfo {
  /** One sentence: what is counted or computed. */
  what: string;
  /** The unit as shown. */
  unit: string;
  better: 'higher' | 'lower' | null;
  /** From what it is computed (follows "predicted by the simulator from …" or "measured: …"). */
  basis: string;
}

export const METRIC_INFO: Record<MetricKey, MetricInfo> = {
  localAccessRatio: {
    what: 'Share of memory accesses served by the node of the thread that made them',
    unit: '% of accesses',
    better: 'higher',
    basis: 'each sampled access’s page and thread, placed as this policy would place them',
  },
  memoryLatencyNs: {
    what: 'Mean latency of one memory access, weighted by accesses: idle latency plus queueing',
    unit: 'ns per access',
    better: 'lower',
    basis: 'the machine model’s node-to-node latencies, loaded by the predicted traffic (queueing at controllers and links)',
  },
  mcImbalancePct: {
    what: 'How unevenly the memory controllers are loaded: standard deviation of per-node load',
    unit: '% of the mean load',
    better: 'lower',
    basis: 'the predicted bytes/s each node’s memory controller serves',
  },
  interconnectUsagePct: {
    what: 'Mean utilisation of the links between nodes',
    unit: '% of link capacity',
    better: 'lower',
    basis: 'the predicted remote traffic routed over the machine model’s links and their capacities',
  },
  interconnectImbalancePct: {
    what: 'How unevenly the links are loaded: standard deviation of per-link load',
    unit: '% of the mean link load',
    better: 'lower',
    basis: 'the predicted bytes/s on each directed link',
  },
  predictedUs: {
    what: 'Predicted run time of the recorded work under this placement',
    unit: 'time (s, ms, µs)',
    better: 'lower',
    basis: 'the recording’s real duration, scaled by the predicted memory time per window',
  },
  predictedSpeedup: {
    what: 'The baseline’s predicted time divided by this one’s',
    unit: '× (ratio; above 1 is faster)',
    better: 'higher',
    basis: 'two predicted times of the same recording',
  },
  pagesToMove: {
    what: 'Pages that would migrate to reach this placement from what ran',
    unit: '4 KiB pages',
    better: 'lower',
    basis: 'the recorded page placement against the policy’s',
  },
  l3Mpki: {
    what: 'Last-level cache misses per thousand instructions',
    unit: 'misses / 1000 instructions',
    better: 'lower',
    basis: 'hardware counters read during the recording (perf)',
  },
  ipc: {
    what: 'Instructions retired per cpu cycle',
    unit: 'instructions / cycle',
    better: 'higher',
    basis: 'hardware counters read during the recording (perf)',
  },
};

/** "higher is better" / "lower is better" / "" . */
export function betterText(info: MetricInfo): string {
  return info.better ? `${info.better} is better` : '';
}
