/**
 * The messages between the UI thread and the trace Worker (requests, replies, progress), the
 * failure shape every step reports, and which buffers a reply transfers instead of copying.
 * The one definition both sides use: handler.ts answers these requests, client.ts sends them.
 */
import type { AnyTraceAnswer, MigrationMark, RegionMeta, TraceQuery, TraceSummary, WindowSeries } from '@numascope/policy-engine';
import type { AnalyzeOutcome, AnalyzeRequest, PlanOutcome } from './analysis';
import type { CodeOutcome, CodeRequest, TouchedByOutcome } from './code';
import type { DecisionView } from './decisions';

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
  | { id: number; type: 'query'; traceId: number; query: TraceQuery }
  | { id: number; type: 'bytes'; traceId: number }
  | { id: number; type: 'analyze'; traceId: number; recording: number | null; request: AnalyzeRequest }
  | { id: number; type: 'open-extra'; bytes: ArrayBuffer; name: string }
  /** `check`: no recommendation applied: the recorded placement itself, every range kept (the live loop's placement check). */
  | { id: number; type: 'plan'; traceId: number; request: AnalyzeRequest; ids: string[]; createdAt: string; traceName: string; check?: boolean }
  | { id: number; type: 'decisions'; traceId: number; request: AnalyzeRequest }
  /** The plan of one diagnosed fix (engine planFromFix; `fixId` as in the diagnosis' issues[].fix.id); answered with a `plan` reply. */
  | { id: number; type: 'plan-fix'; traceId: number; fixId: string; createdAt: string; traceName: string }
  | { id: number; type: 'decision-pages'; traceId: number; request: AnalyzeRequest; key: string }
  /** The Code view: function table, call tree and data objects under its filters (worker/code.ts). */
  | { id: number; type: 'code'; traceId: number; request: CodeRequest }
  /** The functions that touched one allocation's data object (the Objects panel's "touched by"). */
  | { id: number; type: 'touched-by'; traceId: number; allocation: number; range: CodeRequest['range'] };

/** Every decision of an analysis of the open trace (worker/decisions.ts), or why there is none. */
export type DecisionsOutcome = { decisions: DecisionView[] } | { error: { code: string; message: string } };

export type WorkerReply =
  | ({ id: number; type: 'open' } & OpenResult)
  | { id: number; type: 'query'; answer: AnyTraceAnswer }
  | { id: number; type: 'bytes'; bytes: ArrayBuffer }
  | { id: number; type: 'analyze'; outcome: AnalyzeOutcome }
  | { id: number; type: 'open-extra'; recording: number; name: string }
  | { id: number; type: 'plan'; outcome: PlanOutcome }
  | { id: number; type: 'decisions'; outcome: DecisionsOutcome }
  | { id: number; type: 'decision-pages'; ranks: Int32Array }
  | { id: number; type: 'code'; outcome: CodeOutcome }
  | { id: number; type: 'touched-by'; outcome: TouchedByOutcome }
  /** Sent while request `id` replays windows (engine onProgress): not its answer, which follows. */
  | { id: number; type: 'progress'; done: number; total: number }
  | { id: number; type: 'failed'; error: LoadFailure };

/** A failure with a LoadFailure code, thrown while getting or opening a trace. */
export class LoadError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'LoadError';
    this.code = code;
  }
}

export function toFailure(e: unknown): LoadFailure {
  if (e instanceof LoadError) return { code: e.code, message: e.message };
  return { code: 'internal', message: e instanceof Error ? e.message : String(e) };
}

/** The typed arrays of an answer, to transfer rather than copy. */
export function transferables(a: unknown): ArrayBuffer[] {
  const out: ArrayBuffer[] = [];
  const visit = (v: unknown, depth: number) => {
    if (depth > 3 || v === null || typeof v !== 'object') return;
    if (ArrayBuffer.isView(v)) {
      if (v.buffer instanceof ArrayBuffer && !out.includes(v.buffer)) out.push(v.buffer);
      return;
    }
    for (const x of Object.values(v)) visit(x, depth + 1);
  };
  visit(a, 0);
  return out;
}
