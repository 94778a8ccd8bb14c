/** The page's one live session: it outlives the Live screen, so a recording's state survives a visit to the trace views. */
import { beginWork } from '../idle';
import { LiveApi, browserDeps } from './client';
import { LiveSession } from './session';
import { pageToken } from './token';

let session: LiveSession | null = null;
let sessionToken: string | null | undefined;
let onTrace: (name: string, bytes: ArrayBuffer) => Promise<void> | void = () => {};

/** Where a finished recording's trace goes (App opens it in the normal views). */
export function setTraceHandler(fn: (name: string, bytes: ArrayBuffer) => Promise<void> | void) {
  onTrace = fn;
}

export function liveSession(): LiveSession {
  const token = pageToken();
  if (session && sessionToken === token) return session;
  session?.dispose();
  sessionToken = token;
  session = new LiveSession(token ? new LiveApi(token, browserDeps()) : null, {
    work: beginWork,
    onTrace: (name, bytes) => onTrace(name, bytes),
  });
  return session;
}
