/**
 * The trace Worker: every request is handled by handler.ts (opening traces, aggregate
 * queries, the policy engine with progress messages); this file only wires it to the Worker.
 */
import { zstdReady } from '@numascope/policy-engine';
import { createWorkerHandler } from './handler';
import type { WorkerRequest } from './protocol';

const handle = createWorkerHandler((reply, transfer) => self.postMessage(reply, { transfer }));

// The WebAssembly ZSTD decoder starts in a few ms; requests wait for it (in order: each waits on
// the same promise) so that a compressed trace is decoded at its speed, not fzstd's.
const ready = zstdReady();
self.onmessage = (event: MessageEvent<WorkerRequest>) => void ready.then(() => handle(event.data));
