/**
 * What the fuzzer runs on each input: what the web app's trace Worker does with a file (read it,
 * summarise it, post the summary to the UI: a structured clone), then, where it is cheap, a short
 * engine analysis. Classifies the outcome; crashes, out-of-memory and hangs are detected by the
 * process pool around it (pool.ts).
 */
import { analyze } from '../src/analyze/analyze.js';
import { isEngineError } from '../src/model/errors.js';
import { isTraceError } from '../src/trace/errors.js';
import { readTrace } from '../src/trace/reader.js';
import { summarizeTrace } from '../src/query/summary.js';

/** Outcome classes; the last four are failures. */
export type OutcomeKind = 'ok' | 'trace-error' | 'untyped' | 'crash' | 'oom' | 'hang';

export interface Outcome {
  kind: OutcomeKind;
  /** TraceError code (trace-error), EngineError code when the engine refused an accepted trace (ok). */
  code?: string;
  /** Where an untyped exception came from. */
  stage?: 'read' | 'summary' | 'engine';
  message?: string;
}

/** Engine analysis only on traces up to this many samples (the cut corpus; full samples take longer). */
export const ENGINE_MAX_SAMPLES = 20_000;
const ENGINE_POLICIES = ['observed', 'first-touch', 'interleave'];

function describe(e: unknown): string {
  const s = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  return s.length > 300 ? `${s.slice(0, 300)}…` : s;
}

export function runTarget(bytes: Uint8Array, engine = true): Outcome {
  let trace;
  try {
    trace = readTrace(bytes);
  } catch (e) {
    if (isTraceError(e)) return { kind: 'trace-error', code: e.code };
    return { kind: 'untyped', stage: 'read', message: describe(e) };
  }
  try {
    structuredClone(summarizeTrace(trace));
  } catch (e) {
    // The summary must not fail on a trace the reader accepted, not even with a typed error.
    return { kind: 'untyped', stage: 'summary', message: describe(e) };
  }
  if (engine && trace.tables.samples.numRows <= ENGINE_MAX_SAMPLES) {
    try {
      analyze(trace, { policies: ENGINE_POLICIES });
    } catch (e) {
      if (isEngineError(e) && e.code !== 'internal') return { kind: 'ok', code: `engine:${e.code}` };
      return { kind: 'untyped', stage: 'engine', message: describe(e) };
    }
  }
  return { kind: 'ok' };
}
