/**
 * Which screen the app shows and which trace load it belongs to: a pure reducer, driven by App
 * (fetching a URL, reading a file, the Worker's answer, back/forward, the desktop shell, live mode).
 *
 * Every load gets a token, the newest one wins: an event of an older load (a download finishing
 * after the user opened another file) is ignored, so a slow answer never replaces a newer screen.
 */
import type { TraceSummary } from '@numascope/policy-engine';
import type { LoadFailure, OpenResult, TraceOverview } from '../worker/protocol';
import type { AppState } from './idle';
import type { LoadingState } from './views/LoadingView';

export type Screen =
  | { kind: 'landing' }
  | { kind: 'live' }
  | ({ kind: 'loading' } & LoadingState)
  | { kind: 'ready'; source: string; summary: TraceSummary; overview: TraceOverview; token: number }
  | { kind: 'error'; source: string; error: LoadFailure };

export interface LoadState {
  screen: Screen;
  /** Token of the newest load; 0 before the first. */
  token: number;
  /**
   * The source (URL or file name) of load `token`; null when the newest token is not a load. The
   * load goes on while another screen (Live) is shown, and its answer replaces that screen.
   */
  source: string | null;
  /**
   * The ?trace= URL of what is shown or loading: null for a picked, dropped or live-recorded file
   * (or nothing), undefined before the address bar has been read.
   */
  url: string | null | undefined;
  /** Token of a load whose view crashed while rendering (RenderErrorBoundary). */
  crashed: number | null;
}

export type LoadEvent =
  /**
   * A ?trace= URL (or a live recording's `recording:ID`, the ?recording= parameter) starts
   * downloading; `source` names it on screen when it is not the URL itself.
   */
  | { type: 'open-url'; url: string; source?: string }
  /** A picked or dropped file starts being read. */
  | { type: 'open-file'; name: string; size: number }
  /**
   * Bytes already in hand (a live recording's trace, an HTML report's embedded trace) go straight
   * to the Worker; `url` is the address-bar key that reopens them (`recording:ID`), if any.
   */
  | { type: 'open-bytes'; name: string; size: number; url?: string }
  /** Download progress of load `token`. */
  | { type: 'progress'; token: number; loadedBytes: number; totalBytes: number | null }
  /** Load `token` has its bytes; the Worker parses them. */
  | { type: 'parsing'; token: number; size: number }
  /** The Worker's answer for load `token`. */
  | { type: 'opened'; token: number; result: OpenResult }
  /** Load `token` failed before the Worker had the bytes (HTTP, network, file read). */
  | { type: 'failed'; token: number; error: LoadFailure }
  /** Something failed outside any load (the desktop's file dialog): shown as an error, and no load is current. */
  | { type: 'error'; source: string; error: LoadFailure }
  /** The view of load `token` crashed while rendering. */
  | { type: 'crashed'; token: number }
  /** The Live screen. */
  | { type: 'show-live' }
  /** No trace in the address bar any more (back to the first page): the landing (or home) page, or Live (desktop, ?view=live). */
  | { type: 'home'; live: boolean };

/**
 * The state on start: loading the ?trace= URL if there is one, else Live (in the desktop app, or
 * with a serve token at ?view=live) or the landing page (App draws it as the home page with a token).
 */
export function initialLoadState(traceUrl: string | null, live: boolean): LoadState {
  if (traceUrl) {
    return { screen: { kind: 'loading', source: traceUrl, phase: 'fetching', loadedBytes: 0, totalBytes: null }, token: 0, source: null, url: undefined, crashed: null };
  }
  return { screen: live ? { kind: 'live' } : { kind: 'landing' }, token: 0, source: null, url: undefined, crashed: null };
}

/** Adds a hint when a file that is not a trace has a name that says so. */
export function hintForName(source: string, error: LoadFailure): LoadFailure {
  if (error.code === 'not-zip' && !/\.numascope$/i.test(source.split(/[?#]/)[0] ?? '')) {
    return { ...error, message: `${error.message} (The file is named "${source}"; numascope traces end in .numascope.)` };
  }
  return error;
}

/** The source of load `token` when it is the newest load, else null (the event is stale). */
function current(s: LoadState, token: number): string | null {
  return token === s.token ? s.source : null;
}

export function loadReducer(s: LoadState, e: LoadEvent): LoadState {
  switch (e.type) {
    case 'open-url':
      return { ...s, token: s.token + 1, source: e.source ?? e.url, url: e.url, screen: { kind: 'loading', source: e.source ?? e.url, phase: 'fetching', loadedBytes: 0, totalBytes: null } };
    case 'open-file':
      return { ...s, token: s.token + 1, source: e.name, url: null, screen: { kind: 'loading', source: e.name, phase: 'reading', loadedBytes: 0, totalBytes: e.size } };
    case 'open-bytes':
      return { ...s, token: s.token + 1, source: e.name, url: e.url ?? null, screen: { kind: 'loading', source: e.name, phase: 'parsing', loadedBytes: e.size, totalBytes: e.size } };
    case 'progress': {
      const source = current(s, e.token);
      if (source === null) return s;
      return { ...s, screen: { kind: 'loading', source, phase: 'fetching', loadedBytes: e.loadedBytes, totalBytes: e.totalBytes } };
    }
    case 'parsing': {
      const source = current(s, e.token);
      if (source === null) return s;
      return { ...s, screen: { kind: 'loading', source, phase: 'parsing', loadedBytes: e.size, totalBytes: e.size } };
    }
    case 'opened': {
      const source = current(s, e.token);
      if (source === null) return s;
      const r = e.result;
      return 'summary' in r
        ? { ...s, screen: { kind: 'ready', source, summary: r.summary, overview: r.overview, token: e.token } }
        : { ...s, screen: { kind: 'error', source, error: hintForName(source, r.error) } };
    }
    case 'failed': {
      const source = current(s, e.token);
      if (source === null) return s;
      return { ...s, screen: { kind: 'error', source, error: e.error } };
    }
    case 'error':
      return { ...s, token: s.token + 1, source: null, screen: { kind: 'error', source: e.source, error: e.error } };
    case 'crashed':
      return s.screen.kind === 'ready' && s.screen.token === e.token && s.crashed !== e.token ? { ...s, crashed: e.token } : s;
    case 'show-live':
      return { ...s, screen: { kind: 'live' } };
    case 'home':
      return { ...s, token: s.token + 1, source: null, url: null, screen: e.live ? { kind: 'live' } : { kind: 'landing' } };
  }
}

/**
 * The idle signal's state for what is on screen: the Live screen reports its own, the landing
 * page is `empty` once the sample list is in (or failed), a crashed view is an error.
 */
export function idleStateOf(s: LoadState, live: AppState, samplesLoading: boolean): AppState {
  switch (s.screen.kind) {
    case 'loading':
      return 'loading';
    case 'ready':
      return s.crashed === s.screen.token ? 'error' : 'ready';
    case 'error':
      return 'error';
    case 'live':
      return live;
    case 'landing':
      return samplesLoading ? 'loading' : 'empty';
  }
}
