/**
 * Pages in the window of their first touch (docs/engine.md, "Steady state"): a policy that moves
 * pages after they exist (AutoNUMA, Carrefour, AsymSched) or a program that makes per-node copies
 * after it has written the data (replicate) cannot act on a page before its first touch, so in
 * that window the page is where allocation puts it (the node its first-touching thread runs on)
 * and not replicated; from
 * the next window on, the policy's placement holds. A window holding most of the recording's
 * samples (ARRIVALS_WINDOW_SHARE: a recording whose accesses sit in one window, such as a short
 * attach) stands for the steady state itself, and its pages take the policy's placement.
 */
import type { Placement, ReplayInput } from '../model/contract.js';

const cache = new WeakMap<ReplayInput, Int32Array[]>();
/** A window with more than this share of the recording's samples gets no first-touch exception. */
export const ARRIVALS_WINDOW_SHARE = 0.5;

/** Per window, the pages whose first touch (or first access) falls in it. */
export function arrivalsByWindow(input: ReplayInput): Int32Array[] {
  const hit = cache.get(input);
  if (hit) return hit;
  const count = input.windows.length;
  const first = input.pageFirstUs;
  const lists: number[][] = Array.from({ length: count }, () => []);
  if (first && count > 0) {
    const starts = Float64Array.from({ length: count }, (_, w) => input.windows.info(w).startUs);
    const end = input.windows.info(count - 1).endUs;
    for (let p = 0; p < first.length; p++) {
      const t = first[p]!;
      if (!(t >= starts[0]!) || t >= end) continue;
      // the last window starting at or before t
      let lo = 0;
      let hi = count - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (starts[mid]! <= t) lo = mid;
        else hi = mid - 1;
      }
      lists[lo]!.push(p);
    }
  }
  let total = 0;
  for (let w = 0; w < count; w++) total += input.windows.info(w).sampleCount;
  const out = lists.map((l, w) => (input.windows.info(w).sampleCount > ARRIVALS_WINDOW_SHARE * total ? new Int32Array(0) : Int32Array.from(l)));
  cache.set(input, out);
  return out;
}

/**
 * Where allocation puts page p under `placement`: the node its first-touching thread runs on there
 * (a policy that moved the thread moved its first touches with it), else the node of the recorded
 * first-touch cpu, else the recorded node.
 */
function allocationNode(input: ReplayInput, placement: Placement, p: number): number {
  const t = input.firstTouchThread[p] ?? -1;
  if (t >= 0 && t < placement.threadNode.length) return placement.threadNode[t]!;
  const ft = input.firstTouchNode?.[p] ?? -1;
  return ft >= 0 ? ft : input.initial.pageNode[p]!;
}

/**
 * `placement` in window w with the pages first touched in w where allocation put them and not
 * replicated; the same object when no such page differs.
 */
export function atFirstTouch(input: ReplayInput, placement: Placement, w: number): Placement {
  const pages = arrivalsByWindow(input)[w];
  if (!pages || pages.length === 0) return placement;
  let differs = false;
  for (let i = 0; i < pages.length && !differs; i++) {
    const p = pages[i]!;
    if (placement.pageNode[p] !== allocationNode(input, placement, p) || placement.replicated[p]) differs = true;
  }
  if (!differs) return placement;
  const pageNode = placement.pageNode.slice();
  const replicated = placement.replicated.slice();
  for (let i = 0; i < pages.length; i++) {
    const p = pages[i]!;
    pageNode[p] = allocationNode(input, placement, p);
    replicated[p] = 0;
  }
  return { ...placement, pageNode, replicated };
}
