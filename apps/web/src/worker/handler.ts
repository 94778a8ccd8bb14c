/**
 * What the trace Worker does with each request (trace.worker.ts is the thin wrapper that wires it
 * to `self`; the messages are protocol.ts's): opens trace files off the UI thread and keeps the open trace's columns, so the views
 * can ask for aggregates at the resolution they draw (never raw rows). It also runs the policy
 * engine (analyze, decisions, plans, the Code view's code attribution) on the open trace or on extra recordings opened into Compare
 * columns, caching each analysis per (recording, policy set, machine, window, estimate, time
 * range, manual placement), and posts `progress` messages while an analysis replays windows.
 * Kept apart from the Worker global so it is unit-tested in Node.
 */
import { answerQuery, readTrace } from '@numascope/policy-engine';
import type { AnalysisResult, QueryColumns, Trace } from '@numascope/policy-engine';
import { decisionRanks, decisionViews } from './decisions';
import type { DecisionView } from './decisions';
import { analyzeOutcome, planFromFixOutcome, planFromRecommendations } from './analysis';
import type { AnalyzeOutcome, AnalyzeRequest } from './analysis';
import { codeOutcome, touchedByOutcome } from './code';
import { openTraceBytes } from './open';
import { transferables } from './protocol';
import type { WorkerReply, WorkerRequest } from './protocol';

const CACHE_LIMIT = 16;
/** Least time between two progress messages of one analysis (the last window is always posted). */
export const PROGRESS_INTERVAL_MS = 50;

type Post = (reply: WorkerReply, transfer: ArrayBuffer[]) => void;

interface CacheEntry {
  outcome: AnalyzeOutcome;
  result: AnalysisResult | null;
  decisions?: DecisionView[];
}

export function createWorkerHandler(post: Post, now: () => number = () => performance.now()): (req: WorkerRequest) => void {
  let open: { traceId: number; columns: QueryColumns; bytes: Uint8Array; trace: Trace | null } | null = null;
  let nextTraceId = 1;
  /** Second recordings opened into Compare columns, by id. */
  const extras = new Map<number, { name: string; trace: Trace }>();
  let nextExtra = 1;
  const cache = new Map<string, CacheEntry>();

  const reply = (r: WorkerReply, transfer: ArrayBuffer[] = []) => post(r, transfer);

  function mainTrace(): Trace {
    if (!open) throw new Error('no trace is open');
    return (open.trace ??= readTrace(open.bytes));
  }

  /** The (cached) analysis for a request; a new one posts progress for request `id` as it replays. */
  function analysis(id: number, traceId: number, recording: number | null, request: AnalyzeRequest): CacheEntry {
    const key = JSON.stringify([
      traceId,
      recording,
      [...request.policies].sort(),
      request.machine,
      request.windowMs,
      request.estimate,
      request.range ?? null,
      request.accessRates ?? null,
      request.policies.includes('manual') ? (request.manual ?? null) : null,
    ]);
    let hit = cache.get(key);
    if (!hit) {
      const trace = recording === null ? mainTrace() : extras.get(recording)?.trace;
      if (!trace) throw new Error('That recording is no longer open: open it again into the column.');
      let last = -Infinity;
      hit = analyzeOutcome(trace, request, (done, total) => {
        const t = now();
        if (done < total && t - last < PROGRESS_INTERVAL_MS) return;
        last = t;
        reply({ id, type: 'progress', done, total });
      });
      if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value!);
      cache.set(key, hit);
    }
    return hit;
  }

  return (req: WorkerRequest) => {
    if (req.type === 'open') {
      open = null;
      cache.clear();
      const traceId = nextTraceId++;
      const bytes = new Uint8Array(req.bytes);
      const { columns, ...result } = openTraceBytes(bytes, traceId);
      if (columns) open = { traceId, columns, bytes, trace: null };
      reply({ id: req.id, type: 'open', ...result }, 'overview' in result ? transferables(result.overview.windows) : []);
      return;
    }
    if (req.type === 'open-extra') {
      try {
        const trace = readTrace(new Uint8Array(req.bytes));
        const recording = nextExtra++;
        extras.set(recording, { name: req.name, trace });
        reply({ id: req.id, type: 'open-extra', recording, name: req.name });
      } catch (e) {
        reply({ id: req.id, type: 'failed', error: { code: 'read-failed', message: `${req.name}: ${e instanceof Error ? e.message : String(e)}` } });
      }
      return;
    }
    if (!open || open.traceId !== req.traceId) {
      reply({ id: req.id, type: 'failed', error: { code: 'internal', message: 'That trace is no longer open.' } });
      return;
    }
    try {
      if (req.type === 'bytes') {
        const copy = open.bytes.slice().buffer;
        reply({ id: req.id, type: 'bytes', bytes: copy }, [copy]);
        return;
      }
      if (req.type === 'analyze') {
        reply({ id: req.id, type: 'analyze', outcome: analysis(req.id, req.traceId, req.recording, req.request).outcome });
        return;
      }
      if (req.type === 'decisions') {
        const entry = analysis(req.id, req.traceId, null, req.request);
        if (!entry.result) {
          reply({ id: req.id, type: 'decisions', outcome: { error: 'error' in entry.outcome ? entry.outcome.error : { code: 'internal', message: 'no analysis' } } });
          return;
        }
        entry.decisions ??= decisionViews(entry.result, open.columns);
        reply({ id: req.id, type: 'decisions', outcome: { decisions: entry.decisions } });
        return;
      }
      if (req.type === 'decision-pages') {
        const entry = analysis(req.id, req.traceId, null, req.request);
        const ranks = entry.result ? decisionRanks(entry.result, req.key, open.columns) : new Int32Array(0);
        reply({ id: req.id, type: 'decision-pages', ranks }, [ranks.buffer as ArrayBuffer]);
        return;
      }
      if (req.type === 'plan') {
        const { result } = analysis(req.id, req.traceId, null, req.request);
        const outcome = result
          ? planFromRecommendations(mainTrace(), result, req.ids, req.createdAt, req.traceName, req.check === true)
          : { error: 'the analysis failed, so there is nothing to plan from' };
        reply({ id: req.id, type: 'plan', outcome });
        return;
      }
      if (req.type === 'plan-fix') {
        reply({ id: req.id, type: 'plan', outcome: planFromFixOutcome(mainTrace(), req.fixId, req.createdAt, req.traceName) });
        return;
      }
      if (req.type === 'code') {
        reply({ id: req.id, type: 'code', outcome: codeOutcome(mainTrace(), req.request) });
        return;
      }
      if (req.type === 'touched-by') {
        reply({ id: req.id, type: 'touched-by', outcome: touchedByOutcome(mainTrace(), req.allocation, req.range) });
        return;
      }
      const answer = answerQuery(open.columns, req.query);
      reply({ id: req.id, type: 'query', answer }, transferables(answer));
    } catch (e) {
      reply({ id: req.id, type: 'failed', error: { code: 'internal', message: e instanceof Error ? e.message : String(e) } });
    }
  };
}
