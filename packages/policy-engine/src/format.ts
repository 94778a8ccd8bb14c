/**
 * The formatters of the engine's headline figures: the CLI's recommendation texts and the app's
 * cards, tables and texts all format a figure with these, so one number reads the same wherever
 * it appears (docs/engine.md, "Predicted time and speedup").
 */

/** A speedup (a ratio of predicted times, > 1 is faster): "1.32×". */
export function formatSpeedup(ratio: number): string {
  return Number.isFinite(ratio) ? `${ratio.toFixed(2)}×` : '–';
}

/** Mean memory latency: "222 ns". */
export function formatLatencyNs(ns: number): string {
  return Number.isFinite(ns) ? `${ns.toFixed(0)} ns` : '–';
}

/** A share 0..1 as a percentage with one decimal (local access ratio): "27.9%". */
export function formatShare(fraction: number): string {
  return Number.isFinite(fraction) ? `${(fraction * 100).toFixed(1)}%` : '–';
}

/** A percentage already in % (imbalance, usage): "198.4%". */
export function formatPct(pct: number): string {
  return Number.isFinite(pct) ? `${pct.toFixed(1)}%` : '–';
}

/** A predicted or recorded time, µs, with three significant digits: "1.82 s", "450 ms". */
export function formatTimeUs(us: number): string {
  if (!Number.isFinite(us)) return '–';
  const abs = Math.abs(us);
  const three = (v: number) => {
    const a = Math.abs(v);
    return a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : v.toFixed(2);
  };
  if (abs < 1000) return `${three(us)} µs`;
  if (abs < 1e6) return `${three(us / 1e3)} ms`;
  return `${three(us / 1e6)} s`;
}
