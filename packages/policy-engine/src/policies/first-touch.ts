/**
 * first-touch: Linux's default policy. Each page lives on the node it was first touched from: the
 * node of the cpu of its recorded first-touch fault (where the kernel put it under this policy, even
 * if the thread moved later), else the node its first-touch owner (else the first thread seen
 * accessing it) started on. Threads are where the recording had them, window by window (the
 * program's own pinning and the scheduler's moves). Pages are placed at allocation: nothing migrates.
 */
import type { Policy, ReplayInput } from '../model/contract.js';
import { definePolicy } from '../engine/run.js';
import { countByNode, pagesDiffering, perNode, recordedThreads, replayFixedPages } from './common.js';

export function firstTouchPageNodes(input: ReplayInput): Int16Array {
  return firstTouchPlacement(input).pageNode;
}

/** The first-touch placement of every page, and how many came from a recorded first-touch cpu. */
function firstTouchPlacement(input: ReplayInput): { pageNode: Int16Array; fromCpu: number } {
  const pageNode = input.initial.pageNode.slice();
  const n = input.machine.nodeCount;
  let fromCpu = 0;
  for (let p = 0; p < input.pageCount; p++) {
    const node = input.firstTouchNode?.[p] ?? -1;
    if (node >= 0 && node < n) {
      pageNode[p] = node;
      fromCpu++;
      continue;
    }
    const owner = input.firstTouchThread[p]!;
    if (owner >= 0 && owner < input.threadCount) pageNode[p] = input.initial.threadNode[owner]!;
  }
  return { pageNode, fromCpu };
}

export const firstTouchPolicy: Policy = definePolicy({
  id: 'first-touch',
  description: "Linux's default: every page on the node it was first touched from; threads where the recording had them.",
  *run(input, options) {
    const { pageNode, fromCpu } = firstTouchPlacement(input);
    const differ = pagesDiffering(pageNode, input.initial.pageNode);
    return yield* replayFixedPages(
      'first-touch',
      input,
      options,
      { pageNode, replicated: new Uint8Array(input.pageCount) },
      recordedThreads(input),
      [
        {
          window: 0,
          kind: 'none',
          explanation:
            `pages on their first toucher's node at allocation: ${perNode(input, countByNode(pageNode, input.machine.nodeCount))} ` +
            `(${fromCpu} of ${input.pageCount} by the cpu of their recorded first-touch fault, the rest by their first toucher's initial node); threads where the recording had them` +
            `; ${differ} of ${input.pageCount} pages differ from the recorded placement`,
          pages: input.pageCount,
        },
      ],
      0,
    );
  },
});
