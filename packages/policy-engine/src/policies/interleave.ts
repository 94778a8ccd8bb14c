/**
 * interleave: `numactl --interleave=NODES` at launch. Pages ordered by virtual address; the i-th
 * page goes to nodes[i mod k]. Deterministic. Pages are placed at allocation: nothing migrates.
 * Threads are where the recording had them, window by window.
 */
import type { NodeIndex, Policy, ReplayInput } from '../model/contract.js';
import { EngineError } from '../model/errors.js';
import { definePolicy } from '../engine/run.js';
import { countByNode, perNode, recordedThreads, replayFixedPages } from './common.js';

/** Page rows in virtual-address order (row order when addresses are unknown). */
export function pagesByAddress(input: ReplayInput): Int32Array {
  const order = new Int32Array(input.pageCount);
  for (let i = 0; i < order.length; i++) order[i] = i;
  const address = input.pageAddress;
  if (!address) return order;
  let sorted = true;
  for (let i = 1; i < address.length && sorted; i++) if (address[i]! < address[i - 1]!) sorted = false;
  if (sorted) return order;
  return Int32Array.from(Array.from(order).sort((a, b) => (address[a]! < address[b]! ? -1 : address[a]! > address[b]! ? 1 : a - b)));
}

export function interleavePageNodes(input: ReplayInput, nodes: readonly NodeIndex[]): Int16Array {
  const order = pagesByAddress(input);
  const pageNode = new Int16Array(input.pageCount);
  for (let i = 0; i < order.length; i++) pageNode[order[i]!] = nodes[i % nodes.length]!;
  return pageNode;
}

/** Interleave over `nodes` (node indices); all nodes when omitted. */
export function interleavePolicy(nodes?: readonly NodeIndex[]): Policy {
  const id = nodes ? `interleave:${nodes.join(',')}` : 'interleave';
  return definePolicy({
    id,
    description: 'numactl --interleave: pages in address order dealt round-robin over the nodes (all nodes, or a given set); threads where the recording had them.',
    *run(input, options) {
      const set = nodes ?? Array.from({ length: input.machine.nodeCount }, (_, i) => i);
      if (set.length === 0) throw new EngineError('bad-option', 'interleave needs at least one node');
      for (const node of set) {
        if (!Number.isInteger(node) || node < 0 || node >= input.machine.nodeCount) {
          throw new EngineError('bad-option', `interleave node index ${node} is not a node of "${input.machine.name}" (0..${input.machine.nodeCount - 1})`);
        }
      }
      const pageNode = interleavePageNodes(input, set);
      return yield* replayFixedPages(
        id,
        input,
        options,
        { pageNode, replicated: new Uint8Array(input.pageCount) },
        recordedThreads(input),
        [
          {
            window: 0,
            kind: 'interleave',
            explanation:
              `${input.pageCount} pages interleaved in address order over nodes ${set.map((i) => input.machine.nodeIds[i]).join(',')} at allocation: ` +
              perNode(input, countByNode(pageNode, input.machine.nodeCount)),
            pages: input.pageCount,
            toNodes: [...set],
          },
        ],
        0,
      );
    },
  });
}

export const interleaveAllPolicy: Policy = interleavePolicy();
