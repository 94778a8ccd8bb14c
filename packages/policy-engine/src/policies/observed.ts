/** observed: the recorded placement as it is (pages where the trace saw them, threads as recorded over time). */
import type { Policy } from '../model/contract.js';
import { definePolicy } from '../engine/run.js';
import { countByNode, perNode, replayFixedPages } from './common.js';

export const observedPolicy: Policy = definePolicy({
  id: 'observed',
  description: 'The recorded placement as it is: pages on the node the trace saw them on, threads on their recorded nodes window by window.',
  *run(input, options) {
    const n = input.machine.nodeCount;
    const byWindow = input.observedThreadNode;
    let moves = 0;
    if (byWindow) {
      for (let w = 1; w < byWindow.length; w++) for (let t = 0; t < input.threadCount; t++) if (byWindow[w]![t] !== byWindow[w - 1]![t]) moves++;
    }
    const pageCounts = countByNode(input.initial.pageNode, n);
    return yield* replayFixedPages(
      'observed',
      input,
      options,
      { pageNode: input.initial.pageNode, replicated: input.initial.replicated },
      (w) => byWindow?.[w] ?? input.initial.threadNode,
      [
        {
          window: 0,
          kind: 'none',
          explanation:
            `recorded placement: pages per node ${perNode(input, pageCounts)}; threads per node ${perNode(input, countByNode(input.initial.threadNode, n))} at the start` +
            (byWindow ? `, ${moves} thread moves between nodes seen over ${byWindow.length} windows` : ', thread placement over time not recorded'),
          pages: input.pageCount,
        },
      ],
      0,
    );
  },
});
