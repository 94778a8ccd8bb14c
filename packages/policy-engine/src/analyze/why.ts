/**
 * The why of a policy's headline prediction (docs/engine.md, "Decomposition"): its predicted time
 * as compute plus waiting for memory, the latency it waits at split into its idle part and each
 * resource's delay, the concurrency, the busiest resource and the calibration, over the headline's
 * windows. The CLI prints `text`; the JSON carries the numbers; the app shows both.
 */
import type { MachineModel, WindowMetrics } from '../model/contract.js';
import { formatLatencyNs, formatTimeUs } from '../format.js';
import type { PolicyResult } from './analyze.js';

export interface PredictionWhy {
  /** The headline's predicted time and its parts, µs (anchored as predictedUs). */
  predictedUs: number;
  computeUs: number;
  stallUs: number;
  /** Loads-weighted means over the windows (the headline latency's weighting), ns: idle + controllers + links + crossbars = latency. */
  latencyNs: number;
  idleNs: number;
  controllersNs: number;
  linksNs: number;
  crossbarNs: number;
  /** Accesses in flight while waiting (accesses-weighted mean of the windows' populations). */
  concurrency: number;
  /** The resource with the highest time-weighted mean utilisation. */
  busiest: { resource: string; utilisation: number; delayNs: number } | null;
  /** Accesses-weighted means of the windows' calibration (1 and 1 when nothing was measured). */
  idleScale: number;
  queueScale: number;
  /** The whole sentence. */
  text: string;
}

export function predictionWhy(r: PolicyResult, machine: MachineModel): PredictionWhy {
  const windows: readonly WindowMetrics[] = r.headlineWindows;
  const n = machine.nodeCount;
  const links = machine.links.length;
  let a = 0;
  let t = 0;
  const sum = { lat: 0, idle: 0, links: 0, xb: 0, conc: 0, iota: 0, kappa: 0 };
  const mc = new Float64Array(n);
  const link = new Float64Array(links);
  const mcU = new Float64Array(n);
  const linkU = new Float64Array(links);
  // The latency and its parts are the loads' (what the headline's memoryLatencyNs is: windows
  // weighted by loads); the concurrency and the calibration are weighted by accesses.
  let l = 0;
  for (const w of windows) {
    const acc = w.accesses ?? w.accessesPerUs * w.predictedUs;
    const ld = w.loads ?? acc;
    a += acc;
    l += ld;
    t += w.predictedUs;
    sum.lat += ld * w.memoryLatencyNs;
    sum.idle += ld * (w.idleLatencyNs ?? 0);
    sum.xb += ld * (w.crossbarDelayNs ?? 0);
    sum.conc += acc * (Number.isFinite(w.concurrency) ? w.concurrency : 0);
    sum.iota += acc * (w.idleScale ?? 1);
    sum.kappa += acc * (w.queueScale ?? 1);
    for (let m = 0; m < n; m++) {
      mc[m]! += ld * (w.mcDelayNs?.[m] ?? 0);
      mcU[m]! += w.predictedUs * (w.mcUtilisation[m] ?? 0);
    }
    for (let k = 0; k < links; k++) {
      link[k]! += ld * (w.linkDelayNs?.[k] ?? 0);
      linkU[k]! += w.predictedUs * (w.linkUtilisation[k] ?? 0);
    }
  }
  const mean = (x: number) => (a > 0 ? x / a : 0);
  const perLoad = (x: number) => (l > 0 ? x / l : 0);
  let busiest: PredictionWhy['busiest'] = null;
  for (let m = 0; m < n; m++) {
    const u = t > 0 ? mcU[m]! / t : 0;
    if (u > 0 && (!busiest || u > busiest.utilisation)) busiest = { resource: `node ${machine.nodeIds[m]}'s memory controller`, utilisation: u, delayNs: perLoad(mc[m]!) };
  }
  for (let k = 0; k < links; k++) {
    const u = t > 0 ? linkU[k]! / t : 0;
    const lk = machine.links[k]!;
    if (u > 0 && (!busiest || u > busiest.utilisation)) busiest = { resource: `link ${machine.nodeIds[lk.from]}→${machine.nodeIds[lk.to]}`, utilisation: u, delayNs: perLoad(link[k]!) };
  }
  const controllersNs = perLoad(mc.reduce((s, x) => s + x, 0));
  const linksNs = perLoad(link.reduce((s, x) => s + x, 0));
  const why: Omit<PredictionWhy, 'text'> = {
    predictedUs: r.predictedUs,
    computeUs: r.computeUs,
    stallUs: r.stallUs,
    latencyNs: perLoad(sum.lat),
    idleNs: perLoad(sum.idle),
    controllersNs,
    linksNs,
    crossbarNs: perLoad(sum.xb),
    concurrency: mean(sum.conc),
    busiest,
    idleScale: mean(sum.iota),
    queueScale: mean(sum.kappa),
  };
  const parts = [`${formatLatencyNs(why.idleNs)} idle`, `${formatLatencyNs(controllersNs)} controllers`, `${formatLatencyNs(linksNs)} links`];
  if (why.crossbarNs > 0) parts.push(`${formatLatencyNs(why.crossbarNs)} crossbars`);
  const text =
    `${formatTimeUs(r.predictedUs)} = ${formatTimeUs(r.computeUs)} compute + ${formatTimeUs(r.stallUs)} waiting for memory at ${formatLatencyNs(why.latencyNs)} ` +
    `(${parts.join(' + ')}) with ${why.concurrency.toFixed(1)} accesses in flight` +
    (busiest ? `; busiest: ${busiest.resource} at ${(busiest.utilisation * 100).toFixed(0)} % (+${formatLatencyNs(busiest.delayNs)})` : '') +
    (Math.abs(why.idleScale - 1) > 1e-9 || Math.abs(why.queueScale - 1) > 1e-9 ? `; calibrated on the recording: idle × ${why.idleScale.toFixed(2)}, bottleneck queueing × ${why.queueScale.toFixed(1)}` : '');
  return { ...why, text };
}
