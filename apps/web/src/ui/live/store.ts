/** The page's one live session: it outlives the Live screen, so a recording's state survives a visit to the trace views. */
import { beginWork } from '../idle';
import { LiveApi, browserDeps } from './client';
import { DesktopLiveApi, desktopBridge } from './desktop';
import { LiveSession } from './session';
import { LiveLoop } from './loop';
import { TraceWorkerClient } from '../../worker/client';
import { pageToken } from './token';

let session: LiveSession | null = null;
let loop: LiveLoop | null = null;
let sessionToken: string | null | undefined;
type TraceHandler = (name: string, bytes: ArrayBuffer, recording: string) => Promise<void> | void;
let onTrace: TraceHandler = () => {};

/** Where a finished recording's trace goes (App opens it in the normal views and puts its id in the URL). */
export function setTraceHandler(fn: TraceHandler) {
  onTrace = fn;
}

export function liveSession(): LiveSession {
  // Inside the desktop app the native API replaces numascope serve (no token needed).
  const desktop = desktopBridge();
  const token = desktop ? 'desktop' : pageToken();
  if (session && sessionToken === token) return session;
  session?.dispose();
  loop?.dispose();
  loop = null;
  sessionToken = token;
  const api = desktop ? new DesktopLiveApi(desktop) : token ? new LiveApi(token, browserDeps()) : null;
  const s = new LiveSession(api, {
    work: beginWork,
    // The loop's second recording stays on the Live screen with the before/after table (its
    // trace is one link away there); every other recording opens in the views.
    onTrace: (name, bytes, recording) => (loop?.isAfter(recording) ? undefined : onTrace(name, bytes, recording)),
    // The views' Worker takes the buffer: the loop keeps a copy of the traces it needs.
    beforeTrace: (recording, end, bytes, latest) => {
      if (loop?.wants(end)) loop.traceArrived(recording, end, bytes.slice(0), latest, (s.state.topology?.nodes ?? []).map((x) => x.id));
    },
  });
  session = s;
  if (api) loop = new LiveLoop(s, api, () => new TraceWorkerClient(), beginWork);
  return s;
}

/** The live loop of the page's session (null without a server or desktop API). */
export function liveLoop(): LiveLoop | null {
  liveSession();
  return loop;
}
