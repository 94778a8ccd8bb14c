/**
 * The trace reader's fuzzer, on demand (docs/robustness.md, "Trace reader"):
 *
 *   npm run fuzz:trace -w packages/policy-engine -- --count 10000 --seed 7
 *
 * Options: --count N (1000), --seed S (1), --first I (0: inputs I … I+N-1), --jobs J (2),
 * --timeout-ms T (10000, per input), --max-rss-mb M (1024, per process), --corpus small|full|mixed
 * (mixed), --no-engine, --save DIR (write failing inputs there), --only I (make input I, run it in
 * this process and print what was done and what happened).
 * Prints counts per outcome and per TraceError code and the peak resident memory; exits 1 when
 * any input crashed, hung, ran out of memory or threw an untyped exception.
 */
import { writeFileSync } from 'node:fs';
import { loadCorpus, type CorpusKind } from './corpus.js';
import { makeInput } from './mutate.js';
import { formatReport, runFuzz } from './pool.js';
import { runTarget } from './target.js';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}
const num = (name: string, dflt: number): number => {
  const v = arg(name);
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) {
    console.error(`--${name} must be a non-negative integer, got ${v}`);
    process.exit(2);
  }
  return n;
};

const seed = num('seed', 1);
const corpus = (arg('corpus') ?? 'mixed') as CorpusKind;
if (!['small', 'full', 'mixed'].includes(corpus)) {
  console.error(`--corpus must be small, full or mixed, got ${corpus}`);
  process.exit(2);
}
const engine = !process.argv.includes('--no-engine');

const only = arg('only');
if (only !== undefined) {
  const index = num('only', 0);
  const input = makeInput(loadCorpus(corpus), seed, index);
  console.log(`input ${index} of seed ${seed}: base ${input.base}, ${input.bytes.length} bytes; mutations: ${input.mutations.join('; ')}`);
  const save = arg('save');
  if (save) writeFileSync(save, input.bytes);
  const t0 = performance.now();
  console.log(JSON.stringify(runTarget(input.bytes, engine)), `${(performance.now() - t0).toFixed(0)} ms`);
} else {
  const count = num('count', 1000);
  const first = num('first', 0);
  let last = 0;
  const report = await runFuzz({
    count,
    seed,
    first,
    jobs: Math.max(1, num('jobs', 2)),
    timeoutMs: num('timeout-ms', 10_000),
    maxRssMb: num('max-rss-mb', 1024),
    corpus,
    engine,
    saveDir: arg('save'),
    onProgress: (done, r) => {
      const now = performance.now();
      if (now - last < 5000 && done < count) return;
      last = now;
      const failures = r.outcomes.untyped + r.outcomes.crash + r.outcomes.oom + r.outcomes.hang;
      process.stderr.write(`  ${done}/${count} inputs, ${failures} failures, peak ${r.peakRssMb.toFixed(0)} MiB\n`);
    },
  });
  console.log(formatReport(report, { seed, first }));
  process.exit(report.failures.length > 0 ? 1 : 0);
}
