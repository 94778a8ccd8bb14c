/**
 * What the trace Worker does with a file: read it, summarise it, and turn any failure into a
 * plain `{ code, message }` the UI can show. Kept apart from the Worker wrapper so it can be
 * unit-tested without a Worker.
 */
import { isTraceError, readTrace, summarizeTrace } from '@numascope/policy-engine';
import type { TraceSummary } from '@numascope/policy-engine';

export interface LoadFailure {
  /** A TraceError code ('not-zip', 'too-new', …) or one of the app's own: 'http', 'fetch-failed', 'read-failed', 'worker-failed', 'internal'. */
  code: string;
  message: string;
}

export type ParseResult = { summary: TraceSummary; parseMs: number } | { error: LoadFailure };

export interface WorkerRequest {
  id: number;
  bytes: ArrayBuffer;
}

export type WorkerReply = { id: number } & ParseResult;

export function parseTraceBytes(bytes: Uint8Array, now: () => number = () => performance.now()): ParseResult {
  const start = now();
  try {
    const trace = readTrace(bytes);
    const summary = summarizeTrace(trace);
    return { summary, parseMs: now() - start };
  } catch (e) {
    if (isTraceError(e)) return { error: { code: e.code, message: e.message } };
    const why = e instanceof Error ? e.message : String(e);
    return {
      error: {
        code: 'internal',
        message: `numascope failed while reading this trace (${why}). This is a bug in numascope, not in your file; please report it with the file attached.`,
      },
    };
  }
}
