/**
 * What the trace Worker does with a file: read it, summarise it, extract its query columns, and
 * turn any failure into a plain `{ code, message }` the UI can show. Kept apart from the Worker
 * wrapper so it can be unit-tested without a Worker.
 */
import { isTraceError, migrationMarks, queryColumns, readTrace, regionMeta, summarizeTrace, windowSeries } from '@numascope/policy-engine';
import type { QueryColumns, Trace } from '@numascope/policy-engine';
import type { OpenResult, ParseResult, TraceOverview } from './protocol';

export function parseTraceBytes(bytes: Uint8Array, now: () => number = () => performance.now()): ParseResult {
  const r = openTraceBytes(bytes, 0, now);
  return 'error' in r ? r : { summary: r.summary, parseMs: r.parseMs };
}

/** Reads a trace, summarises it and extracts its columns for later queries (the Worker keeps `columns`). */
export function openTraceBytes(
  bytes: Uint8Array,
  traceId: number,
  now: () => number = () => performance.now(),
): (OpenResult & { columns?: QueryColumns }) {
  const start = now();
  try {
    const trace: Trace = readTrace(bytes);
    const summary = summarizeTrace(trace);
    const columns = queryColumns(trace);
    const overview: TraceOverview = {
      traceId,
      windows: windowSeries(columns),
      regions: regionMeta(trace),
      migrations: migrationMarks(trace),
    };
    return { summary, overview, columns, parseMs: now() - start };
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
