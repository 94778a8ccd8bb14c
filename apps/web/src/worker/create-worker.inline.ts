/**
 * The HTML report's trace Worker: its code is inlined into the page (Vite `?worker&inline`, a
 * Blob URL), because a report opened from a file:// URL can load nothing beside itself.
 */
import TraceWorker from './trace.worker.ts?worker&inline';

export function createTraceWorker(): Worker {
  return new TraceWorker();
}
