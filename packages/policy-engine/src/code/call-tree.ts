/**
 * The call tree of the sampled code, for a flame graph: a prefix tree of the samples' stacks from
 * the root through the outermost frame (`main`, `start_thread`) to the innermost, one node per
 * function on a path (frames.ts: module + name) with its busiest file:line, with each node's self weight (samples whose
 * attributed frame is that node) and total weight (self + its children's totals). Weights are
 * `samples.weight` (accesses for load and store rows, faults for fault rows; filter by op to
 * keep them apart). With `by: 'site'` (the default) a stack ends at its code site: the runtime
 * frames inside it (a libc `memset`) fold into the caller, as in functionTable; `self` keeps
 * every frame.
 *
 * Bounded: at most `limit` nodes (default 100 000). A stack that would need a node past the
 * limit adds its weight to the self weight of the deepest node it has, and the tree says it was
 * truncated (and how much weight that moved). Pure, no DOM or Node.
 */
import type { Trace } from '../trace/types.js';
import { codeFrames } from './frames.js';
import { attributedFrame, selectSamples, type CodeAttribution, type CodeOptions } from './functions.js';

export const CALL_TREE_NODE_LIMIT = 100_000;

function baseName(path: string): string {
  const i = path.lastIndexOf('/');
  return i >= 0 ? path.slice(i + 1) : path;
}

export interface CallTreeNode {
  /** The function (`module+0xoffset` without a symbol); `all` for the root. */
  name: string;
  module: string | null;
  /** `file:line` (the file's base name) of the node's busiest frame, null without line information (and for the root). */
  location: string | null;
  /** Node index of the parent, -1 for the root. */
  parent: number;
  /** 0 for the root, 1 for the outermost frames. */
  depth: number;
  self: number;
  total: number;
}

export interface CallTree {
  available: boolean;
  reason: string;
  by: CodeAttribution;
  /** nodes[0] is the root; a node's parent comes before it. */
  nodes: CallTreeNode[];
  /** The weight of the samples with a stack that pass the filters (= nodes[0].total). */
  totalWeight: number;
  /** The weight of the samples that pass the filters but have no stack (not in the tree). */
  withoutStackWeight: number;
  limit: number;
  truncated: boolean;
  /** Weight given to an ancestor's self because its own path was past the limit. */
  truncatedWeight: number;
}

export interface CallTreeOptions extends CodeOptions {
  /** Most nodes, the root included; default CALL_TREE_NODE_LIMIT. */
  limit?: number;
}

export function callTree(trace: Trace, options: CallTreeOptions = {}): CallTree {
  const by = options.by ?? 'site';
  const limit = Math.max(1, Math.floor(options.limit ?? CALL_TREE_NODE_LIMIT));
  const code = codeFrames(trace);
  const { keep, weight } = selectSamples(trace, options);
  // Weight per stack first: the tree is walked once per stack, not per sample.
  const stackWeight = new Float64Array(code.stackCount);
  let withoutStackWeight = 0;
  for (let i = 0; i < keep.length; i++) {
    if (!keep[i]) continue;
    const s = code.sampleStack[i]!;
    if (s >= 0 && s < code.stackCount) stackWeight[s]! += weight[i]!;
    else withoutStackWeight += weight[i]!;
  }
  const nodes: CallTreeNode[] = [{ name: 'all', module: null, location: null, parent: -1, depth: 0, self: 0, total: 0 }];
  // Per node, the weight of each frame (source line) it was reached through, for its location.
  const nodeFrames: Array<Map<number, number>> = [new Map()];
  const F = code.functions.length;
  const child = new Map<number, number>();
  let truncated = false;
  let truncatedWeight = 0;
  for (let s = 0; s < code.stackCount; s++) {
    const w = stackWeight[s]!;
    if (w === 0) continue;
    const lo = code.stackStart[s]!;
    const hi = code.stackStart[s + 1]!;
    // The innermost frame kept: the attributed one (its position in the stack).
    const { frame } = attributedFrame(code, s, by);
    let inner = lo;
    while (inner < hi && code.stackFrames[inner] !== frame) inner++;
    if (inner === hi) inner = lo;
    let at = 0;
    nodes[0]!.total += w;
    for (let k = hi - 1; k >= inner; k--) {
      const f = code.frames.functionOf[code.stackFrames[k]!]!;
      const key = at * F + f;
      let next = child.get(key);
      if (next === undefined) {
        if (nodes.length >= limit) {
          truncated = true;
          truncatedWeight += w;
          break;
        }
        next = nodes.length;
        const fn = code.functions[f]!;
        nodes.push({ name: fn.name, module: fn.module, location: null, parent: at, depth: nodes[at]!.depth + 1, self: 0, total: 0 });
        nodeFrames.push(new Map());
        child.set(key, next);
      }
      at = next;
      nodes[at]!.total += w;
      const fm = nodeFrames[at]!;
      fm.set(code.stackFrames[k]!, (fm.get(code.stackFrames[k]!) ?? 0) + w);
    }
    nodes[at]!.self += w;
  }
  for (let n = 1; n < nodes.length; n++) {
    let best = -1;
    let bestWeight = -1;
    for (const [f, w] of nodeFrames[n]!) if (w > bestWeight || (w === bestWeight && f < best)) [best, bestWeight] = [f, w];
    const file = best >= 0 ? (code.frames.file[best] ?? null) : null;
    const line = best >= 0 ? code.frames.line[best]! : -1;
    nodes[n]!.location = file !== null && line >= 0 ? `${baseName(file)}:${line}` : null;
  }
  return {
    available: code.available,
    reason: code.reason,
    by,
    nodes,
    totalWeight: nodes[0]!.total,
    withoutStackWeight,
    limit,
    truncated,
    truncatedWeight,
  };
}
