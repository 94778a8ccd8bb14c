/**
 * Where the traffic graph draws each NUMA node, its name and its links: pure geometry from the
 * machine alone (which nodes there are, which have cpus, their sockets, the links), never from
 * the traffic, so a graph's marks and names stay put whatever a policy does with the bytes.
 *
 * - Nodes with cpus sit on a ring in socket then index order (two nodes one above the other,
 *   four on the corners of a square, more with a flat top edge). A memory-only node (no cpus:
 *   CXL, HBM in flat mode) goes right after the node with cpus it is linked to, further out
 *   (MEMORY_ONLY_RADIUS × the ring), so it reads as hanging off that node.
 * - A node's label block (name, share, memory-only detail) sits outside its mark, away from the
 *   ring's centre (straight above or below it when slanted, with up to 8 nodes), clear of the
 *   largest mark the node can have (`rMax`).
 * - A link is a quadratic curve between centres; one that would pass near the ring's centre
 *   (opposite nodes) is bent out to CENTRE_CLEARANCE × the ring, on the right of its direction
 *   of travel, so the two directions go round the centre on either side instead of piling up
 *   on it.
 * - The ring is the largest that keeps every mark and block inside the drawing (found by
 *   bisection), then the whole is centred.
 * Text widths are estimated from per-character widths of DejaVu Sans (the widest of the fonts the
 * app's stack falls back to), rounded up; e2e/tests/layout.e2e.ts checks the real boxes.
 */

export interface Point {
  x: number;
  y: number;
}

/** An axis-aligned box, in drawing pixels. */
export interface Box {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}

export interface GraphNodeSpec {
  id: number;
  hasCpus: boolean;
  /** Socket (package) id if known: groups the ring; null/absent = not known. */
  socket?: number | null;
  /** The memory-only detail line ("CXL · tier 1 · 24.0 GB/s"), null for nodes with cpus. */
  detail?: string | null;
}

export interface GraphLinkSpec {
  from: number;
  to: number;
}

export type LabelLineKind = 'name' | 'share' | 'detail';

export interface LabelLine {
  kind: LabelLineKind;
  /** The text drawn; the share line's is the widest it can be ("100%"), for sizing. */
  text: string;
  fontPx: number;
  bold: boolean;
  /** Centre of the line, vertically; x is the block's anchor x. */
  y: number;
  box: Box;
}

export interface LabelBlock {
  box: Box;
  /** SVG text-anchor of every line, and the x it is anchored at. */
  anchor: 'start' | 'middle' | 'end';
  x: number;
  lines: LabelLine[];
}

/** Where one NUMA node is drawn (a NodeMark's place, before traffic sizes the mark). */
export interface MarkSlot {
  index: number;
  id: number;
  /** Position around the ring (0 = first). */
  slot: number;
  x: number;
  y: number;
  memoryOnly: boolean;
  label: LabelBlock;
}

/** A link's curve, centre to centre: M from, Q control, to. */
export interface LinkCurve {
  /** Position in the links given. */
  index: number;
  from: number;
  to: number;
  p0: Point;
  c: Point;
  p1: Point;
  /** The two nodes are neighbours on the ring. */
  adjacent: boolean;
}

export interface GraphLayout {
  width: number;
  height: number;
  /** The ring's centre and radius (the ring of nodes with cpus). */
  centre: Point;
  ring: number;
  /** The largest mark radius that keeps marks apart and names clear (the traffic scales up to it). */
  rMax: number;
  slots: MarkSlot[];
  links: LinkCurve[];
}

export const MIN_MARK_RADIUS = 12;
export const MAX_MARK_RADIUS = 40;
/** Gap between a mark's largest extent and its label block. */
export const LABEL_GAP = 4;
/** Room kept between neighbouring marks for their arrows, each side. */
const ARROW_ROOM = 12;
/** Up to this many nodes, slanted labels may go straight above or below their mark. */
const SNAP_MAX_NODES = 8;
/** The largest mark radius, in ring radii. */
const MARK_TO_RING = 0.6;
/** Memory-only nodes are drawn this many ring radii from the centre. */
export const MEMORY_ONLY_RADIUS = 1.25;
/** A link's curve keeps at least this many ring radii from the ring's centre. */
export const CENTRE_CLEARANCE = 0.45;

const NAME_FONT = 11;
const SHARE_FONT = 12;
const DETAIL_FONT = 10;
const LINE_GAP = 3;

/** Estimated width of `text` in px (DejaVu Sans, rounded up; bold ×1.1). */
export function textWidth(text: string, fontPx: number, bold = false): number {
  let em = 0;
  for (const ch of text) {
    if (/[\s.,:;·'()/|ifjlrt-]/.test(ch)) em += 0.42;
    else if (/[%mwMW@]/.test(ch)) em += 1.02;
    else if (/[A-Z]/.test(ch)) em += 0.8;
    else em += 0.66;
  }
  return Math.ceil(em * fontPx * (bold ? 1.1 : 1)) + 2;
}

/** The name of node `id` as drawn. */
export const nodeName = (id: number) => `node ${id}`;

/** The lines of a node's label: its name, its share, and for a memory-only node its detail (two lines: what it is, its bandwidth). */
function labelLines(n: GraphNodeSpec): Array<Omit<LabelLine, 'y' | 'box'>> {
  const lines: Array<Omit<LabelLine, 'y' | 'box'>> = [
    { kind: 'name', text: nodeName(n.id), fontPx: NAME_FONT, bold: false },
    { kind: 'share', text: '100%', fontPx: SHARE_FONT, bold: true },
  ];
  for (const part of splitDetail(n.detail ?? null)) lines.push({ kind: 'detail', text: part, fontPx: DETAIL_FONT, bold: false });
  return lines;
}

/** "CXL · tier 1 · 24.0 GB/s" → ["CXL · tier 1 · ", "24.0 GB/s"]: the bandwidth on its own line (joined, the parts are the whole text). */
export function splitDetail(detail: string | null): string[] {
  if (!detail) return [];
  const cut = detail.lastIndexOf(' · ');
  if (cut < 0 || !/B\/s$/.test(detail)) return [detail];
  return [detail.slice(0, cut + 3), detail.slice(cut + 3)];
}

/** A block of `lines` whose box has its nearest side `reach` px from `at` in `direction` (or straight above or below it). */
function placeBlock(lines: Array<Omit<LabelLine, 'y' | 'box'>>, at: Point, direction: Point, reach: number, snap: boolean): LabelBlock {
  let dir = direction;
  const widths = lines.map((l) => textWidth(l.text.trim(), l.fontPx, l.bold));
  const heights = lines.map((l) => l.fontPx + LINE_GAP);
  const w = Math.max(...widths);
  const h = heights.reduce((a, b) => a + b, 0);
  // A block wider than tall on a slanted direction goes straight above or below instead (less
  // width, the drawing's scarcer room) where the ring is sparse enough to leave it room there.
  if (snap && w > h && Math.abs(dir.y) >= 0.45) dir = { x: 0, y: Math.sign(dir.y) };
  const u = dir;
  // The box's half extent along u (its support), so its nearest edge is `reach` away.
  const along = (w / 2) * Math.abs(u.x) + (h / 2) * Math.abs(u.y);
  const cx = at.x + u.x * (reach + along);
  const cy = at.y + u.y * (reach + along);
  const box = { x0: cx - w / 2, y0: cy - h / 2, x1: cx + w / 2, y1: cy + h / 2 };
  const anchor = u.x > 0.3 ? 'start' : u.x < -0.3 ? 'end' : 'middle';
  const x = anchor === 'start' ? box.x0 : anchor === 'end' ? box.x1 : cx;
  let y = box.y0;
  const placed = lines.map((l, i) => {
    const lw = widths[i]!;
    const x0 = anchor === 'start' ? x : anchor === 'end' ? x - lw : x - lw / 2;
    const line: LabelLine = { ...l, y: y + heights[i]! / 2, box: { x0, y0: y, x1: x0 + lw, y1: y + heights[i]! } };
    y += heights[i]!;
    return line;
  });
  return { box, anchor, x, lines: placed };
}

/** Up to this many nodes with cpus, the ring's order follows the links (see `linkedOrder`). */
const LINKED_ORDER_MAX = 6;

/**
 * Of the ring orders of `ring` (the first kept first), the one with the most links between
 * neighbours, the earliest (in the order given) on a tie: a square of links (0-1-3-2) is drawn
 * as a square, not with its sides as diagonals.
 */
export function linkedOrder(ring: readonly number[], links: readonly GraphLinkSpec[]): number[] {
  if (ring.length < 4 || ring.length > LINKED_ORDER_MAX) return [...ring];
  const linked = new Set(links.map((l) => `${Math.min(l.from, l.to)},${Math.max(l.from, l.to)}`));
  const score = (o: readonly number[]) => o.filter((a, k) => linked.has(`${Math.min(a, o[(k + 1) % o.length]!)},${Math.max(a, o[(k + 1) % o.length]!)}`)).length;
  let best = [...ring];
  let bestScore = score(best);
  const permute = (prefix: number[], rest: number[]) => {
    if (rest.length === 0) {
      const s = score(prefix);
      if (s > bestScore) [best, bestScore] = [prefix, s];
      return;
    }
    rest.forEach((x, k) => permute([...prefix, x], [...rest.slice(0, k), ...rest.slice(k + 1)]));
  };
  permute([ring[0]!], ring.slice(1));
  return best;
}

/** Ring order: nodes with cpus by socket then index (for a few, as their links run: `linkedOrder`), each memory-only node after the node with cpus it is linked to. */
export function ringOrder(nodes: readonly GraphNodeSpec[], links: readonly GraphLinkSpec[]): number[] {
  const all = nodes.map((_, i) => i);
  const sorted = all.filter((i) => nodes[i]!.hasCpus);
  if (sorted.length === 0) return all;
  const socketOf = (i: number) => nodes[i]!.socket ?? Number.MAX_SAFE_INTEGER;
  sorted.sort((a, b) => socketOf(a) - socketOf(b) || a - b);
  const cpu = linkedOrder(sorted, links);
  const order: number[] = [];
  const after = new Map<number, number[]>();
  for (const m of all.filter((i) => !nodes[i]!.hasCpus)) {
    const home = links.find((l) => (l.from === m && nodes[l.to]?.hasCpus) || (l.to === m && nodes[l.from]?.hasCpus));
    const h = home ? (home.from === m ? home.to : home.from) : cpu[cpu.length - 1]!;
    after.set(h, [...(after.get(h) ?? []), m]);
  }
  for (const c of cpu) order.push(c, ...(after.get(c) ?? []));
  return order;
}

/**
 * Unit direction of ring slot k of n: two one above the other; an even count with a flat top
 * edge (`flatTop`); otherwise the first at the top (a ring alternating nodes with cpus and
 * memory-only ones then has its memory-only nodes, with their longer labels, in the corners).
 */
export function slotDirection(k: number, n: number, flatTop = true): Point {
  if (n <= 1) return { x: 0, y: 1 };
  const start = -Math.PI / 2 - (flatTop && n % 2 === 0 && n > 2 ? Math.PI / n : 0);
  const a = start + (2 * Math.PI * k) / n;
  return { x: Math.cos(a), y: Math.sin(a) };
}

interface Draft {
  rMax: number;
  centres: Point[];
  blocks: LabelBlock[];
  bounds: Box;
}

/** Everything at ring radius `ring` around (0, 0): centres, rMax, blocks and their bounds. */
function draft(nodes: readonly GraphNodeSpec[], order: readonly number[], ring: number): Draft {
  const n = nodes.length;
  const mixed = nodes.some((x) => x.hasCpus) && nodes.some((x) => !x.hasCpus);
  const dirs: Point[] = [];
  const centres: Point[] = [];
  order.forEach((i, k) => {
    const u = slotDirection(k, n, !mixed);
    const rho = mixed && !nodes[i]!.hasCpus ? MEMORY_ONLY_RADIUS : 1;
    dirs[i] = u;
    centres[i] = n <= 1 ? { x: 0, y: 0 } : { x: u.x * ring * rho, y: u.y * ring * rho };
  });
  let closest = Infinity;
  for (let a = 0; a < n; a++) for (let b = a + 1; b < n; b++) closest = Math.min(closest, Math.hypot(centres[a]!.x - centres[b]!.x, centres[a]!.y - centres[b]!.y));
  // Apart by twice the arrow room, and (two nodes) no wider than MARK_TO_RING × the ring, so the arrows between them have length.
  const rMax = Math.max(MIN_MARK_RADIUS, Math.min(MAX_MARK_RADIUS, n <= 1 ? MAX_MARK_RADIUS : Math.min(closest / 2 - ARROW_ROOM, MARK_TO_RING * ring)));
  const blocks = nodes.map((x, i) => placeBlock(labelLines(x), centres[i]!, dirs[i]!, rMax + LABEL_GAP, n <= SNAP_MAX_NODES));
  const bounds = { x0: Infinity, y0: Infinity, x1: -Infinity, y1: -Infinity };
  const grow = (b: Box) => {
    bounds.x0 = Math.min(bounds.x0, b.x0);
    bounds.y0 = Math.min(bounds.y0, b.y0);
    bounds.x1 = Math.max(bounds.x1, b.x1);
    bounds.y1 = Math.max(bounds.y1, b.y1);
  };
  centres.forEach((c) => grow({ x0: c.x - rMax, y0: c.y - rMax, x1: c.x + rMax, y1: c.y + rMax }));
  blocks.forEach((b) => grow(b.box));
  return { rMax, centres, blocks, bounds };
}

const shiftBox = (b: Box, dx: number, dy: number): Box => ({ x0: b.x0 + dx, y0: b.y0 + dy, x1: b.x1 + dx, y1: b.y1 + dy });

/**
 * The layout of `nodes` in a `width` × `height` drawing (see the module comment). Depends only on
 * its arguments: the same machine gives the same positions, whatever its traffic.
 */
export function graphLayout(nodes: readonly GraphNodeSpec[], links: readonly GraphLinkSpec[], width: number, height: number = width): GraphLayout {
  const order = ringOrder(nodes, links);
  const fits = (ring: number) => {
    const { bounds } = draft(nodes, order, ring);
    return bounds.x1 - bounds.x0 <= width && bounds.y1 - bounds.y0 <= height;
  };
  // The largest ring that fits (the bounds grow with the ring: bisection).
  let lo = 0;
  let hi = Math.max(width, height);
  for (let i = 0; i < 40; i++) {
    const mid = (lo + hi) / 2;
    if (fits(mid)) lo = mid;
    else hi = mid;
  }
  const ring = nodes.length > 1 ? lo : 0;
  const d = draft(nodes, order, ring);
  const dx = (width - (d.bounds.x1 - d.bounds.x0)) / 2 - d.bounds.x0;
  const dy = (height - (d.bounds.y1 - d.bounds.y0)) / 2 - d.bounds.y0;
  const slotOf = new Map(order.map((i, k) => [i, k]));
  const slots: MarkSlot[] = nodes.map((x, i) => {
    const b = d.blocks[i]!;
    return {
      index: i,
      id: x.id,
      slot: slotOf.get(i)!,
      x: d.centres[i]!.x + dx,
      y: d.centres[i]!.y + dy,
      memoryOnly: !x.hasCpus,
      label: { ...b, box: shiftBox(b.box, dx, dy), x: b.x + dx, lines: b.lines.map((l) => ({ ...l, y: l.y + dy, box: shiftBox(l.box, dx, dy) })) },
    };
  });
  const centre = { x: dx, y: dy };
  const curves = links.flatMap((l, index) => {
    const a = slots[l.from];
    const b = slots[l.to];
    if (!a || !b || l.from === l.to) return [];
    return [{ ...linkCurve(a, b, centre, ring, nodes.length), index }];
  });
  return { width, height, centre, ring, rMax: d.rMax, slots, links: curves };
}

/**
 * The curve from slot a to slot b: straight when the chord keeps CENTRE_CLEARANCE × ring from the
 * centre, else bent (its midpoint pushed out to that distance) to the chord's side of the centre,
 * or, for a chord through it, to the right of the direction of travel.
 */
export function linkCurve(a: MarkSlot, b: MarkSlot, centre: Point, ring: number, n: number): Omit<LinkCurve, 'index'> {
  const len = Math.hypot(b.x - a.x, b.y - a.y) || 1;
  const nx = -(b.y - a.y) / len;
  const ny = (b.x - a.x) / len;
  const mx = (a.x + b.x) / 2;
  const my = (a.y + b.y) / 2;
  // Signed distance of the chord from the centre along its normal (the right of travel in screen coordinates).
  const side = (mx - centre.x) * nx + (my - centre.y) * ny;
  const clear = CENTRE_CLEARANCE * ring;
  const sign = Math.abs(side) < 1e-6 * Math.max(1, ring) ? 1 : Math.sign(side);
  const push = Math.abs(side) >= clear ? 0 : sign * clear - side;
  // The curve's midpoint is (chord midpoint + control) / 2: the control point goes twice as far.
  const c = { x: mx + 2 * push * nx, y: my + 2 * push * ny };
  const gap = Math.abs(a.slot - b.slot);
  return { from: a.index, to: b.index, p0: { x: a.x, y: a.y }, c, p1: { x: b.x, y: b.y }, adjacent: n <= 3 || gap === 1 || gap === n - 1 };
}

/** The point at t of a quadratic curve. */
export function quadAt(p0: Point, c: Point, p1: Point, t: number): Point {
  const s = 1 - t;
  return { x: s * s * p0.x + 2 * s * t * c.x + t * t * p1.x, y: s * s * p0.y + 2 * s * t * c.y + t * t * p1.y };
}

/** The control point of the part of a quadratic between t0 and t1 (its blossom). */
export function quadControl(p0: Point, c: Point, p1: Point, t0: number, t1: number): Point {
  const w0 = (1 - t0) * (1 - t1);
  const w1 = (1 - t0) * t1 + t0 * (1 - t1);
  const w2 = t0 * t1;
  return { x: w0 * p0.x + w1 * c.x + w2 * p1.x, y: w0 * p0.y + w1 * c.y + w2 * p1.y };
}

/** The t where the curve is `dist` from `from` (searching from tStart towards tEnd; the distance grows along the way). */
export function quadReach(p0: Point, c: Point, p1: Point, from: Point, dist: number, tStart: number, tEnd: number): number {
  let lo = tStart;
  let hi = tEnd;
  for (let i = 0; i < 30; i++) {
    const mid = (lo + hi) / 2;
    const p = quadAt(p0, c, p1, mid);
    if (Math.hypot(p.x - from.x, p.y - from.y) < dist) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/** Do two boxes overlap (touching edges do not)? */
export const boxesOverlap = (a: Box, b: Box) => a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;

/** Does a box come within r of a point (a circle of radius r)? */
export function boxHitsCircle(b: Box, cx: number, cy: number, r: number): boolean {
  const dx = Math.max(b.x0 - cx, 0, cx - b.x1);
  const dy = Math.max(b.y0 - cy, 0, cy - b.y1);
  return Math.hypot(dx, dy) < r;
}
