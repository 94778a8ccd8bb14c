/**
 * The trace Worker: every request is handled by worker-core.ts (opening traces, aggregate
 * queries, the policy engine with progress messages); this file only wires it to the Worker.
 */
import { createWorkerHandler } from './worker-core';
import type { WorkerRequest } from './parse';

const handle = createWorkerHandler((reply, transfer) => self.postMessage(reply, { transfer }));

self.onmessage = (event: MessageEvent<WorkerRequest>) => handle(event.data);
