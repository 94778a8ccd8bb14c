/**
 * Drives the live state machine: talks to the API, batches live windows so the screen renders at
 * most a few times a second (the backlog of up to 240 windows a subscriber first gets arrives in
 * one burst), downloads the trace when the recording ends, and marks its asynchronous work for
 * the idle signal (`work`) so tests wait on it instead of sleeping.
 */
import { ApiError } from './client';
import type { LiveClient } from './client';
import { initialState, liveReducer } from './machine';
import type { LiveEvent, LiveState } from './machine';
import type { ErrorBody, LiveEnd, LiveWindow, StartRecordingRequest } from '@numascope/protocol';

export const RENDER_INTERVAL_MS = 250;

/** The name a recording's trace is shown (and saved) under. */
export function recordingTraceName(id: string): string {
  return `numascope-${id}.numascope`;
}

export interface SessionHooks {
  /** Marks asynchronous work; returns its done function (see idle.ts beginWork). */
  work?: () => () => void;
  /** The downloaded trace of recording `recording`, to open in the normal views. */
  onTrace?: (name: string, bytes: ArrayBuffer, recording: string) => Promise<void> | void;
  /** Before onTrace (which may take the buffer): the recording, its end, the bytes and the last window (the live loop). */
  beforeTrace?: (recording: string, end: LiveEnd, bytes: ArrayBuffer, latest: LiveWindow | null) => void;
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (t: unknown) => void;
}

function asBody(e: unknown): ErrorBody {
  if (e instanceof ApiError) return { code: e.code, message: e.message };
  return { code: 'internal', message: e instanceof Error ? e.message : String(e) };
}

export class LiveSession {
  state: LiveState;
  private readonly api: LiveClient | null;
  private readonly hooks: SessionHooks;
  private listeners = new Set<(s: LiveState) => void>();
  private pending: LiveWindow[] = [];
  private timer: unknown = null;
  private unwatch: (() => void) | null = null;
  private disposed = false;

  constructor(api: LiveClient | null, hooks: SessionHooks = {}) {
    this.api = api;
    this.hooks = hooks;
    this.state = initialState(api !== null);
  }

  /** The API client (null without a token), for the apply panel. */
  get client(): LiveClient | null {
    return this.api;
  }

  subscribe(fn: (s: LiveState) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private dispatch(e: LiveEvent) {
    if (this.disposed) return;
    const next = liveReducer(this.state, e);
    if (next === this.state) return;
    this.state = next;
    for (const l of this.listeners) l(next);
  }

  private async tracked<T>(fn: () => Promise<T>): Promise<T> {
    const done = this.hooks.work?.() ?? (() => {});
    try {
      return await fn();
    } finally {
      done();
    }
  }

  private failConnect(e: unknown) {
    if (e instanceof ApiError && e.kind === 'auth') this.dispatch({ type: 'unauthorized', status: e.status ?? 401, message: e.message });
    else this.dispatch({ type: 'unreachable', message: asBody(e).message });
  }

  /** Reads the probe, topology and process list. */
  async connect(): Promise<void> {
    const api = this.api;
    if (!api) return;
    this.dispatch({ type: 'connect' });
    await this.tracked(async () => {
      try {
        const [probe, topology, processes] = await Promise.all([api.probe(), api.topology(), api.processes()]);
        this.dispatch({ type: 'connected', probe, topology, processes });
      } catch (e) {
        this.failConnect(e);
      }
    });
  }

  async refreshProcesses(): Promise<void> {
    const api = this.api;
    if (!api) return;
    await this.tracked(async () => {
      try {
        this.dispatch({ type: 'processes', processes: await api.processes() });
      } catch (e) {
        if (e instanceof ApiError && e.kind === 'auth') this.failConnect(e);
        else this.dispatch({ type: 'unreachable', message: asBody(e).message });
      }
    });
  }

  async start(req: StartRecordingRequest): Promise<void> {
    const api = this.api;
    if (!api || this.state.phase.kind !== 'ready') return;
    this.dispatch({ type: 'start' });
    await this.tracked(async () => {
      try {
        const recording = await api.start(req);
        this.dispatch({ type: 'started', recording });
        this.unwatch = api.watch(recording.id, {
          onWindow: (w) => this.queue(w),
          onEnd: (end) => {
            this.unwatch = null;
            this.flush();
            this.dispatch({ type: 'end', end });
            if (this.state.phase.kind === 'downloading') void this.download();
          },
          onLost: (message) => {
            this.unwatch = null;
            this.flush();
            this.dispatch({ type: 'lost', message });
          },
        });
      } catch (e) {
        if (e instanceof ApiError && e.kind === 'auth') this.failConnect(e);
        else if (e instanceof ApiError && e.kind === 'unreachable') this.dispatch({ type: 'unreachable', message: e.message });
        else this.dispatch({ type: 'start-failed', error: asBody(e) });
      }
    });
  }

  async stop(): Promise<void> {
    const api = this.api;
    const p = this.state.phase;
    if (!api || p.kind !== 'running') return;
    this.dispatch({ type: 'stop' });
    await this.tracked(async () => {
      try {
        await api.stop(p.recording.id);
      } catch (e) {
        // The end message (or a closed socket) settles the state; an auth failure here means the server restarted.
        if (e instanceof ApiError && e.kind === 'auth') this.failConnect(e);
      }
    });
  }

  private async download(): Promise<void> {
    const api = this.api;
    const p = this.state.phase;
    if (!api || p.kind !== 'downloading') return;
    await this.tracked(async () => {
      try {
        const bytes = await api.trace(p.recording.id);
        this.hooks.beforeTrace?.(p.recording.id, p.end, bytes, this.state.latest);
        await this.hooks.onTrace?.(recordingTraceName(p.recording.id), bytes, p.recording.id);
        this.dispatch({ type: 'trace-opened' });
      } catch (e) {
        this.dispatch({ type: 'trace-failed', error: asBody(e) });
      }
    });
  }

  /** Back to the form after a recording ended. */
  reset() {
    this.dispatch({ type: 'reset' });
  }

  private queue(w: LiveWindow) {
    this.pending.push(w);
    if (this.timer !== null) return;
    // The first window renders at once; later ones at most every RENDER_INTERVAL_MS.
    const set = this.hooks.setTimer ?? ((fn: () => void, ms: number) => setTimeout(fn, ms));
    if (this.state.latest === null) this.flush();
    this.timer = set(() => {
      this.timer = null;
      this.flush();
    }, RENDER_INTERVAL_MS);
  }

  private flush() {
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    this.dispatch({ type: 'windows', windows: batch });
  }

  dispose() {
    this.unwatch?.();
    this.unwatch = null;
    if (this.timer !== null) (this.hooks.clearTimer ?? ((t: unknown) => clearTimeout(t as ReturnType<typeof setTimeout>)))(this.timer);
    this.timer = null;
    this.disposed = true;
    this.listeners.clear();
  }
}
