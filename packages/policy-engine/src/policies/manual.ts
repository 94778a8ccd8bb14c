/**
 * manual: a placement the user gives (dragged together in the app, or a JSON file for the CLI):
 * threads to nodes and page ranges to nodes, applied at the start of the replay. Pages that end up
 * on another node than recorded count as migrated (a live plan would move them).
 */
import type { Decision, NodeIndex, Policy, ReplayInput } from '../model/contract.js';
import { EngineError } from '../model/errors.js';
import { definePolicy } from '../engine/run.js';
import { mib, replayFixedPages } from './common.js';

export interface ManualPlacement {
  /** Thread row index → node index. Threads not listed stay where they started. */
  threads?: Array<{ thread: number; node: NodeIndex }>;
  /**
   * Page ranges → node index. A range is either virtual addresses [startAddress, endAddress)
   * (bigint, or a "0x…" string) or page row indices [firstPage, lastPage] inclusive. Later ranges win.
   */
  pages?: Array<{ startAddress: bigint | string; endAddress: bigint | string; node: NodeIndex } | { firstPage: number; lastPage: number; node: NodeIndex }>;
}

function toBig(v: bigint | string, what: string): bigint {
  try {
    return typeof v === 'bigint' ? v : BigInt(v);
  } catch {
    throw new EngineError('bad-placement', `${what} ${JSON.stringify(v)} is not an address (use "0x…" or a bigint)`);
  }
}

export function manualPolicy(spec: ManualPlacement): Policy {
  return definePolicy({
    id: 'manual',
    description: 'A placement given by the user: threads to nodes and page ranges to nodes, applied at the start.',
    *run(input: ReplayInput, options) {
      const n = input.machine.nodeCount;
      const checkNode = (node: number, what: string) => {
        if (!Number.isInteger(node) || node < 0 || node >= n) throw new EngineError('bad-placement', `${what}: node index ${node} is not a node of "${input.machine.name}" (0..${n - 1})`);
      };
      const threadNode = input.initial.threadNode.slice();
      const decisions: Decision[] = [];
      for (const { thread, node } of spec.threads ?? []) {
        if (!Number.isInteger(thread) || thread < 0 || thread >= input.threadCount) throw new EngineError('bad-placement', `thread ${thread} is not a thread of the trace (0..${input.threadCount - 1})`);
        checkNode(node, `thread ${thread}`);
        threadNode[thread] = node;
      }
      const pinned = (spec.threads ?? []).map((t) => t.thread);
      if (pinned.length > 0) {
        decisions.push({ window: 0, kind: 'pin-threads', explanation: `${pinned.length} threads pinned as given: ${(spec.threads ?? []).map((t) => `${t.thread}→node ${input.machine.nodeIds[t.node]}`).join(', ')}`, threads: pinned });
      }
      const pageNode = input.initial.pageNode.slice();
      for (const range of spec.pages ?? []) {
        checkNode(range.node, 'page range');
        let count = 0;
        const indices: number[] = [];
        if ('firstPage' in range) {
          if (!(range.firstPage >= 0 && range.lastPage < input.pageCount && range.firstPage <= range.lastPage)) {
            throw new EngineError('bad-placement', `page range ${range.firstPage}..${range.lastPage} is outside the trace's pages (0..${input.pageCount - 1})`);
          }
          for (let p = range.firstPage; p <= range.lastPage; p++, count++) {
            pageNode[p] = range.node;
            indices.push(p);
          }
        } else {
          const start = toBig(range.startAddress, 'startAddress');
          const end = toBig(range.endAddress, 'endAddress');
          if (end <= start) throw new EngineError('bad-placement', `page range 0x${start.toString(16)}–0x${end.toString(16)} is empty`);
          for (let p = 0; p < input.pageCount; p++) {
            const a = input.pageAddress ? input.pageAddress[p]! : BigInt(p * input.pageBytes);
            if (a >= start && a < end) {
              pageNode[p] = range.node;
              indices.push(p);
              count++;
            }
          }
        }
        const label = 'firstPage' in range ? `pages ${range.firstPage}..${range.lastPage}` : `page range ${String(range.startAddress)}–${String(range.endAddress)}`;
        decisions.push({ window: 0, kind: 'migrate', explanation: `${label} (${count} pages of the trace) placed on node ${input.machine.nodeIds[range.node]} as given`, pages: count, pageIndices: Int32Array.from(indices), toNodes: [range.node] });
      }
      let moved = 0;
      for (let p = 0; p < input.pageCount; p++) if (pageNode[p] !== input.initial.pageNode[p]) moved++;
      decisions.push({ window: 0, kind: 'none', explanation: `${moved} pages (${mib(moved * input.pageBytes)}) differ from the recorded placement and would be migrated` });
      return yield* replayFixedPages('manual', input, options, { pageNode, replicated: new Uint8Array(input.pageCount) }, () => threadNode, decisions, moved);
    },
  });
}
