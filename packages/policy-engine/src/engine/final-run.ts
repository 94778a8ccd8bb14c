/**
 * A policy's final run (the placement its replay ended on, simulated window by window) and the
 * placement comparison both the replay pass (run.ts) and the steady state (steady.ts) use:
 * below both, so neither imports the other for it.
 */
import type { MachineModel, Placement, WindowMetrics } from '../model/contract.js';

export interface FinalRun {
  placement: Placement;
  machine: MachineModel;
  /** Metrics by window index, with the window length they were simulated for. */
  byWindow: Map<number, { windowUs: number; metrics: WindowMetrics }>;
}

/** Equal contents of two typed arrays, 4 bytes at a time where both are aligned. */
function sameBytes(a: Int16Array | Uint8Array, b: Int16Array | Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  const n = a.byteLength;
  const words = n >> 2;
  if (a.byteOffset % 4 === 0 && b.byteOffset % 4 === 0) {
    const x = new Int32Array(a.buffer, a.byteOffset, words);
    const y = new Int32Array(b.buffer, b.byteOffset, words);
    for (let i = 0; i < words; i++) if (x[i] !== y[i]) return false;
    const u = new Uint8Array(a.buffer, a.byteOffset, n);
    const v = new Uint8Array(b.buffer, b.byteOffset, n);
    for (let i = words * 4; i < n; i++) if (u[i] !== v[i]) return false;
    return true;
  }
  const u = new Uint8Array(a.buffer, a.byteOffset, n);
  const v = new Uint8Array(b.buffer, b.byteOffset, n);
  for (let i = 0; i < n; i++) if (u[i] !== v[i]) return false;
  return true;
}

/** Same threads, pages and replication (replicated compared as 0/1 bytes: the engine writes only 0 and 1). */
export function samePlacement(a: Placement, b: Placement): boolean {
  if (a === b) return true;
  // Replica sets are never changed in place (contract): compared by identity.
  return sameBytes(a.threadNode, b.threadNode) && sameBytes(a.pageNode, b.pageNode) && sameBytes(a.replicated, b.replicated) && a.replicas === b.replicas;
}
