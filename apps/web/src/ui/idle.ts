/**
 * The app's idle signal, for tests and automation (tests never sleep): the state is written to
 * `document.body.dataset.state` after React has committed the view for it, and
 * `window.__numascopeIdle` is true whenever nothing is loading. `window.__numascopeWhenIdle()`
 * resolves with the state once the app is idle. `document.body.dataset.loads` counts finished
 * loads (ready or error), so a test can wait for the next one.
 *
 * Work started after a trace is on screen (a Worker query for a view, a range, a zoom) counts
 * too: between `beginWork()` and its `endWork()` (called once its result is committed) the
 * published state is 'loading', without counting as a new load.
 */
export type AppState = 'loading' | 'ready' | 'error' | 'empty';

declare global {
  interface Window {
    __numascopeIdle?: boolean;
    __numascopeWhenIdle?: () => Promise<AppState>;
  }
}

let waiters: Array<(s: AppState) => void> = [];
let current: AppState = 'loading';
let busy = 0;
let finishedLoads = 0;

function effective(): AppState {
  return busy > 0 && current !== 'loading' ? 'loading' : current;
}

function publish() {
  const state = effective();
  document.body.dataset.state = state;
  document.body.dataset.busy = String(busy);
  window.__numascopeIdle = state !== 'loading';
  if (state !== 'loading') {
    const w = waiters;
    waiters = [];
    for (const resolve of w) resolve(state);
  }
}

export function publishState(state: AppState) {
  const finishedLoad = current === 'loading' && (state === 'ready' || state === 'error');
  current = state;
  if (finishedLoad) {
    finishedLoads++;
    document.body.dataset.loads = String(finishedLoads);
  }
  publish();
}

/** Marks the start of asynchronous work the screen waits on; call the returned function once its result is on screen (idempotent). */
export function beginWork(): () => void {
  busy++;
  publish();
  let done = false;
  return () => {
    if (done) return;
    done = true;
    busy--;
    publish();
  };
}

export function installIdleSignal() {
  window.__numascopeIdle = effective() !== 'loading';
  window.__numascopeWhenIdle = () =>
    effective() !== 'loading' ? Promise.resolve(effective()) : new Promise((resolve) => waiters.push(resolve));
}
