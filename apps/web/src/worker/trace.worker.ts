/**
 * The trace Worker: every request is handled by handler.ts (opening traces, aggregate
 * queries, the policy engine with progress messages); this file only wires it to the Worker.
 */
import { createWorkerHandler } from './handler';
import type { WorkerRequest } from './protocol';

const handle = createWorkerHandler((reply, transfer) => self.postMessage(reply, { transfer }));

self.onmessage = (event: MessageEvent<WorkerRequest>) => handle(event.data);
