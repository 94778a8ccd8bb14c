/**
 * engine/arrivals.ts: a page in the window of its recorded first touch is where allocation puts it
 * (its first-touching thread's node under the placement) and not replicated; a window holding most
 * of the recording's samples is the steady state itself and gets no exception.
 */
import { describe, expect, it } from 'vitest';
import { ARRIVALS_WINDOW_SHARE, arrivalsByWindow, atFirstTouch } from '../src/engine/arrivals.js';
import type { Placement, ReplayInput } from '../src/model/contract.js';

function input(sampleCounts: number[], pageFirstUs: number[], firstTouchThread: number[]): ReplayInput {
  const infos = sampleCounts.map((sampleCount, index) => ({ index, startUs: index * 100, endUs: (index + 1) * 100, sampleCount }));
  return {
    windows: { length: infos.length, info: (i: number) => infos[i]!, get: () => { throw new Error('not built'); }, [Symbol.iterator]: function* () {} },
    initial: { threadNode: Int16Array.of(0, 1), pageNode: Int16Array.from(pageFirstUs, () => 0), replicated: new Uint8Array(pageFirstUs.length) },
    firstTouchThread: Int32Array.from(firstTouchThread),
    pageFirstUs: Float64Array.from(pageFirstUs),
  } as unknown as ReplayInput;
}

describe('pages in the window of their first touch', () => {
  const held: Placement = { threadNode: Int16Array.of(2, 3), pageNode: Int16Array.of(1, 1, 1), replicated: Uint8Array.of(1, 1, 0) };

  it('sit on their first toucher\'s node in that window, unreplicated; the held placement elsewhere', () => {
    const inp = input([10, 10, 10], [50, 150, NaN], [0, 1, -1]);
    expect(arrivalsByWindow(inp).map((a) => Array.from(a))).toEqual([[0], [1], []]);
    const w0 = atFirstTouch(inp, held, 0);
    expect(Array.from(w0.pageNode)).toEqual([2, 1, 1]); // thread 0 runs on node 2 under the placement
    expect(Array.from(w0.replicated)).toEqual([0, 1, 0]);
    const w1 = atFirstTouch(inp, held, 1);
    expect(Array.from(w1.pageNode)).toEqual([1, 3, 1]);
    expect(atFirstTouch(inp, held, 2)).toBe(held); // nothing first touched: the same object
    expect(Array.from(held.pageNode)).toEqual([1, 1, 1]); // never changed in place
  });

  it(`a window with more than ${ARRIVALS_WINDOW_SHARE * 100} % of the samples is the steady state itself`, () => {
    const inp = input([98, 1, 1], [50, 60, NaN], [0, 1, -1]);
    expect(arrivalsByWindow(inp).map((a) => a.length)).toEqual([0, 0, 0]);
    expect(atFirstTouch(inp, held, 0)).toBe(held);
  });

  it('an unrecorded first touch (NaN) is no arrival', () => {
    const inp = input([10, 10], [NaN, NaN, NaN], [0, 1, 0]);
    expect(arrivalsByWindow(inp).every((a) => a.length === 0)).toBe(true);
  });
});
