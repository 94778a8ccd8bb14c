/**
 * The UI thread's side of the trace Worker: one Worker, reused for every file, with each request
 * sent as a protocol.ts message and its reply matched by id. It runs on the UI thread but knows
 * nothing of the UI: views reach it through the trace context (ui/hooks/trace-context.tsx).
 */
import { createTraceWorker } from './create-worker';
import type { TraceAnswer, TraceQuery } from '@numascope/policy-engine';
import type { AnalyzeOutcome, AnalyzeRequest, PlanOutcome } from './analysis';
import type { CodeOutcome, CodeRequest, TouchedByOutcome } from './code';
import { LoadError } from './protocol';
import type { DecisionsOutcome, OpenResult, WorkerReply, WorkerRequest } from './protocol';

/** Windows replayed out of the total, as the engine reports them. */
export interface EngineProgress {
  done: number;
  total: number;
}

export interface AnalyzeCallOptions {
  /** Called as the Worker replays the analysis's windows (not called when the answer is cached). */
  onProgress?: (p: EngineProgress) => void;
  /** Aborting before the Worker has started the analysis drops it (when no one else waits for it). */
  signal?: AbortSignal;
}

/** One analysis the Worker is asked for, shared by every caller asking for the same request. */
interface SharedAnalysis {
  key: string;
  send: () => Promise<WorkerReply>;
  promise: Promise<AnalyzeOutcome>;
  resolve: (o: AnalyzeOutcome) => void;
  listeners: Set<(p: EngineProgress) => void>;
  users: number;
  started: boolean;
  progress: EngineProgress | null;
}

/** One Worker, reused for every file; replies are matched to requests by id. */
export class TraceWorkerClient {
  private worker: Worker | null = null;
  private nextId = 1;
  private pending = new Map<number, (r: WorkerReply) => void>();
  private progress = new Map<number, (p: EngineProgress) => void>();
  /** Analyses asked for and not answered yet, by request; the Worker runs one at a time, in order. */
  private analyses = new Map<string, SharedAnalysis>();
  private analysisQueue: SharedAnalysis[] = [];
  private analysisRunning: SharedAnalysis | null = null;

  private ensure(): Worker {
    if (this.worker) return this.worker;
    const worker = createTraceWorker();
    worker.onmessage = (e: MessageEvent<WorkerReply>) => {
      if (e.data.type === 'progress') {
        this.progress.get(e.data.id)?.({ done: e.data.done, total: e.data.total });
        return;
      }
      const resolve = this.pending.get(e.data.id);
      this.pending.delete(e.data.id);
      this.progress.delete(e.data.id);
      resolve?.(e.data);
    };
    worker.onerror = (e: ErrorEvent) => {
      e.preventDefault();
      this.failAll(`The trace reader stopped unexpectedly (${e.message || 'worker error'}). The file may be too large for this browser's memory.`);
    };
    this.worker = worker;
    return worker;
  }

  private failAll(message: string) {
    for (const [id, resolve] of this.pending) resolve({ id, type: 'failed', error: { code: 'worker-failed', message } });
    this.pending.clear();
    this.progress.clear();
    this.worker?.terminate();
    this.worker = null;
  }

  private send(request: DistributiveOmit<WorkerRequest, 'id'>, transfer: ArrayBuffer[] = [], onProgress?: (p: EngineProgress) => void): Promise<WorkerReply> {
    const worker = this.ensure();
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      if (onProgress) this.progress.set(id, onProgress);
      worker.postMessage({ ...request, id } as WorkerRequest, transfer);
    });
  }

  /** Starts the next queued analysis when none is running. */
  private pump() {
    if (this.analysisRunning) return;
    const next = this.analysisQueue.shift();
    if (!next) return;
    this.analysisRunning = next;
    next.started = true;
    void next.send().then((r) => {
      this.analyses.delete(next.key);
      this.analysisRunning = null;
      next.resolve(r.type === 'analyze' ? r.outcome : { error: r.type === 'failed' ? r.error : { code: 'internal', message: 'unexpected Worker reply' } });
      this.pump();
    });
  }

  /** Opens `bytes` in the Worker. The buffer is transferred: it is unusable here afterwards. */
  async open(bytes: ArrayBuffer): Promise<OpenResult> {
    const r = await this.send({ type: 'open', bytes }, [bytes]);
    if (r.type === 'open') {
      const { id: _id, type: _type, ...result } = r;
      return result;
    }
    return { error: r.type === 'failed' ? r.error : { code: 'internal', message: 'unexpected Worker reply' } };
  }

  /** Asks the Worker an aggregate question about the open trace. */
  async query<Q extends TraceQuery>(traceId: number, query: Q): Promise<TraceAnswer<Q>> {
    const r = await this.send({ type: 'query', traceId, query });
    if (r.type === 'query') return r.answer as TraceAnswer<Q>;
    throw new LoadError(r.type === 'failed' ? r.error.code : 'internal', r.type === 'failed' ? r.error.message : 'unexpected Worker reply');
  }

  /** A copy of the bytes the open trace was read from ("save trace"). */
  async bytes(traceId: number): Promise<ArrayBuffer> {
    const r = await this.send({ type: 'bytes', traceId });
    if (r.type === 'bytes') return r.bytes;
    throw new LoadError(r.type === 'failed' ? r.error.code : 'internal', r.type === 'failed' ? r.error.message : 'unexpected Worker reply');
  }

  /**
   * Replays the open trace (or an extra recording) through the policy engine in the Worker.
   * Callers asking for the same request share one analysis and its progress; analyses run one at
   * a time, and one whose callers have all aborted before it started is dropped (brushing the
   * timeline quickly leaves only the last range to replay).
   */
  analyze(traceId: number, recording: number | null, request: AnalyzeRequest, options: AnalyzeCallOptions = {}): Promise<AnalyzeOutcome> {
    const key = JSON.stringify([traceId, recording, request]);
    let shared = this.analyses.get(key);
    if (!shared) {
      let resolve!: (o: AnalyzeOutcome) => void;
      const promise = new Promise<AnalyzeOutcome>((r) => (resolve = r));
      const s: SharedAnalysis = {
        key,
        promise,
        resolve,
        listeners: new Set(),
        users: 0,
        started: false,
        progress: null,
        send: () =>
          this.send({ type: 'analyze', traceId, recording, request }, [], (p) => {
            s.progress = p;
            for (const l of s.listeners) l(p);
          }),
      };
      shared = s;
      this.analyses.set(key, s);
      this.analysisQueue.push(s);
    }
    const s = shared;
    s.users++;
    const listener = options.onProgress;
    if (listener) {
      s.listeners.add(listener);
      if (s.progress) listener(s.progress);
    }
    options.signal?.addEventListener(
      'abort',
      () => {
        if (listener) s.listeners.delete(listener);
        s.users--;
        if (s.users === 0 && !s.started) {
          this.analysisQueue = this.analysisQueue.filter((q) => q !== s);
          this.analyses.delete(s.key);
          s.resolve({ error: { code: 'cancelled', message: 'no longer needed' } });
        }
      },
      { once: true },
    );
    this.pump();
    return s.promise;
  }

  /** Every policy decision of an analysis of the open trace (runs the analysis when it is not cached). */
  async decisions(traceId: number, request: AnalyzeRequest): Promise<DecisionsOutcome> {
    const r = await this.send({ type: 'decisions', traceId, request });
    if (r.type === 'decisions') return r.outcome;
    return { error: r.type === 'failed' ? r.error : { code: 'internal', message: 'unexpected Worker reply' } };
  }

  /** The address-order ranks of one decision's pages. */
  async decisionPages(traceId: number, request: AnalyzeRequest, key: string): Promise<Int32Array> {
    const r = await this.send({ type: 'decision-pages', traceId, request, key });
    if (r.type === 'decision-pages') return r.ranks;
    throw new LoadError(r.type === 'failed' ? r.error.code : 'internal', r.type === 'failed' ? r.error.message : 'unexpected Worker reply');
  }

  /** The Code view's function table, call tree and data objects under its filters. */
  async code(traceId: number, request: CodeRequest): Promise<CodeOutcome> {
    const r = await this.send({ type: 'code', traceId, request });
    if (r.type === 'code') return r.outcome;
    throw new LoadError(r.type === 'failed' ? r.error.code : 'internal', r.type === 'failed' ? r.error.message : 'unexpected Worker reply');
  }

  /** The functions that touched an allocation's data object (the Objects panel's "touched by"). */
  async touchedBy(traceId: number, allocation: number, range: CodeRequest['range']): Promise<TouchedByOutcome> {
    const r = await this.send({ type: 'touched-by', traceId, allocation, range });
    if (r.type === 'touched-by') return r.outcome;
    throw new LoadError(r.type === 'failed' ? r.error.code : 'internal', r.type === 'failed' ? r.error.message : 'unexpected Worker reply');
  }

  /** Opens a second recording for a Compare column; the buffer is transferred. */
  async openExtra(bytes: ArrayBuffer, name: string): Promise<{ recording: number; name: string }> {
    const r = await this.send({ type: 'open-extra', bytes, name }, [bytes]);
    if (r.type === 'open-extra') return { recording: r.recording, name: r.name };
    throw new LoadError(r.type === 'failed' ? r.error.code : 'internal', r.type === 'failed' ? r.error.message : 'unexpected Worker reply');
  }

  /**
   * Builds and validates a plan from selected recommendations of an analysis; with `check` and no
   * ids, the plan of the recorded placement itself (every page range to the node it is on).
   */
  async plan(traceId: number, request: AnalyzeRequest, ids: string[], createdAt: string, traceName: string, check = false): Promise<PlanOutcome> {
    const r = await this.send({ type: 'plan', traceId, request, ids, createdAt, traceName, check });
    if (r.type === 'plan') return r.outcome;
    return { error: r.type === 'failed' ? r.error.message : 'unexpected Worker reply' };
  }

  /** Builds and validates the plan of one diagnosed fix (its `fix.id`), or says why it has none. */
  async planFix(traceId: number, fixId: string, createdAt: string, traceName: string): Promise<PlanOutcome> {
    const r = await this.send({ type: 'plan-fix', traceId, fixId, createdAt, traceName });
    if (r.type === 'plan') return r.outcome;
    return { error: r.type === 'failed' ? r.error.message : 'unexpected Worker reply' };
  }

  dispose() {
    this.worker?.terminate();
    this.worker = null;
    this.pending.clear();
    this.progress.clear();
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
