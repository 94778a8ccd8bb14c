import { describe, expect, it } from 'vitest';
import { NODE_COLORS, OKABE_ITO, UNKNOWN_NODE_COLOR, nodeColor, nodeLabel, textColorOn } from '../src/palette.js';
import { segmentAt, threadSegments } from '../src/timeline.js';

describe('node colours', () => {
  it('follow the position of the node on the machine', () => {
    expect(nodeColor(0, [0, 2, 4])).toBe(OKABE_ITO[0]);
    expect(nodeColor(2, [0, 2, 4])).toBe(OKABE_ITO[1]);
    expect(nodeColor(4, [0, 2, 4])).toBe(OKABE_ITO[2]);
  });
  it('are grey for the unknown node', () => {
    expect(nodeColor(-1, [0, 1])).toBe(UNKNOWN_NODE_COLOR);
    expect(nodeLabel(-1)).toBe('unknown node');
    expect(nodeLabel(3)).toBe('node 3');
  });
  it('are all different up to twelve nodes, then repeat', () => {
    const ids = Array.from({ length: 12 }, (_, i) => i);
    expect(new Set(ids.map((id) => nodeColor(id, ids))).size).toBe(12);
    expect(nodeColor(7, ids)).toBe(NODE_COLORS[7]);
    expect(nodeColor(12)).toBe(OKABE_ITO[0]);
    expect(NODE_COLORS).not.toContain(UNKNOWN_NODE_COLOR);
  });
  it('label text picks the more contrasting colour', () => {
    expect(textColorOn('#0072B2')).toBe('#ffffff');
    expect(textColorOn('#F0E442')).toBe('#000000');
  });
});

describe('threadSegments', () => {
  //   time_us  cpu  node
  //         0    0     0
  //       100    0     0   same place: merged
  //       200    5     1
  //       300    6     1   other cpu, same node: new segment
  const series = { timeUs: [0, 100, 200, 300], cpu: [0, 0, 5, 6], node: [0, 0, 1, 1] };

  it('merges runs on one cpu and ends the last at the capture end', () => {
    expect(threadSegments(series, 1000, 2)).toEqual([
      { row: 2, startUs: 0, endUs: 200, cpu: 0, node: 0 },
      { row: 2, startUs: 200, endUs: 300, cpu: 5, node: 1 },
      { row: 2, startUs: 300, endUs: 1000, cpu: 6, node: 1 },
    ]);
  });

  it('sorts observations given out of order', () => {
    const shuffled = { timeUs: [200, 0], cpu: [1, 0], node: [1, 0] };
    expect(threadSegments(shuffled, 300).map((s) => [s.startUs, s.endUs, s.cpu])).toEqual([
      [0, 200, 0],
      [200, 300, 1],
    ]);
  });

  it('returns nothing for a thread never placed', () => {
    expect(threadSegments({ timeUs: [], cpu: [], node: [] }, 100)).toEqual([]);
  });

  it('ends a thread at its exit and shows its start before the first observation on an unknown cpu', () => {
    expect(threadSegments(series, 1000, 0, { startUs: null, exitUs: 450 }).at(-1)).toEqual({ row: 0, startUs: 300, endUs: 450, cpu: 6, node: 1 });
    const late = { timeUs: [500, 600], cpu: [1, 2], node: [0, 0] };
    expect(threadSegments(late, 1000, 1, { startUs: 420, exitUs: 700 }).map((s) => [s.startUs, s.endUs, s.cpu])).toEqual([
      [420, 500, -1],
      [500, 600, 1],
      [600, 700, 2],
    ]);
    // An exit before the last observation (the poll that missed it, after the exact exit): zero length, never negative.
    expect(threadSegments(late, 1000, 1, { startUs: null, exitUs: 550 }).at(-1)).toMatchObject({ startUs: 600, endUs: 600 });
  });

  it('draws the life of a thread never observed on a cpu as one unknown-cpu run', () => {
    const none = { timeUs: [], cpu: [], node: [] };
    expect(threadSegments(none, 1000, 3, { startUs: 100, exitUs: 250 })).toEqual([{ row: 3, startUs: 100, endUs: 250, cpu: -1, node: -1 }]);
    expect(threadSegments(none, 1000, 3, { startUs: 100, exitUs: null })).toEqual([{ row: 3, startUs: 100, endUs: 1000, cpu: -1, node: -1 }]);
    expect(threadSegments(none, 1000, 3, { startUs: null, exitUs: null })).toEqual([]);
  });

  it('segmentAt finds the run covering a time', () => {
    const segs = threadSegments(series, 1000);
    expect(segmentAt(segs, 0)).toBe(0);
    expect(segmentAt(segs, 250)).toBe(1);
    expect(segmentAt(segs, 999)).toBe(2);
    expect(segmentAt(segs, 1001)).toBe(-1);
    expect(segmentAt(segs, -5)).toBe(-1);
  });
});
