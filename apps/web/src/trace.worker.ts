/** Parses trace files off the UI thread. Receives the file's bytes (transferred), posts a summary or an error. */
import { parseTraceBytes } from './parse';
import type { WorkerReply, WorkerRequest } from './parse';

self.onmessage = (event: MessageEvent<WorkerRequest>) => {
  const { id, bytes } = event.data;
  const reply: WorkerReply = { id, ...parseTraceBytes(new Uint8Array(bytes)) };
  self.postMessage(reply);
};
