/**
 * HTTP + WebSocket client of `numascope serve` (docs/live-api.md). Every request carries
 * `Authorization: Bearer TOKEN`; the WebSocket, which cannot carry headers, has `?token=`.
 * `fetch` and `WebSocket` are injected so the unit tests run against a fake server.
 */
import { latestLoop, parseLiveMessage, ProtocolError } from '@numascope/protocol';
import type { LoopRecord } from '@numascope/protocol';
import type {
  ApplyReport,
  ApplyRequest,
  BenchRequest,
  BenchRun,
  LiveEnd,
  LiveMessage,
  LiveWindow,
  Machine,
  PlanRun,
  ProcessInfo,
  Probe,
  Recording,
  RollbackRecord,
  RunReport,
  RunRequest,
  StartRecordingRequest,
} from '@numascope/protocol';

/** auth: 401/403 (wrong or stale token, foreign origin); unreachable: no answer at all; api: any other API error. */
export type ApiErrorKind = 'auth' | 'unreachable' | 'api' | 'protocol';

export class ApiError extends Error {
  readonly kind: ApiErrorKind;
  readonly status: number | null;
  readonly code: string;
  constructor(kind: ApiErrorKind, status: number | null, code: string, message: string) {
    super(message);
    this.name = 'ApiError';
    this.kind = kind;
    this.status = status;
    this.code = code;
  }
}

export interface WebSocketLike {
  onmessage: ((e: { data: unknown }) => void) | null;
  onclose: ((e: { code: number; reason: string; wasClean: boolean }) => void) | null;
  onerror: ((e: unknown) => void) | null;
  close(): void;
}

export interface LiveDeps {
  fetch: (input: string, init?: RequestInit) => Promise<Response>;
  openSocket: (url: string) => WebSocketLike;
  /** `http://127.0.0.1:PORT` — the server that served the page. */
  origin: string;
}

export function browserDeps(): LiveDeps {
  return {
    fetch: (input, init) => window.fetch(input, init),
    openSocket: (url) => new WebSocket(url) as unknown as WebSocketLike,
    origin: window.location.origin,
  };
}

export interface WatchHandlers {
  onWindow: (w: LiveWindow) => void;
  onEnd: (e: LiveEnd) => void;
  /** The socket closed before an `end` message, or sent something that is not the protocol. */
  onLost: (message: string) => void;
}

/** What the Live screen and the apply panel need of a backend: `numascope serve` (LiveApi) or the desktop app (DesktopLiveApi). */
export interface LiveClient {
  probe(): Promise<Probe>;
  topology(): Promise<Machine>;
  processes(): Promise<ProcessInfo[]>;
  start(req: StartRecordingRequest): Promise<Recording>;
  status(id: string): Promise<Recording>;
  stop(id: string): Promise<Recording>;
  apply(req: ApplyRequest): Promise<ApplyReport>;
  rollback(record: RollbackRecord): Promise<ApplyReport>;
  /**
   * Launches a program with the plan (`numascope run --plan`): resolves when the program exits, to
   * its report (or at once, with `dryRun`, to what is planned). `onLaunched` gets the pid once the
   * program runs. Undefined when the backend cannot launch programs.
   */
  runPlan?(req: RunRequest, onLaunched?: (pid: number) => void): Promise<RunReport>;
  trace(id: string): Promise<ArrayBuffer>;
  watch(id: string, h: WatchHandlers): () => void;
  /**
   * The live loop's record kept with the backend (`PUT`/`GET /api/recordings/:id/loop`,
   * `GET /api/loop`), so a reload brings the loop back. Undefined where the backend keeps none.
   * `loadLoop` answers null when none was saved; `latestLoop` the one saved last, or null.
   */
  saveLoop?(recording: string, record: LoopRecord): Promise<void>;
  /** Who keeps the loop, as the loop panel names it ("numascope serve", "the desktop app"); serve when undefined. */
  readonly loopKeeper?: string;
  loadLoop?(recording: string): Promise<unknown>;
  latestLoop?(): Promise<{ recording: string; loop: unknown } | null>;
}

/** `numascope bench` through the backend (docs/live-api.md, "Measuring the machine"): start, poll, stop. */
export interface BenchClient {
  startBench(req: BenchRequest): Promise<BenchRun>;
  benchStatus(id: string): Promise<BenchRun>;
  stopBench(id: string): Promise<BenchRun>;
}

export class LiveApi implements LiveClient, BenchClient {
  private readonly token: string;
  private readonly deps: LiveDeps;

  constructor(token: string, deps: LiveDeps) {
    this.token = token;
    this.deps = deps;
  }

  private async request(method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown): Promise<Response> {
    const headers: Record<string, string> = { Authorization: `Bearer ${this.token}` };
    const init: RequestInit = { method, headers, cache: 'no-store' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let response: Response;
    try {
      response = await this.deps.fetch(this.deps.origin + path, init);
    } catch (e) {
      throw new ApiError(
        'unreachable',
        null,
        'unreachable',
        `numascope serve did not answer (${(e as Error).message}). Is it still running? Start it again and open the URL it prints.`,
      );
    }
    if (response.ok) return response;
    let code = 'http';
    let message = `HTTP ${response.status}${response.statusText ? ' ' + response.statusText : ''}`;
    try {
      const j = (await response.json()) as { error?: { code?: string; message?: string } };
      if (j.error?.code) code = j.error.code;
      if (j.error?.message) message = j.error.message;
    } catch {
      /* not JSON: keep the status line */
    }
    const kind: ApiErrorKind = response.status === 401 || response.status === 403 ? 'auth' : 'api';
    throw new ApiError(kind, response.status, code, message);
  }

  private async json<T>(method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown): Promise<T> {
    const r = await this.request(method, path, body);
    try {
      return (await r.json()) as T;
    } catch {
      throw new ApiError('protocol', r.status, 'bad-json', `${path} did not answer JSON`);
    }
  }

  probe(): Promise<Probe> {
    return this.json<Probe>('GET', '/api/probe');
  }

  topology(): Promise<Machine> {
    return this.json<Machine>('GET', '/api/topology');
  }

  async processes(): Promise<ProcessInfo[]> {
    return (await this.json<{ processes: ProcessInfo[] }>('GET', '/api/processes')).processes;
  }

  start(req: StartRecordingRequest): Promise<Recording> {
    return this.json<Recording>('POST', '/api/recordings', req);
  }

  /** `GET /api/recordings`: this server's recordings, oldest first. */
  async recordings(): Promise<Recording[]> {
    return (await this.json<{ recordings: Recording[] }>('GET', '/api/recordings')).recordings;
  }

  async saveLoop(recording: string, record: LoopRecord): Promise<void> {
    await this.request('PUT', `/api/recordings/${encodeURIComponent(recording)}/loop`, record);
  }

  async loadLoop(recording: string): Promise<unknown> {
    try {
      return await this.json<unknown>('GET', `/api/recordings/${encodeURIComponent(recording)}/loop`);
    } catch (e) {
      if (e instanceof ApiError && e.code === 'no-loop') return null;
      throw e;
    }
  }

  async latestLoop(): Promise<{ recording: string; loop: unknown } | null> {
    try {
      return latestLoop.parse(await this.json<unknown>('GET', '/api/loop'));
    } catch (e) {
      if (e instanceof ApiError && e.code === 'no-loop') return null;
      if (e instanceof ApiError) throw e;
      throw new ApiError('protocol', 200, 'bad-loop', `/api/loop did not answer a loop: ${(e as Error).message}`);
    }
  }

  status(id: string): Promise<Recording> {
    return this.json<Recording>('GET', `/api/recordings/${encodeURIComponent(id)}`);
  }

  stop(id: string): Promise<Recording> {
    return this.json<Recording>('POST', `/api/recordings/${encodeURIComponent(id)}/stop`);
  }

  /** `POST /api/bench`: starts a benchmark run (409 `bench-running` while one runs). */
  startBench(req: BenchRequest): Promise<BenchRun> {
    return this.json<BenchRun>('POST', '/api/bench', req);
  }

  benchStatus(id: string): Promise<BenchRun> {
    return this.json<BenchRun>('GET', `/api/bench/${encodeURIComponent(id)}`);
  }

  /** Ends a run after its current repetition; it finishes with what was measured (partial). */
  stopBench(id: string): Promise<BenchRun> {
    return this.json<BenchRun>('POST', `/api/bench/${encodeURIComponent(id)}/stop`);
  }

  /** `POST /api/apply`: a dry run or a real apply (synchronous on the server); a real one answers the rollback record too. */
  apply(req: ApplyRequest): Promise<ApplyReport> {
    const body: ApplyRequest = { plan: req.plan, pid: req.pid };
    if (req.dryRun) body.dryRun = true;
    if (req.budgetMs !== undefined) body.budgetMs = req.budgetMs;
    if (req.setSystemWeights) body.setSystemWeights = true;
    return this.json<ApplyReport>('POST', '/api/apply', body);
  }

  /**
   * `POST /api/runs`, then `GET /api/runs/:id` every 250 ms until the program has exited
   * (docs/live-api.md, "Launching with a plan"). A dry run is answered at once.
   */
  async runPlan(req: RunRequest, onLaunched?: (pid: number) => void): Promise<RunReport> {
    const body = Object.fromEntries(Object.entries(req).filter(([, v]) => v !== undefined)) as RunRequest;
    let run = await this.json<PlanRun>('POST', '/api/runs', body);
    if (run.status === 'dry-run') return run.report;
    if (run.pid !== null) onLaunched?.(run.pid);
    while (run.status === 'running') {
      await new Promise((r) => setTimeout(r, 250));
      run = await this.json<PlanRun>('GET', `/api/runs/${encodeURIComponent(run.id ?? '')}`);
    }
    if (run.status === 'failed') throw new ApiError('api', 200, 'run-failed', run.error ?? 'the run failed');
    return run.report;
  }

  /** `POST /api/rollback` with the record an apply answered. */
  rollback(record: RollbackRecord): Promise<ApplyReport> {
    return this.json<ApplyReport>('POST', '/api/rollback', { record });
  }

  async trace(id: string): Promise<ArrayBuffer> {
    return (await this.request('GET', `/api/recordings/${encodeURIComponent(id)}/trace`)).arrayBuffer();
  }

  /** The WebSocket URL of a recording's live windows. */
  liveUrl(id: string): string {
    const ws = this.deps.origin.replace(/^http/, 'ws');
    return `${ws}/api/recordings/${encodeURIComponent(id)}/live?token=${encodeURIComponent(this.token)}`;
  }

  /** Subscribes to a recording's windows; returns a function that unsubscribes (no callbacks after it). */
  watch(id: string, h: WatchHandlers): () => void {
    let done = false;
    const socket = this.deps.openSocket(this.liveUrl(id));
    const finish = () => {
      done = true;
      socket.onmessage = null;
      socket.onclose = null;
      socket.onerror = null;
    };
    socket.onmessage = (e) => {
      if (done) return;
      if (typeof e.data !== 'string') return;
      let msg: LiveMessage;
      try {
        msg = parseLiveMessage(e.data);
      } catch (err) {
        finish();
        socket.close();
        h.onLost(`The live connection sent something unexpected (${err instanceof ProtocolError ? err.message : String(err)}).`);
        return;
      }
      if (msg.type === 'window') h.onWindow(msg);
      else {
        finish();
        h.onEnd(msg);
      }
    };
    socket.onerror = () => {
      /* onclose follows with the details */
    };
    socket.onclose = (e) => {
      if (done) return;
      finish();
      h.onLost(
        `The live connection closed before the recording ended (WebSocket code ${e.code}${e.reason ? `: ${e.reason}` : ''}). ` +
          'numascope serve may have stopped; the recording stops with it.',
      );
    };
    return () => {
      if (done) return;
      finish();
      socket.close();
    };
  }
}
