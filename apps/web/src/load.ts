/** Getting a trace's bytes (file, drop, URL) and handing them to the parsing Worker. */
import type { AnalyzeOutcome, AnalyzeRequest, PlanOutcome } from './engine/run';
import type { Answer, Query } from './analysis';
import type { LoadFailure, OpenResult, WorkerReply, WorkerRequest } from './parse';

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

/** One Worker, reused for every file; replies are matched to requests by id. */
export class TraceWorkerClient {
  private worker: Worker | null = null;
  private nextId = 1;
  private pending = new Map<number, (r: WorkerReply) => void>();

  private ensure(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(new URL('./trace.worker.ts', import.meta.url), { type: 'module' });
    worker.onmessage = (e: MessageEvent<WorkerReply>) => {
      const resolve = this.pending.get(e.data.id);
      this.pending.delete(e.data.id);
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
    this.worker?.terminate();
    this.worker = null;
  }

  private send(request: DistributiveOmit<WorkerRequest, 'id'>, transfer: ArrayBuffer[] = []): Promise<WorkerReply> {
    const worker = this.ensure();
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      worker.postMessage({ ...request, id } as WorkerRequest, transfer);
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
  async query<Q extends Query>(traceId: number, query: Q): Promise<Answer<Q>> {
    const r = await this.send({ type: 'query', traceId, query });
    if (r.type === 'query') return r.answer as Answer<Q>;
    throw new LoadError(r.type === 'failed' ? r.error.code : 'internal', r.type === 'failed' ? r.error.message : 'unexpected Worker reply');
  }

  /** A copy of the bytes the open trace was read from ("save trace"). */
  async bytes(traceId: number): Promise<ArrayBuffer> {
    const r = await this.send({ type: 'bytes', traceId });
    if (r.type === 'bytes') return r.bytes;
    throw new LoadError(r.type === 'failed' ? r.error.code : 'internal', r.type === 'failed' ? r.error.message : 'unexpected Worker reply');
  }

  /** Replays the open trace (or an extra recording) through the policy engine in the Worker. */
  async analyze(traceId: number, recording: number | null, request: AnalyzeRequest): Promise<AnalyzeOutcome> {
    const r = await this.send({ type: 'analyze', traceId, recording, request });
    if (r.type === 'analyze') return r.outcome;
    return { error: r.type === 'failed' ? r.error : { code: 'internal', message: 'unexpected Worker reply' } };
  }

  /** Opens a second recording for a Compare column; the buffer is transferred. */
  async openExtra(bytes: ArrayBuffer, name: string): Promise<{ recording: number; name: string }> {
    const r = await this.send({ type: 'open-extra', bytes, name }, [bytes]);
    if (r.type === 'open-extra') return { recording: r.recording, name: r.name };
    throw new LoadError(r.type === 'failed' ? r.error.code : 'internal', r.type === 'failed' ? r.error.message : 'unexpected Worker reply');
  }

  /** Builds and validates a plan from selected recommendations of an analysis. */
  async plan(traceId: number, request: AnalyzeRequest, ids: string[], createdAt: string, traceName: string): Promise<PlanOutcome> {
    const r = await this.send({ type: 'plan', traceId, request, ids, createdAt, traceName });
    if (r.type === 'plan') return r.outcome;
    return { error: r.type === 'failed' ? r.error.message : 'unexpected Worker reply' };
  }

  dispose() {
    this.worker?.terminate();
    this.worker = null;
    this.pending.clear();
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

export interface Progress {
  loadedBytes: number;
  /** From Content-Length; null when the server does not say. */
  totalBytes: number | null;
}

/**
 * Downloads a trace, reporting progress. HTTP failures and network errors become LoadErrors
 * whose message names the URL and the status.
 */
export async function fetchTraceBytes(
  url: string,
  onProgress: (p: Progress) => void,
  signal?: AbortSignal,
): Promise<ArrayBuffer> {
  const resolved = resolveUrl(url);
  const shown = resolved === url ? `"${url}"` : `"${url}" (${resolved})`;
  let response: Response;
  try {
    response = await fetch(resolved, signal ? { signal } : {});
  } catch (e) {
    if (signal?.aborted) throw e;
    throw new LoadError(
      'fetch-failed',
      `Could not fetch ${shown}: ${(e as Error).message}. Check the address and that the server is reachable; ` +
        'a trace on another site must be served with CORS headers that allow this page.',
    );
  }
  if (!response.ok) {
    throw new LoadError(
      'http',
      `Could not load ${shown}: the server answered HTTP ${response.status}${response.statusText ? ' ' + response.statusText : ''}.` +
        (response.status === 404 ? ' Check the file name in the ?trace= address.' : ''),
    );
  }
  const header = response.headers.get('content-length');
  const totalBytes = header !== null && /^\d+$/.test(header) ? Number(header) : null;
  if (!response.body) {
    const buf = await response.arrayBuffer();
    onProgress({ loadedBytes: buf.byteLength, totalBytes });
    return buf;
  }
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let loadedBytes = 0;
  onProgress({ loadedBytes, totalBytes });
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    loadedBytes += value.byteLength;
    onProgress({ loadedBytes, totalBytes });
  }
  const out = new Uint8Array(loadedBytes);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.byteLength;
  }
  return out.buffer;
}

export function resolveUrl(url: string): string {
  try {
    return new URL(url, document.baseURI).href;
  } catch {
    return url;
  }
}

/** Reads a picked or dropped file. */
export async function readFileBytes(file: File): Promise<ArrayBuffer> {
  try {
    return await file.arrayBuffer();
  } catch (e) {
    throw new LoadError('read-failed', `Could not read "${file.name}": ${(e as Error).message}.`);
  }
}
