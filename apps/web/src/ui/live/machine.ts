/** The live screen's state machine: a pure reducer, driven by LiveSession (session.ts). */
import type { ErrorBody, LiveEnd, LiveWindow, Machine, ProcessInfo, Probe, Recording } from '@numascope/protocol';

/** Windows kept for the chart (the server keeps the last 240 too: one minute). */
export const MAX_WINDOWS = 240;

export type Phase =
  | { kind: 'no-token' }
  | { kind: 'connecting' }
  /** 401 / 403: the token is wrong or stale (a restarted server has a new one), or the page is on another origin. */
  | { kind: 'unauthorized'; status: number; message: string }
  /** The API did not answer at all. */
  | { kind: 'unreachable'; message: string }
  | { kind: 'ready' }
  | { kind: 'starting' }
  | { kind: 'running'; recording: Recording }
  | { kind: 'stopping'; recording: Recording }
  /** The recording ended (end message); the trace is being downloaded. */
  | { kind: 'downloading'; recording: Recording; end: LiveEnd }
  /** The trace was downloaded and handed to the views. */
  | { kind: 'ended'; recording: Recording; end: LiveEnd }
  /** The recording failed (its end status), or the trace could not be downloaded. */
  | { kind: 'failed'; recording: Recording | null; error: ErrorBody }
  /** The WebSocket closed before the end message. */
  | { kind: 'gone'; recording: Recording; message: string };

export interface LiveState {
  phase: Phase;
  probe: Probe | null;
  topology: Machine | null;
  processes: ProcessInfo[] | null;
  /** An error of the last start request (bad command, pid not found, permission…), shown by the form. */
  startError: ErrorBody | null;
  windows: LiveWindow[];
  latest: LiveWindow | null;
}

export type LiveEvent =
  | { type: 'connect' }
  | { type: 'connected'; probe: Probe; topology: Machine; processes: ProcessInfo[] }
  | { type: 'unauthorized'; status: number; message: string }
  | { type: 'unreachable'; message: string }
  | { type: 'processes'; processes: ProcessInfo[] }
  | { type: 'start' }
  | { type: 'started'; recording: Recording }
  | { type: 'start-failed'; error: ErrorBody }
  | { type: 'windows'; windows: LiveWindow[] }
  | { type: 'stop' }
  | { type: 'end'; end: LiveEnd }
  | { type: 'lost'; message: string }
  | { type: 'trace-opened' }
  | { type: 'trace-failed'; error: ErrorBody }
  | { type: 'reset' };

export function initialState(hasToken: boolean): LiveState {
  return {
    phase: hasToken ? { kind: 'connecting' } : { kind: 'no-token' },
    probe: null,
    topology: null,
    processes: null,
    startError: null,
    windows: [],
    latest: null,
  };
}

function recordingOf(p: Phase): Recording | null {
  return p.kind === 'running' || p.kind === 'stopping' || p.kind === 'downloading' || p.kind === 'ended' || p.kind === 'gone'
    ? p.recording
    : p.kind === 'failed'
      ? p.recording
      : null;
}

export function liveReducer(s: LiveState, e: LiveEvent): LiveState {
  const p = s.phase;
  switch (e.type) {
    case 'connect':
      return p.kind === 'no-token' ? s : { ...initialState(true) };
    case 'connected':
      return p.kind === 'connecting' ? { ...s, phase: { kind: 'ready' }, probe: e.probe, topology: e.topology, processes: e.processes } : s;
    case 'unauthorized':
      return { ...s, phase: { kind: 'unauthorized', status: e.status, message: e.message } };
    case 'unreachable':
      return { ...s, phase: { kind: 'unreachable', message: e.message } };
    case 'processes':
      return { ...s, processes: e.processes };
    case 'start':
      return p.kind === 'ready' ? { ...s, phase: { kind: 'starting' }, startError: null, windows: [], latest: null } : s;
    case 'started':
      return p.kind === 'starting' ? { ...s, phase: { kind: 'running', recording: e.recording } } : s;
    case 'start-failed':
      return p.kind === 'starting' ? { ...s, phase: { kind: 'ready' }, startError: e.error } : s;
    case 'windows': {
      if (p.kind !== 'running' && p.kind !== 'stopping' && p.kind !== 'downloading') return s;
      const fresh = e.windows.filter((w) => w.recording === p.recording.id || w.recording === '');
      if (fresh.length === 0) return s;
      const lastSeq = s.latest?.seq ?? -1;
      const added = fresh.filter((w) => w.seq > lastSeq);
      if (added.length === 0) return s;
      const windows = s.windows.concat(added);
      return { ...s, windows: windows.length > MAX_WINDOWS ? windows.slice(windows.length - MAX_WINDOWS) : windows, latest: added[added.length - 1]! };
    }
    case 'stop':
      return p.kind === 'running' ? { ...s, phase: { kind: 'stopping', recording: p.recording } } : s;
    case 'end': {
      if (p.kind !== 'running' && p.kind !== 'stopping') return s;
      if (e.end.status === 'failed' || e.end.status === 'running') {
        return {
          ...s,
          phase: {
            kind: 'failed',
            recording: p.recording,
            error: e.end.error ?? { code: 'failed', message: 'the recording failed without saying why' },
          },
        };
      }
      return { ...s, phase: { kind: 'downloading', recording: p.recording, end: e.end } };
    }
    case 'lost':
      return p.kind === 'running' || p.kind === 'stopping' ? { ...s, phase: { kind: 'gone', recording: p.recording, message: e.message } } : s;
    case 'trace-opened':
      return p.kind === 'downloading' ? { ...s, phase: { kind: 'ended', recording: p.recording, end: p.end } } : s;
    case 'trace-failed':
      return p.kind === 'downloading' ? { ...s, phase: { kind: 'failed', recording: p.recording, error: e.error } } : s;
    case 'reset':
      if (p.kind === 'ended' || p.kind === 'failed' || p.kind === 'gone') return { ...s, phase: { kind: 'ready' }, windows: [], latest: null };
      return s;
  }
}

export { recordingOf };

/** One line on why the recording ended, from its summary. Says plainly when the process exited by itself. */
export function endReason(end: LiveEnd): string {
  const r = end.summary?.stopReason;
  if (r === 'process-exit') {
    const code = end.summary?.exitCode;
    return `The process exited${code !== undefined && code !== null ? ` (exit code ${code})` : ''}: the recording ended by itself.`;
  }
  if (r === 'signal') return 'Stopped on request.';
  if (r === 'duration') return 'The chosen duration ran out.';
  return r ? `The recording ended (${r}).` : 'The recording ended.';
}
