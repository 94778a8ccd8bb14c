/**
 * Engine benchmark (npm run bench, from packages/policy-engine): synthetic traces of 1M and 10M
 * samples on the 8-node amd-genoa-2s-nps4 model (bench/synthetic.ts), built in memory (columns →
 * writeTrace → readTrace), then replayed through every registered policy.
 *
 * Prints, per size:
 * - read: readTrace of the file's bytes, the peer of the headline ("reading the trace alone");
 * - index: buildReplayInput (one pass over the rows: counts, first accesses, window bounds);
 *   every pass gets a fresh input (an input remembers each window's observed → idle timing once
 *   built, which a second pass over the same input would not pay for);
 * - one aggregation pass (every window built once, nothing cached), the peer of the policy lines;
 * - the headline: index + every policy's replay and steady state (replayAll with steadyState, as
 *   analyze runs them by default), and its ratio to reading the trace; then the replay alone
 *   (steadyState off) for the steady state's share;
 * - each policy alone (its own pass, aggregation included), samples/s and ratio to the peer;
 * - engine memory: heap + array buffers above what the read trace holds, peak during the
 *   all-policies pass, and per page (the target is memory that follows pages, not samples).
 * Run with --expose-gc (npm run bench does) so the baseline is taken after a collection.
 * Usage: node --expose-gc --import tsx bench/bench.ts [SAMPLES…] [--no-alone] (--no-alone skips the per-policy lines)
 */
import { analyzeInput, overallMetrics } from '../src/analyze/analyze.js';
import { simulateWindow } from '../src/engine/simulate.js';
import { replayAll } from '../src/engine/run.js';
import { buildReplayInput } from '../src/analyze/replay-input.js';
import { listPolicies } from '../src/policies/index.js';
import { readTrace } from '../src/trace/reader.js';
import { PAGES, THREADS, WINDOW_MS, syntheticTrace } from './synthetic.js';

const mb = (b: number) => `${(b / 1048576).toFixed(0)} MB`;
const gcNow = (globalThis as { gc?: () => void }).gc;
// Array buffers are freed by the sweeper after a collection: collect, let it run, collect again,
// so that a baseline does not count buffers already dead (which made "above the trace" negative).
const gc = gcNow
  ? async (): Promise<void> => {
      gcNow();
      await new Promise((resolve) => setTimeout(resolve, 10));
      gcNow();
    }
  : null;
const heap = () => {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};
const msps = (samples: number, ms: number) => (samples / (ms / 1000) / 1e6).toFixed(1);

if (!gcNow) console.log('(run with node --expose-gc for a collected memory baseline)');
const sizes = process.argv.slice(2).filter((a) => !a.startsWith('--')).map(Number).filter((n) => n > 0);
const alone = !process.argv.includes('--no-alone');
const densities: Array<{ samples: number; recordedUs: number; observedUs: number; speedups: Map<string, number> }> = [];
for (const samples of sizes.length > 0 ? sizes : [1_000_000, 10_000_000]) {
  let t = performance.now();
  const bytes = syntheticTrace(samples);
  const genMs = performance.now() - t;
  t = performance.now();
  const trace = readTrace(bytes);
  const readMs = performance.now() - t;

  // Every pass below gets an input of its own, as analyze builds one: an input remembers each
  // window's observed → idle timing once built, which a second pass would get for free.
  const freshInput = () => buildReplayInput(trace, { windowMs: WINDOW_MS, cacheEntries: 0 });
  let input = freshInput();
  t = performance.now();
  let entries = 0;
  let maxEntries = 0;
  for (const w of input.windows) {
    entries += w.page.length;
    maxEntries = Math.max(maxEntries, w.page.length);
  }
  const passMs = performance.now() - t;
  input = null!;
  // The baseline: the read trace, after a first input has been built and dropped (building one
  // settles what reading left to collect, which would otherwise count against the engine).
  await gc?.();
  const base = heap();

  t = performance.now();
  input = freshInput();
  const indexMs = performance.now() - t;
  const indexBytes = heap() - base;

  console.log(`\n${samples.toLocaleString('en-US')} samples, ${PAGES} pages, ${THREADS} threads, amd-genoa-2s-nps4 (8 nodes), ${input.windows.length} windows of ${WINDOW_MS} ms`);
  console.log(`  generate+write ${genMs.toFixed(0)} ms (${mb(bytes.length)} trace); read ${readMs.toFixed(0)} ms (the peer: reading the trace alone)`);
  console.log(`  index ${indexMs.toFixed(0)} ms; one aggregation pass ${passMs.toFixed(0)} ms (${msps(samples, passMs)} M samples/s, ${entries.toLocaleString('en-US')} window entries, at most ${maxEntries.toLocaleString('en-US')} in one window)`);

  await gc?.();
  let peak = 0;
  t = performance.now();
  const replays = replayAll(input, listPolicies(), { seed: 1, simulate: simulateWindow, steadyState: true }, () => {
    peak = Math.max(peak, heap());
  });
  const allMs = performance.now() - t;
  peak = Math.max(peak, heap()) - base;
  const headlineMs = indexMs + allMs;
  console.log(
    `  HEADLINE index + all ${replays.length} policies, replay + steady state: ${headlineMs.toFixed(0)} ms (×${(headlineMs / readMs).toFixed(2)} of reading the trace, ${msps(samples, headlineMs)} M samples/s); the pass alone ${allMs.toFixed(0)} ms (×${(allMs / passMs).toFixed(2)} of one aggregation pass)`,
  );
  console.log(
    `  engine memory above the trace: index ${mb(indexBytes)}, peak in the pass ${mb(peak)} (${(peak / PAGES).toFixed(0)} bytes per page; the trace itself ${mb(bytes.length)})`,
  );
  replays.length = 0;
  input = freshInput();
  await gc?.();
  t = performance.now();
  replayAll(input, listPolicies(), { seed: 1, simulate: simulateWindow });
  const replayMs = performance.now() - t;
  console.log(
    `  replay alone (no steady state): index + all policies ${(indexMs + replayMs).toFixed(0)} ms (×${((indexMs + replayMs) / readMs).toFixed(2)} of reading the trace); the steady state adds ${(allMs - replayMs).toFixed(0)} ms (${(((allMs - replayMs) / (indexMs + replayMs)) * 100).toFixed(0)} %)`,
  );

  // The predictions themselves, for the sampling-density comparison after the loop.
  const analysis = analyzeInput(freshInput(), { seed: 1 });
  densities.push({
    samples,
    recordedUs: analysis.recordedUs,
    observedUs: analysis.policies.find((p) => p.policy === 'observed')!.predictedUs,
    speedups: new Map(analysis.policies.map((p) => [p.policy, p.predictedSpeedup])),
  });

  for (const policy of alone ? listPolicies() : []) {
    input = freshInput();
    const t0 = performance.now();
    const replay = policy.replay(input, { seed: 1, simulate: simulateWindow });
    const ms = performance.now() - t0;
    const r = overallMetrics(replay.windows);
    console.log(
      `  ${policy.id.padEnd(12)} alone ${ms.toFixed(0).padStart(6)} ms  ${msps(samples, ms).padStart(6)} M samples/s  ×${(ms / passMs).toFixed(2)} of the peer  (predicted ${(r.predictedUs / 1e6).toFixed(2)} s, MC imbalance ${r.mcImbalancePct.toFixed(0)} %)`,
    );
  }
}

// The same program (the same accesses over the same 10 s) at each sampling density: the
// predictions must agree within sampling noise (issue 29: thinning or densifying a trace moves no
// prediction beyond noise; observed is predicted at the recorded time at every density).
if (densities.length > 1) {
  const [first, ...rest] = densities;
  console.log(`\nsampling density (the same accesses at ${densities.map((d) => d.samples.toLocaleString('en-US')).join(' and ')} samples):`);
  for (const d of densities) console.log(`  ${d.samples.toLocaleString('en-US').padStart(12)} samples: observed predicted ${(d.observedUs / 1e6).toFixed(3)} s for a ${(d.recordedUs / 1e6).toFixed(3)} s recording (×${(d.observedUs / d.recordedUs).toFixed(4)})`);
  for (const [policy, s0] of first!.speedups) {
    const others = rest.map((d) => d.speedups.get(policy) ?? NaN);
    const worst = Math.max(...others.map((s) => Math.abs(s / s0 - 1)));
    console.log(`  ${policy.padEnd(20)} ${[s0, ...others].map((s) => `${s.toFixed(3)}×`).join('  ')}  (largest difference ${(worst * 100).toFixed(1)} %${worst <= 0.05 ? '' : ': MORE THAN 5 %'})`);
  }
}
