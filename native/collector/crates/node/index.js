// Loads the native addon built by `npm run build` (cargo build + copy to numascope.node) and adds
// the JavaScript-side conveniences: AbortSignal support for record() and bench(), startRecording()
// and startBench().
'use strict';
const path = require('node:path');
const candidates = [
  process.env.NUMASCOPE_NODE_ADDON,
  path.join(__dirname, 'numascope.node'),
].filter(Boolean);
let native;
let lastError;
for (const p of candidates) {
  try {
    native = require(p);
    break;
  } catch (e) {
    lastError = e;
  }
}
if (!native) {
  throw new Error(
    `numascope native addon not found (tried ${candidates.join(', ')}): run \`npm run build\` in native/collector/crates/node. ${lastError}`,
  );
}

/**
 * `onWindow` for the native layer: called with each live window; an exception thrown by the
 * user's callback is reported on stderr instead of taking the process down (it runs from a
 * threadsafe function, where an uncaught exception is fatal).
 */
function windowCallback(onWindow) {
  if (onWindow === undefined || onWindow === null) return undefined;
  if (typeof onWindow !== 'function') throw new TypeError('record: onWindow must be a function');
  return (w) => {
    try {
      onWindow(w);
    } catch (e) {
      process.emitWarning(`numascope: the onWindow callback threw: ${e && e.stack ? e.stack : e}`);
    }
  };
}

/**
 * record(options): Promise<RecordResult>. `options.signal` (an AbortSignal) stops the recording
 * early; the Promise still resolves with the summary of the valid trace written so far.
 * `options.onWindow(window)` receives the collector's live windows (every `windowMs`, default
 * 250 ms, and a last one with `final: true`), all of them before the Promise settles.
 */
function record(options) {
  const { signal, onWindow, ...rest } = options ?? {};
  const token = new native.StopToken();
  const promise = native.record(rest, token, windowCallback(onWindow));
  if (signal) {
    if (signal.aborted) token.stop();
    else {
      const onAbort = () => token.stop();
      signal.addEventListener('abort', onAbort, { once: true });
      promise.then(
        () => signal.removeEventListener('abort', onAbort),
        () => signal.removeEventListener('abort', onAbort),
      );
    }
  }
  return promise;
}

/** startRecording(options): { result: Promise<RecordResult>, stop(): void }. */
function startRecording(options) {
  const token = new native.StopToken();
  const { signal: _ignored, onWindow, ...rest } = options ?? {};
  const result = native.record(rest, token, windowCallback(onWindow));
  return { result, stop: () => token.stop() };
}

/**
 * `onProgress` for the native layer: an exception thrown by the user's callback is reported on
 * stderr instead of taking the process down.
 */
function progressCallback(onProgress) {
  if (onProgress === undefined || onProgress === null) return undefined;
  if (typeof onProgress !== 'function') throw new TypeError('bench: onProgress must be a function');
  return (p) => {
    try {
      onProgress(p);
    } catch (e) {
      process.emitWarning(`numascope: the onProgress callback threw: ${e && e.stack ? e.stack : e}`);
    }
  };
}

/**
 * bench(options?): Promise<BenchOutcome>, `numascope bench` on a worker thread. `options.signal`
 * (an AbortSignal) stops it after the current repetition; the Promise still resolves, with what
 * was measured (`machine.calibration.partial`). `options.onProgress(p)` receives
 * `{ step, steps, what, elapsedS, remainingS }` as each step starts. Bad options reject.
 */
function bench(options) {
  const { signal, onProgress, ...rest } = options ?? {};
  const token = new native.StopToken();
  if (signal?.aborted) token.stop();
  let promise;
  try {
    promise = native.bench(rest, token, progressCallback(onProgress));
  } catch (e) {
    // Bad options reject the Promise, as a failed run does.
    return Promise.reject(e);
  }
  if (signal && !signal.aborted) {
    const onAbort = () => token.stop();
    signal.addEventListener('abort', onAbort, { once: true });
    const off = () => signal.removeEventListener('abort', onAbort);
    promise.then(off, off);
  }
  return promise;
}

/** startBench(options?): { result: Promise<BenchOutcome>, stop(): void }. */
function startBench(options) {
  const token = new native.StopToken();
  const { signal: _ignored, onProgress, ...rest } = options ?? {};
  const result = native.bench(rest, token, progressCallback(onProgress));
  return { result, stop: () => token.stop() };
}

module.exports = {
  probe: native.probe,
  topology: native.topology,
  apply: native.apply,
  runPlan: (planJson, options) => native.runPlan(planJson, options ?? {}),
  stopRecordings: native.stopRecordings,
  recordLimits: native.recordLimits,
  StopToken: native.StopToken,
  record,
  startRecording,
  bench,
  startBench,
};
