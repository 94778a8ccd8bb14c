import { render } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { MAX_MARK_RADIUS, MIN_MARK_RADIUS, TrafficGraph, trafficLayout } from '../src/TrafficGraph';
import { boxHitsCircle, boxesOverlap } from '../src/graph-layout';
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
    expect(container.querySelector('figcaption')!.textContent).toMatch(/dashed, no chip, further out: a memory-only node/);
    // Inside the drawing: every label line and every mark stay within the view box.
    const layout = trafficLayout(dramCxl, 300);
    for (const m of layout.marks) {
      for (const l of m.label.lines) {
        expect(l.box.y0).toBeGreaterThanOrEqual(0);
        expect(l.box.y1).toBeLessThanOrEqual(300);
      }
      expect(m.y - m.r).toBeGreaterThanOrEqual(0);
      expect(m.y + m.r).toBeLessThanOrEqual(300);
    }
    // The tier line is drawn on the lines the layout sized (its parts join back into the whole text).
    const tspans = [...cxl.querySelectorAll('[data-testid="node-tier"] tspan')].map((t) => t.getAttribute('y'));
    expect(tspans).toEqual(layout.marks[1]!.label.lines.filter((l) => l.kind === 'detail').map((l) => String(l.y)));
  });
  it('without the optional fields a graph is drawn as before, every node with its glyph', () => {
    const layout = trafficLayout(input, 300);
    expect(layout.marks.every((m) => m.cpuGlyph && m.tierLabel === null && m.tier === null)).toBe(true);
  });
});

describe('trafficLayout with many nodes', () => {
  const n = 8;
  const meshLinks = Array.from({ length: n * n }, (_, k) => ({ from: Math.floor(k / n), to: k % n, capacityBytesPerS: 10e9 })).filter((l) => l.from !== l.to);
  const eight = (load: (i: number) => number, linkLoad: number): TrafficInput => ({
    nodeIds: Array.from({ length: n }, (_, i) => i),
    mcLoadBytesPerS: Array.from({ length: n }, (_, i) => load(i)),
    mcUtilisation: Array(n).fill(0.5),
    mcShare: Array(n).fill(1 / n),
    hotIndex: -1,
    links: meshLinks,
    linkLoadBytesPerS: meshLinks.map(() => linkLoad),
    linkUtilisation: meshLinks.map(() => 0.5),
  });

  for (const size of [250, 300, 360]) {
    it(`8 nodes in ${size} px, every controller at its largest: no mark overlaps another, no label line a mark or another label, all inside`, () => {
      const { marks } = trafficLayout(eight(() => 5e9, 1e9), size);
      for (const a of marks) {
        expect(a.x - a.r).toBeGreaterThanOrEqual(0);
        expect(a.x + a.r).toBeLessThanOrEqual(size);
        for (const line of a.label.lines) {
          expect(line.box.x0).toBeGreaterThanOrEqual(0);
          expect(line.box.x1).toBeLessThanOrEqual(size);
          for (const b of marks) expect(boxHitsCircle(line.box, b.x, b.y, b.r), `${line.kind} of node ${a.id} on mark ${b.id}`).toBe(false);
          for (const b of marks) if (b !== a) for (const o of b.label.lines) expect(boxesOverlap(line.box, o.box), `labels of nodes ${a.id} and ${b.id}`).toBe(false);
        }
        for (const b of marks) if (a !== b) expect(Math.hypot(a.x - b.x, a.y - b.y), `marks ${a.id} and ${b.id}`).toBeGreaterThan(a.r + b.r);
      }
    });
  }

  it('traffic sizes the marks and links but moves no node and no label', () => {
    const quiet = trafficLayout(eight(() => 1e9, 0), 300, { maxMcLoadBytesPerS: 8e9, maxLinkLoadBytesPerS: 8e9 });
    const busy = trafficLayout(eight((i) => (i + 1) * 1e9, 6e9), 300, { maxMcLoadBytesPerS: 8e9, maxLinkLoadBytesPerS: 8e9 });
    expect(busy.marks.map((m) => [m.x, m.y, m.label])).toEqual(quiet.marks.map((m) => [m.x, m.y, m.label]));
    expect(busy.marks.map((m) => m.r)).not.toEqual(quiet.marks.map((m) => m.r));
    expect(busy.links[0]!.width).toBeGreaterThan(quiet.links[0]!.width);
  });

  it('each link starts at the edge of its mark and its arrowhead touches the other', () => {
    const layout = trafficLayout(eight((i) => (i + 1) * 1e9, 2e9), 300);
    for (const l of layout.links) {
      const a = layout.marks[l.from]!;
      const b = layout.marks[l.to]!;
      const [sx, sy] = /^M([-\d.]+),([-\d.]+)/.exec(l.d)!.slice(1).map(Number) as [number, number];
      const [tx, ty] = /^M([-\d.]+),([-\d.]+)/.exec(l.arrow)!.slice(1).map(Number) as [number, number];
      expect(Math.hypot(sx - a.x, sy - a.y)).toBeCloseTo(a.r + 2, 0);
      expect(Math.hypot(tx - b.x, ty - b.y)).toBeCloseTo(b.r + 2, 0);
      expect(l.d).toMatch(/^M[-\d.]+,[-\d.]+Q[-\d.]+,[-\d.]+,[-\d.]+,[-\d.]+$/);
    }
  });

  it('renders each label line where the layout put it, the share beside the mark instead of on it', () => {
    const traffic = eight(() => 5e9, 1e9);
    const layout = trafficLayout(traffic, 300);
    const { container } = render(<TrafficGraph traffic={traffic} size={300} title="t" />);
    for (const m of layout.marks) {
      const g = container.querySelector(`[data-node="${m.id}"]`)!;
      const share = g.querySelector('[data-testid="node-share"]')!;
      expect(Number(share.getAttribute('y'))).toBe(m.label.lines.find((l) => l.kind === 'share')!.y);
      expect(share.getAttribute('text-anchor')).toBe(m.label.anchor);
      expect(Number(g.querySelector('[data-testid="node-label"]')!.getAttribute('y'))).toBe(m.labelY);
      // The chip is drawn in the mark, not over the name.
      const chip = /^M([-\d.]+),([-\d.]+)/.exec(g.querySelector('[data-testid="cpu-glyph"]')!.getAttribute('d')!)!.slice(1).map(Number);
      expect(Math.hypot(chip[0]! - m.x, chip[1]! - m.y)).toBeLessThan(m.r);
    }
  });
});
