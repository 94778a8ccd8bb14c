import { render } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { MAX_MARK_RADIUS, MIN_MARK_RADIUS, TrafficGraph, trafficLayout } from '../src/TrafficGraph';
import type { TrafficInput } from '../src/TrafficGraph';

const input: TrafficInput = {
  nodeIds: [0, 1, 2, 3],
  mcLoadBytesPerS: [8e9, 1e9, 1e9, 0],
  mcUtilisation: [0.8, 0.1, 0.1, 0],
  mcShare: [0.8, 0.1, 0.1, 0],
  hotIndex: 0,
  links: [
    { from: 0, to: 1, capacityBytesPerS: 4e9 },
    { from: 1, to: 0, capacityBytesPerS: 4e9 },
  ],
  linkLoadBytesPerS: [3e9, 0.5e9],
  linkUtilisation: [0.75, 0.125],
};

describe('trafficLayout', () => {
  const layout = trafficLayout(input, 300);
  it('sizes NodeMarks by memory-controller load (area ∝ load)', () => {
    const [a, b, , d] = layout.marks;
    expect(a!.r).toBeCloseTo(MAX_MARK_RADIUS);
    expect(d!.r).toBeCloseTo(MIN_MARK_RADIUS);
    expect(a!.r).toBeGreaterThan(b!.r);
    const span = MAX_MARK_RADIUS - MIN_MARK_RADIUS;
    expect(b!.r).toBeCloseTo(MIN_MARK_RADIUS + span * Math.sqrt(1 / 8));
  });
  it('marks the hot spot it is given and colours by utilisation', () => {
    expect(layout.hotId).toBe(0);
    expect(layout.marks.filter((m) => m.hot).map((m) => m.id)).toEqual([0]);
    expect(layout.marks[0]!.fill).not.toBe(layout.marks[3]!.fill);
  });
  it('draws directed links with width by traffic, the two directions apart', () => {
    expect(layout.links).toHaveLength(2);
    expect(layout.links[0]!.width).toBeGreaterThan(layout.links[1]!.width);
    expect(layout.links[0]!.d).not.toBe(layout.links[1]!.d);
  });
  it('no hot spot when none is given (the rule is the engine\'s hotSpotIndex)', () => {
    expect(trafficLayout({ ...input, hotIndex: -1 }, 300).hotId).toBeNull();
    const { hotIndex: _, ...without } = input;
    expect(trafficLayout(without, 300).hotId).toBeNull();
  });
  it('renders share labels and marks', () => {
    const { container } = render(<TrafficGraph traffic={input} title="t" />);
    expect(container.querySelectorAll('[data-testid="node-mark"]')).toHaveLength(4);
    expect(container.querySelector('[data-node="0"] [data-testid="node-share"]')!.textContent).toBe('80%');
    expect(container.querySelector('[data-testid="traffic-graph"]')!.getAttribute('data-hot-node')).toBe('0');
  });
});

describe('memory-only (cpu-less) nodes', () => {
  const dramCxl: TrafficInput = {
    nodeIds: [0, 1],
    memoryOnly: [false, true],
    tier: [0, 1],
    memoryKind: ['dram', 'cxl'],
    capacityBytesPerS: [208e9, 24e9],
    mcLoadBytesPerS: [190e9, 19e9],
    mcUtilisation: [0.91, 0.79],
    mcShare: [0.91, 0.09],
    links: [
      { from: 1, to: 0, capacityBytesPerS: 64e9 },
      { from: 0, to: 1, capacityBytesPerS: 64e9 },
    ],
    linkLoadBytesPerS: [20e9, 1e9],
    linkUtilisation: [0.31, 0.02],
  };
  it('lays out a cpu glyph only for nodes with cpus, and a kind · tier · own bandwidth label for memory-only ones', () => {
    const layout = trafficLayout(dramCxl, 300);
    expect(layout.marks.map((m) => m.cpuGlyph)).toEqual([true, false]);
    expect(layout.marks.map((m) => m.tierLabel)).toEqual([null, 'CXL · tier 1 · 24.0 GB/s']);
    expect(layout.marks[1]!.capacityBytesPerS).toBe(24e9);
  });
  it('draws them distinctly: no cpu glyph, a dashed outline, the tier label, and says so in the legend', () => {
    const { container } = render(<TrafficGraph traffic={dramCxl} title="weighted interleave" />);
    const dram = container.querySelector('[data-node="0"]')!;
    const cxl = container.querySelector('[data-node="1"]')!;
    expect(dram.querySelector('[data-testid="cpu-glyph"]')).not.toBeNull();
    expect(cxl.querySelector('[data-testid="cpu-glyph"]')).toBeNull();
    expect(cxl.getAttribute('data-memory-only')).toBe('true');
    expect(cxl.getAttribute('data-tier')).toBe('1');
    expect(cxl.querySelector('circle')!.getAttribute('stroke-dasharray')).toBe('4 2');
    expect(dram.querySelector('circle')!.getAttribute('stroke-dasharray')).toBeNull();
    expect(cxl.querySelector('[data-testid="node-tier"]')!.textContent).toMatch(/CXL · tier 1 · 24(\.0)? GB\/s/);
    expect(dram.querySelector('[data-testid="node-tier"]')).toBeNull();
    expect(cxl.querySelector('title')!.textContent).toMatch(/memory only, CXL\), memory tier 1: .* of its own 24(\.0)? GB\/s/);
    expect(container.querySelector('figcaption')!.textContent).toMatch(/dashed, no chip: a memory-only node/);
    // Inside the drawing: the lowest label and the highest glyph stay within the view box.
    const layout = trafficLayout(dramCxl, 300);
    for (const m of layout.marks) {
      expect(m.labelY + 20).toBeLessThanOrEqual(300);
      expect(m.labelY - 8).toBeGreaterThanOrEqual(0);
      expect(m.y - m.r).toBeGreaterThanOrEqual(0);
    }
  });
  it('without the optional fields a graph is drawn as before, every node with its glyph', () => {
    const layout = trafficLayout(input, 300);
    expect(layout.marks.every((m) => m.cpuGlyph && m.tierLabel === null && m.tier === null)).toBe(true);
  });
});

describe('trafficLayout with many nodes', () => {
  const n = 8;
  const eight: TrafficInput = {
    nodeIds: Array.from({ length: n }, (_, i) => i),
    // Every controller equally and fully loaded: every mark at its largest.
    mcLoadBytesPerS: Array(n).fill(5e9),
    mcUtilisation: Array(n).fill(0.5),
    mcShare: Array(n).fill(1 / n),
    hotIndex: -1,
    links: [],
    linkLoadBytesPerS: [],
    linkUtilisation: [],
  };
  // A name ("node 7" in 11 px type: about 40 × 12 px) as a box around its centre.
  const box = (x: number, y: number) => ({ x0: x - 20, x1: x + 20, y0: y - 6, y1: y + 6 });
  const boxHitsCircle = (b: ReturnType<typeof box>, cx: number, cy: number, r: number) => {
    const dx = Math.max(b.x0 - cx, 0, cx - b.x1);
    const dy = Math.max(b.y0 - cy, 0, cy - b.y1);
    return Math.hypot(dx, dy) < r;
  };

  for (const size of [250, 300, 360]) {
    it(`8 nodes in ${size} px: no mark overlaps another, no name overlaps a mark or another name, all inside`, () => {
      const { marks } = trafficLayout(eight, size);
      for (const a of marks) {
        const la = box(a.labelX, a.labelY);
        expect(la.x0).toBeGreaterThanOrEqual(0);
        expect(la.x1).toBeLessThanOrEqual(size);
        expect(la.y0).toBeGreaterThanOrEqual(0);
        expect(la.y1).toBeLessThanOrEqual(size);
        expect(a.x - a.r).toBeGreaterThanOrEqual(0);
        expect(a.x + a.r).toBeLessThanOrEqual(size);
        for (const b of marks) {
          expect(boxHitsCircle(la, b.x, b.y, b.r), `name of node ${a.id} on mark ${b.id}`).toBe(false);
          if (a === b) continue;
          expect(Math.hypot(a.x - b.x, a.y - b.y), `marks ${a.id} and ${b.id}`).toBeGreaterThan(a.r + b.r);
          const lb = box(b.labelX, b.labelY);
          const apart = la.x1 <= lb.x0 || lb.x1 <= la.x0 || la.y1 <= lb.y0 || lb.y1 <= la.y0;
          expect(apart, `names of nodes ${a.id} and ${b.id}`).toBe(true);
        }
      }
    });
  }
});
