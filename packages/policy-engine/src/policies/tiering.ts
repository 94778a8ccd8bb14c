/**
 * tiering: memory tiering as a what-if (Linux memory tiers: demotion of cold pages to a lower tier
 * on reclaim, promotion of hot pages with NUMA balancing's memory-tiering mode; docs/policies.md,
 * "Tiering"). Here its converged state, with the capacity of every node respected: pages ranked by
 * their accesses over the recording, hottest first, each on the fast-tier node nearest (idle
 * latency) to the node that accessed it most, while that node has room; then the next fast-tier
 * node; then the lower tiers, nearest first. Pages never accessed (cold) go to the lower tiers
 * first. A node's room is its memory size (MachineModel.memoryBytes) in pages; unknown = no limit,
 * said in the decision. Placed at allocation: nothing migrates in the replay. Threads are where the
 * recording had them.
 */
import type { Policy, ReplayInput } from '../model/contract.js';
import { definePolicy } from '../engine/run.js';
import { machineTiers } from '../machine/model.js';
import { countByNode, perNode, recordedThreads, replayFixedPages } from './common.js';

export interface TieringPlacement {
  pageNode: Int16Array;
  /** Accessed pages that found no room on the fast tier. */
  hotOnSlow: number;
  /** Pages placed over a node's capacity (every node full). */
  overCapacity: number;
  fast: number[];
  slow: number[];
  capacityKnown: boolean;
}

export function tieringPlacement(input: ReplayInput): TieringPlacement {
  const machine = input.machine;
  const n = machine.nodeCount;
  const tiers = machineTiers(machine);
  const top = Math.min(...Array.from(tiers));
  const fast: number[] = [];
  const slow: number[] = [];
  for (let i = 0; i < n; i++) (tiers[i] === top ? fast : slow).push(i);

  // Heat and main accessor per page (one pass over the windows).
  const heat = new Float64Array(input.pageCount);
  const byNode = new Float64Array(input.pageCount * n);
  const threadsAt = recordedThreads(input);
  for (const window of input.windows) {
    const threadNode = threadsAt(window.index);
    for (let k = 0; k < window.thread.length; k++) {
      const p = window.page[k]!;
      const a = window.loads[k]! + window.stores[k]!;
      heat[p]! += a;
      const c = threadNode[window.thread[k]!]!;
      if (c >= 0) byNode[p * n + c]! += a;
    }
  }
  const room = new Float64Array(n);
  let capacityKnown = true;
  for (let i = 0; i < n; i++) {
    const bytes = machine.memoryBytes.value[i]!;
    if (Number.isFinite(bytes)) room[i] = Math.floor(bytes / input.pageBytes);
    else {
      room[i] = Infinity;
      capacityKnown = false;
    }
  }
  const idle = machine.idleLatencyNs.value;
  const nearest = (from: number, side: number[]) => [...side].sort((a, b) => idle[from * n + a]! - idle[from * n + b]! || a - b);
  const accessor = (p: number): number => {
    let best = -1;
    let bestV = 0;
    for (let c = 0; c < n; c++) if (byNode[p * n + c]! > bestV) ((bestV = byNode[p * n + c]!), (best = c));
    return best >= 0 ? best : Math.max(0, input.initial.pageNode[p]!);
  };
  const order = Array.from({ length: input.pageCount }, (_, p) => p).sort((a, b) => heat[b]! - heat[a]! || a - b);
  const pageNode = new Int16Array(input.pageCount);
  let hotOnSlow = 0;
  let overCapacity = 0;
  for (const p of order) {
    const from = accessor(p);
    const hot = heat[p]! > 0;
    const candidates = hot || slow.length === 0 ? [...nearest(from, fast), ...nearest(from, slow)] : [...nearest(from, slow), ...nearest(from, fast)];
    const target = candidates.find((i) => room[i]! >= 1);
    if (target === undefined) {
      pageNode[p] = candidates[0]!;
      overCapacity++;
      continue;
    }
    room[target]!--;
    pageNode[p] = target;
    if (hot && tiers[target] !== top) hotOnSlow++;
  }
  return { pageNode, hotOnSlow, overCapacity, fast, slow, capacityKnown };
}

export const tieringPolicy: Policy = definePolicy({
  id: 'tiering',
  description:
    'Memory tiering (Linux memory tiers, demotion and NUMA-balancing promotion), converged: the hottest pages on the fast tier near their main accessor while it has room, the rest and the never-accessed pages on the lower tiers; node capacities respected; threads where the recording had them.',
  *run(input, options) {
    const t = tieringPlacement(input);
    const ids = (xs: number[]) => xs.map((i) => input.machine.nodeIds[i]).join(',');
    return yield* replayFixedPages(
      'tiering',
      input,
      options,
      { pageNode: t.pageNode, replicated: new Uint8Array(input.pageCount) },
      recordedThreads(input),
      [
        {
          window: 0,
          kind: 'migrate',
          explanation:
            `hot pages on the fast tier (nodes ${ids(t.fast)}), cold on ${t.slow.length > 0 ? `the lower tiers (nodes ${ids(t.slow)})` : 'the fast tier (no lower tier)'}: ` +
            `${perNode(input, countByNode(t.pageNode, input.machine.nodeCount))}; ${t.hotOnSlow} accessed pages found no room on the fast tier` +
            (t.overCapacity > 0 ? `; ${t.overCapacity} pages over every node's capacity` : '') +
            (t.capacityKnown ? '' : '; some node sizes are unknown: no capacity limit on those'),
          pages: input.pageCount,
          toNodes: [...t.fast],
        },
      ],
      0,
    );
  },
});
