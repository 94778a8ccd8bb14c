import { describe, expect, it } from 'vitest';
import { getPreset } from '@numascope/policy-engine';
import { CENTRE_CLEARANCE, boxHitsCircle, boxesOverlap, graphLayout, quadAt, ringOrder, splitDetail, textWidth } from '../src/graph-layout';
import type { GraphLayout, GraphLinkSpec, GraphNodeSpec } from '../src/graph-layout';
import { tierLabelOf } from '../src/TrafficGraph';

/** A machine of n nodes with cpus, every pair linked both ways (interleave's worst case: all links drawn). */
function meshed(n: number): { nodes: GraphNodeSpec[]; links: GraphLinkSpec[] } {
  const nodes = Array.from({ length: n }, (_, id) => ({ id, hasCpus: true, socket: Math.floor((2 * id) / n) }));
  const links: GraphLinkSpec[] = [];
  for (let a = 0; a < n; a++) for (let b = 0; b < n; b++) if (a !== b) links.push({ from: a, to: b });
  return { nodes, links };
}

/** A preset's nodes and links as the graph gets them (memory-only nodes with their detail line). */
function preset(id: string): { nodes: GraphNodeSpec[]; links: GraphLinkSpec[] } {
  const m = getPreset(id);
  const index = new Map(m.nodes.map((x, i) => [x.id, i]));
  const nodes = m.nodes.map((x) => ({
    id: x.id,
    hasCpus: x.cpus.length > 0,
    detail: x.cpus.length > 0 ? null : tierLabelOf(x.memoryKind ?? null, x.memoryTier ?? null, (x.memoryBandwidthGBps ?? 0) * 1e9),
  }));
  return { nodes, links: m.links.map((l) => ({ from: index.get(l.from)!, to: index.get(l.to)! })) };
}

/** Every label line apart from every mark (at its largest) and from every other node's lines; everything inside the drawing. */
function expectReadable(l: GraphLayout) {
  const inside = (b: { x0: number; y0: number; x1: number; y1: number }) => b.x0 >= -1e-6 && b.y0 >= -1e-6 && b.x1 <= l.width + 1e-6 && b.y1 <= l.height + 1e-6;
  for (const a of l.slots) {
    expect(inside({ x0: a.x - l.rMax, y0: a.y - l.rMax, x1: a.x + l.rMax, y1: a.y + l.rMax }), `mark of node ${a.id} inside`).toBe(true);
    for (const line of a.label.lines) {
      expect(inside(line.box), `${line.kind} of node ${a.id} inside`).toBe(true);
      for (const b of l.slots) expect(boxHitsCircle(line.box, b.x, b.y, l.rMax), `${line.kind} of node ${a.id} on the mark of node ${b.id}`).toBe(false);
      for (const b of l.slots) {
        if (b === a) continue;
        for (const other of b.label.lines) expect(boxesOverlap(line.box, other.box), `${line.kind} of node ${a.id} on ${other.kind} of node ${b.id}`).toBe(false);
      }
    }
    for (const b of l.slots) if (b !== a) expect(Math.hypot(a.x - b.x, a.y - b.y), `marks of nodes ${a.id} and ${b.id}`).toBeGreaterThan(2 * l.rMax);
    // The lines of one block are stacked, not on top of each other.
    const lines = a.label.lines;
    for (let i = 1; i < lines.length; i++) expect(lines[i]!.box.y0).toBeGreaterThanOrEqual(lines[i - 1]!.box.y1 - 1e-9);
  }
}

/** The closest a link's curve comes to the ring's centre. */
function closestToCentre(l: GraphLayout, k: number): number {
  const c = l.links[k]!;
  let best = Infinity;
  for (let i = 0; i <= 100; i++) {
    const p = quadAt(c.p0, c.c, c.p1, i / 100);
    best = Math.min(best, Math.hypot(p.x - l.centre.x, p.y - l.centre.y));
  }
  return best;
}

// The sizes the app draws at: Compare's columns (250 px up to 4 nodes, 300 px above), Traffic's 360 px.
const SIZES: Record<number, number[]> = { 2: [250, 300, 360], 4: [250, 300, 360], 8: [250, 300, 360], 16: [300, 360] };

describe('graphLayout: names beside their marks, links round the centre', () => {
  for (const n of [2, 4, 8, 16]) {
    for (const size of SIZES[n]!) {
      it(`${n} nodes in ${size} px: no label on a mark or on another label, all inside`, () => {
        const { nodes, links } = meshed(n);
        const l = graphLayout(nodes, links, size);
        expect(l.slots).toHaveLength(n);
        expectReadable(l);
      });
    }
    it(`${n} nodes: links between nodes that are not neighbours keep clear of the centre`, () => {
      const { nodes, links } = meshed(n);
      const l = graphLayout(nodes, links, 300);
      const far = l.links.map((c, k) => [c, k] as const).filter(([c]) => !c.adjacent);
      if (n >= 4) expect(far.length).toBeGreaterThan(0);
      for (const [c, k] of far) expect(closestToCentre(l, k), `link ${nodes[c.from]!.id} → ${nodes[c.to]!.id}`).toBeGreaterThan(0.8 * CENTRE_CLEARANCE * l.ring);
      // A link between opposite nodes and its reverse go round the centre on different sides.
      if (n % 2 === 0) {
        const there = l.links.find((c) => c.from === 0 && c.to === n / 2)!;
        const back = l.links.find((c) => c.from === n / 2 && c.to === 0)!;
        const mid = (c: typeof there) => quadAt(c.p0, c.c, c.p1, 0.5);
        const side = (p: { x: number; y: number }) => Math.sign((there.p1.x - there.p0.x) * (p.y - there.p0.y) - (there.p1.y - there.p0.y) * (p.x - there.p0.x));
        expect(side(mid(there))).toBe(-side(mid(back)));
      }
    });
  }

  it('places every label outside the ring, away from the centre', () => {
    for (const n of [2, 4, 8, 16]) {
      const l = graphLayout(meshed(n).nodes, [], 360);
      for (const s of l.slots) {
        const b = s.label.box;
        const lc = { x: (b.x0 + b.x1) / 2, y: (b.y0 + b.y1) / 2 };
        expect(Math.hypot(lc.x - l.centre.x, lc.y - l.centre.y), `label of node ${s.id} of ${n}`).toBeGreaterThan(Math.hypot(s.x - l.centre.x, s.y - l.centre.y));
      }
    }
  });

  it('is stable: the same machine gives the same layout; links do not move the nodes', () => {
    const { nodes, links } = meshed(8);
    expect(graphLayout(nodes, links, 300)).toEqual(graphLayout(nodes, links, 300));
    const bare = graphLayout(nodes, [], 300);
    const full = graphLayout(nodes, links, 300);
    expect(full.slots).toEqual(bare.slots);
    expect(full.rMax).toBe(bare.rMax);
  });

  it('orders the ring by socket, then index', () => {
    const nodes = [0, 1, 2, 3].map((id) => ({ id, hasCpus: true, socket: id % 2 }));
    expect(ringOrder(nodes, [])).toEqual([0, 2, 1, 3]);
  });

  it('draws a square of links as a square: its sides between ring neighbours, none through the middle', () => {
    // The Carrefour testbed: HyperTransport 0-1, 0-2, 1-3, 2-3.
    const { nodes, links } = preset('amd-opteron-8385-4p');
    expect(ringOrder(nodes, links)).toEqual([0, 1, 3, 2]);
    const l = graphLayout(nodes, links, 250);
    expect(l.links.every((c) => c.adjacent)).toBe(true);
    // Fully connected, the order stays by index.
    expect(ringOrder(preset('intel-xeon-x7560-4s').nodes, preset('intel-xeon-x7560-4s').links)).toEqual([0, 1, 2, 3]);
  });
});

describe('graphLayout: machines with memory-only nodes', () => {
  for (const [id, size] of [
    ['dram-cxl-1s', 250],
    ['cxl-expander', 250],
    ['intel-xeon-max-flat', 250],
    ['intel-xeon-max-snc4-flat', 300],
    ['intel-xeon-max-snc4-flat', 360],
  ] as const) {
    it(`${id} in ${size} px: readable, each memory-only node further out than the nodes with cpus`, () => {
      const { nodes, links } = preset(id);
      const l = graphLayout(nodes, links, size);
      expectReadable(l);
      const dist = (i: number) => Math.hypot(l.slots[i]!.x - l.centre.x, l.slots[i]!.y - l.centre.y);
      const cpu = nodes.map((x, i) => i).filter((i) => nodes[i]!.hasCpus);
      const mem = nodes.map((x, i) => i).filter((i) => !nodes[i]!.hasCpus);
      expect(mem.length).toBeGreaterThan(0);
      for (const m of mem) for (const c of cpu) expect(dist(m)).toBeGreaterThan(dist(c));
      // Its detail is in its label block, under its name.
      for (const m of mem) expect(l.slots[m]!.label.lines.filter((x) => x.kind === 'detail').map((x) => x.text).join('')).toBe(nodes[m]!.detail);
    });
  }

  it('puts a memory-only node next to the node with cpus it hangs off', () => {
    const { nodes, links } = preset('intel-xeon-max-snc4-flat');
    // HBM stack 4 + k is tile k's.
    expect(ringOrder(nodes, links)).toEqual([0, 4, 1, 5, 2, 6, 3, 7]);
  });
});

describe('text', () => {
  it('splits a memory-only detail before its bandwidth, the parts joining back to the whole', () => {
    expect(splitDetail('CXL · tier 1 · 24.0 GB/s')).toEqual(['CXL · tier 1 · ', '24.0 GB/s']);
    expect(splitDetail('memory only')).toEqual(['memory only']);
    expect(splitDetail(null)).toEqual([]);
  });
  it('estimates wider text wider, and bold wider than regular', () => {
    expect(textWidth('node 12', 11)).toBeGreaterThan(textWidth('node 1', 11));
    expect(textWidth('100%', 12, true)).toBeGreaterThan(textWidth('100%', 12));
  });
});
