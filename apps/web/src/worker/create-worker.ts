/**
 * Starts the trace Worker from its own file next to the app (the normal build). The single-file
 * HTML report replaces this module with create-worker.inline.ts (vite.config.ts, mode `report`).
 */
export function createTraceWorker(): Worker {
  return new Worker(new URL('./trace.worker.ts', import.meta.url), { type: 'module' });
}
