/**
 * The node/link traffic graph of one replay: a NodeMark per NUMA node, sized by the bytes/s its
 * memory controller serves and coloured by that controller's utilisation; beside it, outside the
 * ring, its name and its share of all requests served; a directed link per interconnect
 * direction, its width the bytes/s it carries and its colour its utilisation. A node with cpus
 * carries a cpu glyph in its mark; a memory-only node (CXL, HBM in flat mode: no cpus) has none,
 * a dashed outline, sits further out, and its label adds its kind, memory tier and its own memory
 * bandwidth. Where everything goes comes from the machine alone (`graphLayout`, so traffic never
 * moves a node or a name); `trafficLayout` (pure, D3 scales) adds radii, colours and link paths;
 * the component only renders them.
 */
import { interpolateYlOrRd } from 'd3-scale-chromatic';
import { scaleLinear, scaleSequential, scaleSqrt } from 'd3-scale';
import { pathRound } from 'd3-path';
import { formatGBps, formatPercent } from './format.js';
import { nodeLabel } from './palette.js';
import { MAX_MARK_RADIUS, MIN_MARK_RADIUS, graphLayout, quadAt, quadControl, quadReach } from './graph-layout.js';
import type { LabelBlock, LinkCurve, Point } from './graph-layout.js';

export { MAX_MARK_RADIUS, MIN_MARK_RADIUS };

export interface TrafficInput {
  nodeIds: readonly number[];
  /** Nodes without cpus, by index. */
  memoryOnly?: readonly boolean[];
  /** Socket (package) per node, null = unknown: the ring keeps a socket's nodes together. */
  socket?: ReadonlyArray<number | null>;
  /** Memory tier per node (0 = fastest), null = unknown. */
  tier?: ReadonlyArray<number | null>;
  /** What memory each node holds (`dram`, `cxl`, `hbm`, …), null = not said. */
  memoryKind?: ReadonlyArray<string | null>;
  /** The node's own memory bandwidth (sustained capacity), bytes/s. */
  capacityBytesPerS?: readonly number[];
  /** bytes/s served per memory controller (node index). */
  mcLoadBytesPerS: readonly number[];
  /** 0..1 per memory controller. */
  mcUtilisation: readonly number[];
  /** Share of all requests each node serves (sums to 1). */
  mcShare: readonly number[];
  links: ReadonlyArray<{ from: number; to: number; capacityBytesPerS: number }>;
  linkLoadBytesPerS: readonly number[];
  linkUtilisation: readonly number[];
  /** The node index drawn and named as the hot spot (the engine's hotSpotIndex), -1 or absent: none. */
  hotIndex?: number;
}

export interface TrafficScales {
  /** Largest memory-controller load drawn at the largest radius, bytes/s (shared across compared graphs). */
  maxMcLoadBytesPerS: number;
  /** Largest link load drawn at the widest stroke, bytes/s. */
  maxLinkLoadBytesPerS: number;
}

/** One NUMA node drawn in the graph (never called a "node" in code: a graph vertex is a mark). */
export interface NodeMark {
  index: number;
  id: number;
  x: number;
  y: number;
  r: number;
  /** The anchor of the node's name (outside the ring, clear of every mark and label). */
  labelX: number;
  labelY: number;
  /** The label block beside the mark: name, share, and a memory-only node's detail, each line's box. */
  label: LabelBlock;
  fill: string;
  loadBytesPerS: number;
  utilisation: number;
  share: number;
  /** Serves more than 1.5 × an even share (the engine's hot-spot rule). */
  hot: boolean;
  memoryOnly: boolean;
  /** Drawn with a cpu glyph: the node has cpus. */
  cpuGlyph: boolean;
  tier: number | null;
  kind: string | null;
  capacityBytesPerS: number | null;
  /** The tier line under a memory-only node's id ("CXL · tier 1 · 24 GB/s"), null for nodes with cpus. */
  tierLabel: string | null;
}

export interface LinkMark {
  index: number;
  from: number;
  to: number;
  /** Curve from edge to edge (offset to its side for two-way pairs; bent round the ring's centre between opposite nodes) and the arrowhead. */
  d: string;
  arrow: string;
  width: number;
  stroke: string;
  loadBytesPerS: number;
  utilisation: number;
  capacityBytesPerS: number;
  labelX: number;
  labelY: number;
}

export interface TrafficLayout {
  size: number;
  marks: NodeMark[];
  links: LinkMark[];
  hotId: number | null;
  /** The ring's centre and radius. */
  centre: Point;
  ring: number;
}

export const MIN_LINK_WIDTH = 1;
export const MAX_LINK_WIDTH = 12;

/** Utilisation 0..1 → colour (yellow → red), shared by marks and links. */
export const utilisationColor = scaleSequential(interpolateYlOrRd).domain([0, 1]);

export function defaultScales(t: TrafficInput): TrafficScales {
  return {
    maxMcLoadBytesPerS: Math.max(1, ...t.mcLoadBytesPerS),
    maxLinkLoadBytesPerS: Math.max(1, ...t.linkLoadBytesPerS),
  };
}

/** The largest mark radius for n nodes with cpus (and no links) in a square of `size` (graphLayout's rMax). */
export function maxMarkRadius(n: number, size: number): number {
  return graphLayout(Array.from({ length: n }, (_, id) => ({ id, hasCpus: true })), [], size).rMax;
}

/** The graph's geometry (graphLayout: from the machine alone) with each mark sized, coloured and labelled by its traffic. */
export function trafficLayout(t: TrafficInput, size: number, scales: TrafficScales = defaultScales(t)): TrafficLayout {
  const n = t.nodeIds.length;
  const memoryOnly = (i: number) => t.memoryOnly?.[i] ?? false;
  const tierLabels = t.nodeIds.map((_, i) => (memoryOnly(i) ? tierLabelOf(t.memoryKind?.[i] ?? null, t.tier?.[i] ?? null, t.capacityBytesPerS?.[i] ?? null) : null));
  const specs = t.nodeIds.map((id, i) => ({ id, hasCpus: !memoryOnly(i), socket: t.socket?.[i] ?? null, detail: tierLabels[i] }));
  const geometry = graphLayout(specs, t.links, size);
  const rScale = scaleSqrt().domain([0, scales.maxMcLoadBytesPerS]).range([MIN_MARK_RADIUS, geometry.rMax]).clamp(true);
  const wScale = scaleLinear().domain([0, scales.maxLinkLoadBytesPerS]).range([MIN_LINK_WIDTH, MAX_LINK_WIDTH]).clamp(true);
  const hotIndex = t.hotIndex !== undefined && t.hotIndex >= 0 && t.hotIndex < n ? t.hotIndex : -1;
  const marks: NodeMark[] = geometry.slots.map((s, i) => {
    const util = t.mcUtilisation[i] ?? 0;
    const name = s.label.lines.find((l) => l.kind === 'name')!;
    return {
      index: i,
      id: s.id,
      x: s.x,
      y: s.y,
      r: rScale(t.mcLoadBytesPerS[i] ?? 0),
      labelX: s.label.x,
      labelY: name.y,
      label: s.label,
      fill: utilisationColor(util),
      loadBytesPerS: t.mcLoadBytesPerS[i] ?? 0,
      utilisation: util,
      share: t.mcShare[i] ?? 0,
      hot: i === hotIndex,
      memoryOnly: memoryOnly(i),
      cpuGlyph: !memoryOnly(i),
      tier: t.tier?.[i] ?? null,
      kind: t.memoryKind?.[i] ?? null,
      capacityBytesPerS: t.capacityBytesPerS?.[i] ?? null,
      tierLabel: tierLabels[i] ?? null,
    };
  });
  const links: LinkMark[] = geometry.links.map((curve) => {
    const l = t.links[curve.index]!;
    const load = t.linkLoadBytesPerS[curve.index] ?? 0;
    const width = wScale(load);
    const util = t.linkUtilisation[curve.index] ?? 0;
    return {
      index: curve.index,
      from: l.from,
      to: l.to,
      ...linkShape(curve, marks[l.from]!.r, marks[l.to]!.r, width),
      width,
      stroke: utilisationColor(util),
      loadBytesPerS: load,
      utilisation: util,
      capacityBytesPerS: l.capacityBytesPerS,
    };
  });
  return { size, marks, links, hotId: hotIndex >= 0 ? t.nodeIds[hotIndex]! : null, centre: geometry.centre, ring: geometry.ring };
}

/**
 * A link's drawn shape: its curve moved to the right of its direction of travel (so the two
 * directions of a pair run side by side), from the edge of one mark to an arrowhead touching
 * the other.
 */
export function linkShape(curve: LinkCurve, rFrom: number, rTo: number, width: number): Pick<LinkMark, 'd' | 'arrow' | 'labelX' | 'labelY'> {
  const len = Math.hypot(curve.p1.x - curve.p0.x, curve.p1.y - curve.p0.y) || 1;
  const off = Math.max(3, width / 2 + 1.5);
  const nx = (-(curve.p1.y - curve.p0.y) / len) * off;
  const ny = ((curve.p1.x - curve.p0.x) / len) * off;
  const move = (p: Point) => ({ x: p.x + nx, y: p.y + ny });
  const [p0, c, p1] = [move(curve.p0), move(curve.c), move(curve.p1)];
  const head = 6 + width;
  const t0 = quadReach(p0, c, p1, curve.p0, rFrom + 2, 0, 0.5);
  const tTip = quadReach(p0, c, p1, curve.p1, rTo + 2, 1, 0.5);
  const tip = quadAt(p0, c, p1, tTip);
  const tBase = Math.max(t0, quadReach(p0, c, p1, tip, head, tTip, t0));
  const start = quadAt(p0, c, p1, t0);
  const base = quadAt(p0, c, p1, tBase);
  const ctrl = quadControl(p0, c, p1, t0, tBase);
  const line = pathRound(1);
  line.moveTo(start.x, start.y);
  line.quadraticCurveTo(ctrl.x, ctrl.y, base.x, base.y);
  const bl = Math.hypot(tip.x - base.x, tip.y - base.y) || 1;
  const hw = (head * 0.55) / bl;
  const arrow = pathRound(1);
  arrow.moveTo(tip.x, tip.y);
  arrow.lineTo(base.x - (tip.y - base.y) * hw, base.y + (tip.x - base.x) * hw);
  arrow.lineTo(base.x + (tip.y - base.y) * hw, base.y - (tip.x - base.x) * hw);
  arrow.closePath();
  const mid = quadAt(p0, c, p1, 0.5);
  return { d: line.toString(), arrow: arrow.toString(), labelX: mid.x + nx, labelY: mid.y + ny };
}

const r1 = (v: number) => Math.round(v * 10) / 10;

/** "CXL · tier 1 · 24.0 GB/s": what a memory-only node is, from what is known. */
export function tierLabelOf(kind: string | null, tier: number | null, capacityBytesPerS: number | null): string {
  const parts = [kind ? kind.toUpperCase() : 'memory only'];
  if (tier !== null) parts.push(`tier ${tier}`);
  if (capacityBytesPerS !== null && capacityBytesPerS > 0) parts.push(formatGBps(capacityBytesPerS / 1e9));
  return parts.join(' · ');
}

/** A small chip with pins above a node that has cpus (path centred on x, y). */
function cpuGlyphPath(x: number, y: number): string {
  const h = 5;
  const body = `M${r1(x - h)},${r1(y - h)}h${2 * h}v${2 * h}h${-2 * h}Z`;
  const pins = [-2.5, 0, 2.5].map((o) => `M${r1(x + o)},${r1(y - h)}v-2M${r1(x + o)},${r1(y + h)}v2M${r1(x - h)},${r1(y + o)}h-2M${r1(x + h)},${r1(y + o)}h2`).join('');
  return body + pins;
}

/** A mark's label block: its name, its share, and a memory-only node's detail (one text, a line per part). */
function MarkLabel({ mark }: { mark: NodeMark }) {
  const { anchor, x, lines } = mark.label;
  const name = lines.find((l) => l.kind === 'name')!;
  const share = lines.find((l) => l.kind === 'share')!;
  const detail = lines.filter((l) => l.kind === 'detail');
  return (
    <>
      <text x={x} y={name.y} textAnchor={anchor} dominantBaseline="central" className="ns-traffic__id" data-testid="node-label">
        {nodeLabel(mark.id)}
      </text>
      <text x={x} y={share.y} textAnchor={anchor} dominantBaseline="central" className="ns-traffic__share" data-testid="node-share" data-value={mark.share}>
        {formatPercent(mark.share, 0)}
      </text>
      {mark.tierLabel && detail.length > 0 && (
        <text textAnchor={anchor} dominantBaseline="central" className="ns-traffic__tier" data-testid="node-tier">
          {detail.map((l, i) => (
            <tspan key={i} x={x} y={l.y}>
              {l.text}
            </tspan>
          ))}
        </text>
      )}
    </>
  );
}

export interface TrafficGraphProps {
  traffic: TrafficInput;
  size?: number;
  scales?: TrafficScales;
  /** Accessible title, e.g. "First-touch on amd-opteron-8385-4p". */
  title: string;
}

export function TrafficGraph({ traffic, size = 300, scales, title }: TrafficGraphProps) {
  const layout = trafficLayout(traffic, size, scales);
  const max = scales ?? defaultScales(traffic);
  return (
    <figure className="ns-traffic" data-testid="traffic-graph" data-hot-node={layout.hotId ?? ''} data-export="traffic" data-export-title={title}>
      <svg viewBox={`0 0 ${size} ${size}`} width={size} height={size} role="img" aria-label={`${title}: memory-controller load per node and traffic per link`}>
        <title>{title}</title>
        {layout.links.map((l) => (
          <g key={`l${l.index}`} className="ns-traffic__link" data-testid="traffic-link" data-from={traffic.nodeIds[l.from]} data-to={traffic.nodeIds[l.to]} data-value={l.loadBytesPerS}>
            <title>
              {`${nodeLabel(traffic.nodeIds[l.from]!)} → ${nodeLabel(traffic.nodeIds[l.to]!)}: ${formatGBps(l.loadBytesPerS / 1e9)} of ${formatGBps(l.capacityBytesPerS / 1e9)} (${formatPercent(l.utilisation)} utilised)`}
            </title>
            <path d={l.d} stroke={l.stroke} strokeWidth={l.width} fill="none" strokeLinecap="butt" />
            <path d={l.arrow} fill={l.stroke} stroke="#444" strokeWidth={0.5} />
          </g>
        ))}
        {layout.marks.map((m) => (
          <g
            key={`m${m.id}`}
            className={`ns-traffic__mark${m.memoryOnly ? ' ns-traffic__mark--memory-only' : ''}`}
            data-testid="node-mark"
            data-node={m.id}
            data-share={m.share}
            data-load={m.loadBytesPerS}
            data-r={m.r}
            data-hot={m.hot ? 'true' : 'false'}
            data-memory-only={m.memoryOnly ? 'true' : 'false'}
            data-tier={m.tier ?? ''}
            data-capacity={m.capacityBytesPerS ?? ''}
          >
            <title>
              {`${nodeLabel(m.id)}${m.memoryOnly ? ` (memory only${m.kind ? `, ${m.kind.toUpperCase()}` : ''})` : ''}${m.tier !== null ? `, memory tier ${m.tier}` : ''}: serves ${formatPercent(m.share)} of the DRAM traffic (bytes), ${formatGBps(m.loadBytesPerS / 1e9)}` +
                `${m.capacityBytesPerS ? ` of its own ${formatGBps(m.capacityBytesPerS / 1e9)}` : ''}, memory controller ${formatPercent(m.utilisation)} utilised`}
            </title>
            <circle cx={m.x} cy={m.y} r={m.r} fill={m.fill} stroke={m.hot ? '#b00020' : '#333'} strokeWidth={m.hot ? 3 : 1} strokeDasharray={m.memoryOnly ? '4 2' : undefined} />
            {/* The chip sits in the mark; the label block beside it, which the layout keeps clear of every mark. */}
            {m.cpuGlyph && <path d={cpuGlyphPath(m.x, m.y)} data-testid="cpu-glyph" fill="#fff" stroke="#333" strokeWidth={1} aria-hidden="true" />}
            <MarkLabel mark={m} />
          </g>
        ))}
      </svg>
      <figcaption className="ns-traffic__legend" data-export-legend>
        <span className="ns-traffic__ramp" aria-hidden="true" />
        <span>colour: utilisation 0 → 100 %</span>
        <span>circle area: memory-controller load (largest = {formatGBps(max.maxMcLoadBytesPerS / 1e9)})</span>
        <span>arrow width: link traffic (widest = {formatGBps(max.maxLinkLoadBytesPerS / 1e9)})</span>
        <span>% = share of the DRAM traffic (bytes) each memory controller serves, under this placement{layout.hotId !== null ? `; hot spot: ${nodeLabel(layout.hotId)}` : ''}</span>
        {layout.marks.some((m) => m.memoryOnly) && <span>chip: a node with cpus; dashed, no chip, further out: a memory-only node (its kind, tier and own bandwidth beside it)</span>}
      </figcaption>
    </figure>
  );
}
