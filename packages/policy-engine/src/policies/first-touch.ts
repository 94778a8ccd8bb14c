/**
 * first-touch: Linux's default policy. Each page lives on the node of the thread that first touched
 * it (first-touch owner from the trace, else the first thread seen accessing it), threads stay on
 * their initial nodes. Pages are placed at allocation: nothing migrates.
 */
import type { Policy, ReplayInput } from '../model/contract.js';
import { definePolicy } from '../engine/run.js';
import { countByNode, pagesDiffering, perNode, replayFixedPages } from './common.js';

export function firstTouchPageNodes(input: ReplayInput): Int16Array {
  const pageNode = input.initial.pageNode.slice();
  for (let p = 0; p < input.pageCount; p++) {
    const owner = input.firstTouchThread[p]!;
    if (owner >= 0 && owner < input.threadCount) pageNode[p] = input.initial.threadNode[owner]!;
  }
  return pageNode;
}

export const firstTouchPolicy: Policy = definePolicy({
  id: 'first-touch',
  description: "Linux's default: every page on the node of the thread that first touched it; threads stay where they started.",
  *run(input, options) {
    const pageNode = firstTouchPageNodes(input);
    const differ = pagesDiffering(pageNode, input.initial.pageNode);
    return yield* replayFixedPages(
      'first-touch',
      input,
      options,
      { pageNode, replicated: new Uint8Array(input.pageCount) },
      () => input.initial.threadNode,
      [
        {
          window: 0,
          kind: 'none',
          explanation:
            `pages on their first toucher's node at allocation: ${perNode(input, countByNode(pageNode, input.machine.nodeCount))}; ` +
            `${differ} of ${input.pageCount} pages differ from the recorded placement; threads stay on their initial nodes`,
          pages: input.pageCount,
        },
      ],
      0,
    );
  },
});
