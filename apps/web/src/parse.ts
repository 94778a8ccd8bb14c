/**
 * What the trace Worker does with a file: read it, summarise it, and turn any failure into a
 * plain `{ code, message }` the UI can show. Kept apart from the Worker wrapper so it can be
 * unit-tested without a Worker.
 */
import { isTraceError, readTrace, summarizeTrace } from '@numascope/policy-engine';
import type { Trace, TraceSummary } from '@numascope/policy-engine';
import { migrationMarks, regionMeta, traceColumns, windowSeries } from './analysis';
import type { AnalyzeOutcome, AnalyzeRequest, PlanOutcome } from './engine/run';
import type { DecisionView } from './engine/decisions';
import type { AnyAnswer, MigrationMark, Query, RegionMeta, TraceColumns, WindowSeries } from './analysis';

export interface LoadFailure {
  /** A TraceError code ('not-zip', 'too-new', …) or one of the app's own: 'http', 'fetch-failed', 'read-failed', 'worker-failed', 'internal'. */
  code: string;
  message: string;
}

export type ParseResult = { summary: TraceSummary; parseMs: number } | { error: LoadFailure };

/** What the views need besides the summary, computed once when the trace opens. */
export interface TraceOverview {
  /** Identifies the open trace in the Worker; queries name it. */
  traceId: number;
  windows: WindowSeries;
  regions: RegionMeta[];
  migrations: MigrationMark[];
}

export type OpenResult = { summary: TraceSummary; overview: TraceOverview; parseMs: number } | { error: LoadFailure };

export type WorkerRequest =
  | { id: number; type: 'open'; bytes: ArrayBuffer }
  | { id: number; type: 'query'; traceId: number; query: Query }
  | { id: number; type: 'bytes'; traceId: number }
  | { id: number; type: 'analyze'; traceId: number; recording: number | null; request: AnalyzeRequest }
  | { id: number; type: 'open-extra'; bytes: ArrayBuffer; name: string }
  | { id: number; type: 'plan'; traceId: number; request: AnalyzeRequest; ids: string[]; createdAt: string; traceName: string }
  | { id: number; type: 'decisions'; traceId: number; request: AnalyzeRequest }
  | { id: number; type: 'decision-pages'; traceId: number; request: AnalyzeRequest; key: string };

/** Every decision of an analysis of the open trace (engine/decisions.ts), or why there is none. */
export type DecisionsOutcome = { decisions: DecisionView[] } | { error: { code: string; message: string } };

export type WorkerReply =
  | ({ id: number; type: 'open' } & OpenResult)
  | { id: number; type: 'query'; answer: AnyAnswer }
  | { id: number; type: 'bytes'; bytes: ArrayBuffer }
  | { id: number; type: 'analyze'; outcome: AnalyzeOutcome }
  | { id: number; type: 'open-extra'; recording: number; name: string }
  | { id: number; type: 'plan'; outcome: PlanOutcome }
  | { id: number; type: 'decisions'; outcome: DecisionsOutcome }
  | { id: number; type: 'decision-pages'; ranks: Int32Array }
  /** Sent while request `id` replays windows (engine onProgress): not its answer, which follows. */
  | { id: number; type: 'progress'; done: number; total: number }
  | { id: number; type: 'failed'; error: LoadFailure };

export function parseTraceBytes(bytes: Uint8Array, now: () => number = () => performance.now()): ParseResult {
  const r = openTraceBytes(bytes, 0, now);
  return 'error' in r ? r : { summary: r.summary, parseMs: r.parseMs };
}

/** Reads a trace, summarises it and extracts its columns for later queries (the Worker keeps `columns`). */
export function openTraceBytes(
  bytes: Uint8Array,
  traceId: number,
  now: () => number = () => performance.now(),
): (OpenResult & { columns?: TraceColumns }) {
  const start = now();
  try {
    const trace: Trace = readTrace(bytes);
    const summary = summarizeTrace(trace);
    const columns = traceColumns(trace);
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
