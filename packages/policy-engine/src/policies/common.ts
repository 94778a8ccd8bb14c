/** Helpers shared by the policies in this folder. */
import type { AccessWindow, Decision, Placement, PolicyRun, ReplayInput, ReplayOptions, WindowMetrics } from '../model/contract.js';

/**
 * Length of a window as the simulator takes it, µs: its recorded length (the last one may be
 * shorter than input.windowUs). A window built from a trace carries its closed loop (`loop`),
 * which decides its time under any placement; a hand-built one takes this length and its stall
 * share instead (simulate.ts, defaultLoop).
 */
export function windowLengthUs(window: AccessWindow): number {
  return Math.max(1, window.endUs - window.startUs);
}

/** "0: 120, 1: 4" — counts per node, by kernel node id. */
export function perNode(input: ReplayInput, counts: ArrayLike<number>): string {
  const parts: string[] = [];
  for (let i = 0; i < counts.length; i++) parts.push(`node ${input.machine.nodeIds[i]}: ${counts[i]}`);
  return parts.join(', ');
}

export function countByNode(nodes: Int16Array, nodeCount: number): Int32Array {
  const out = new Int32Array(nodeCount);
  for (let i = 0; i < nodes.length; i++) if (nodes[i]! >= 0) out[nodes[i]!]!++;
  return out;
}

export function pagesDiffering(a: Int16Array, b: Int16Array): number {
  let k = 0;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) k++;
  return k;
}

export function mib(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/**
 * The threads of a policy that places pages only: where the recording had them in each window (the
 * program's own pinning and the scheduler's moves happen under any page policy), else where they
 * started.
 */
export function recordedThreads(input: ReplayInput): (window: number) => Int16Array {
  return (w) => input.observedThreadNode?.[w] ?? input.initial.threadNode;
}

/**
 * Replays a placement that changes only in its threads (pages fixed for the whole replay):
 * simulate every window with `threadNodeAt(w)` and `pages`.
 */
export function* replayFixedPages(
  policy: string,
  input: ReplayInput,
  options: ReplayOptions,
  pages: { pageNode: Int16Array; replicated: Uint8Array },
  threadNodeAt: (window: number) => Int16Array,
  decisions: Decision[],
  migratedPages: number,
): PolicyRun {
  const windows: WindowMetrics[] = [];
  const threadNodeByWindow: Int16Array[] = [];
  let threadNode = input.initial.threadNode;
  for (let w = 0; w < input.windows.length; w++) {
    const window: AccessWindow = yield w;
    threadNode = threadNodeAt(window.index);
    const placement: Placement = { threadNode, pageNode: pages.pageNode, replicated: pages.replicated };
    windows.push(options.simulate(input.machine, window, placement, windowLengthUs(window), input.pageBytes));
    threadNodeByWindow.push(threadNode);
  }
  return {
    policy,
    windows,
    threadNodeByWindow,
    finalPlacement: { threadNode: threadNode.slice(), pageNode: pages.pageNode, replicated: pages.replicated },
    migratedPages,
    migratedBytes: migratedPages * input.pageBytes,
    decisions,
    placedAtAllocation: true,
  };
}
