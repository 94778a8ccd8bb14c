/**
 * The app's idle signal, for tests and automation (tests never sleep): the state is written to
 * `document.body.dataset.state` after React has committed the view for it, and
 * `window.__numascopeIdle` is true whenever nothing is loading. `window.__numascopeWhenIdle()`
 * resolves with the state once the app is idle. `document.body.dataset.loads` counts finished
 * loads (ready or error), so a test can wait for the next one.
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
let finishedLoads = 0;

export function publishState(state: AppState) {
  const finishedLoad = current === 'loading' && (state === 'ready' || state === 'error');
  current = state;
  if (finishedLoad) {
    finishedLoads++;
    document.body.dataset.loads = String(finishedLoads);
  }
  document.body.dataset.state = state;
  window.__numascopeIdle = state !== 'loading';
  if (state !== 'loading') {
    const w = waiters;
    waiters = [];
    for (const resolve of w) resolve(state);
  }
}

export function installIdleSignal() {
  window.__numascopeIdle = current !== 'loading';
  window.__numascopeWhenIdle = () =>
    current !== 'loading' ? Promise.resolve(current) : new Promise((resolve) => waiters.push(resolve));
}
