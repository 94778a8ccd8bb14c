/**
 * One fuzzing process (forked by pool.ts): builds the corpus once, then for each index it is sent
 * makes that input, runs the target on it and answers with the outcome and its peak memory. The
 * pool kills it when an input runs too long or takes too much memory, and starts another.
 */
import { loadCorpus, type CorpusKind } from './corpus.js';
import { makeInput } from './mutate.js';
import { runTarget, type Outcome } from './target.js';

export type ChildRequest = { seed: number; index: number };
export type ChildReply =
  | { type: 'ready' }
  | { type: 'start'; index: number; base: string; mutations: string[]; bytes: number }
  | { type: 'done'; index: number; outcome: Outcome; ms: number; maxRssBytes: number };

const send = (m: ChildReply) => process.send!(m);
const corpus = loadCorpus((process.env.NUMASCOPE_FUZZ_CORPUS ?? 'mixed') as CorpusKind);
const engine = process.env.NUMASCOPE_FUZZ_ENGINE !== '0';

/**
 * Self-test (pool.ts `selfTest`): inputs 0–3 misbehave on purpose, so a test can check that a
 * hang, a crash, running out of memory and an untyped exception are each detected and counted.
 */
function misbehave(index: number): Outcome | null {
  if (index === 0) for (;;);
  if (index === 1) process.abort();
  if (index === 2) {
    const hold: Uint8Array[] = [];
    for (;;) hold.push(new Uint8Array(32 << 20).fill(1));
  }
  if (index === 3) return { kind: 'untyped', stage: 'read', message: 'self-test: an untyped exception' };
  return null;
}
const selfTest = process.env.NUMASCOPE_FUZZ_SELF_TEST === '1';

process.on('message', ({ seed, index }: ChildRequest) => {
  let outcome: Outcome;
  let t0 = performance.now();
  const wrong = selfTest ? misbehave(index) : null;
  if (wrong) {
    send({ type: 'done', index, outcome: wrong, ms: 0, maxRssBytes: process.resourceUsage().maxRSS * 1024 });
    return;
  }
  try {
    const input = makeInput(corpus, seed, index);
    send({ type: 'start', index, base: input.base, mutations: input.mutations, bytes: input.bytes.length });
    t0 = performance.now(); // the target's time, not the mutator's
    outcome = runTarget(input.bytes, engine);
  } catch (e) {
    // The mutator itself failed: a bug in the harness, reported as a failure so it gets fixed.
    outcome = { kind: 'untyped', stage: 'read', message: `fuzz harness: ${e instanceof Error ? e.stack : String(e)}` };
  }
  send({ type: 'done', index, outcome, ms: performance.now() - t0, maxRssBytes: process.resourceUsage().maxRSS * 1024 });
});
process.on('disconnect', () => process.exit(0));
send({ type: 'ready' });
