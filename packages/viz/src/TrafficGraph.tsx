/**
 * The node/link traffic graph of one replay: a NodeMark per NUMA node, sized by the bytes/s its
 * memory controller serves and coloured by that controller's utilisation, labelled with its
 * share of all requests served; a directed link per interconnect direction, its width the
 * bytes/s it carries and its colour its utilisation. A node with cpus carries a cpu glyph; a
 * memory-only node (CXL, HBM in flat mode: no cpus) has none, a dashed outline, and a label with
 * its kind, memory tier and its own memory bandwidth. `trafficLayout` (pure, D3 scales) computes
 * every position, radius, colour and path; the component only renders them.
 */
import { interpolateYlOrRd } from 'd3-scale-chromatic';
import { scaleLinear, scaleSequential, scaleSqrt } from 'd3-scale';
import { formatGBps, formatPercent } from './format.js';
import { nodeLabel, textColorOn } from './palette.js';

export interface TrafficInput {
  nodeIds: readonly number[];
  /** Nodes without cpus, by index. */
  memoryOnly?: readonly boolean[];
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
  /** Centre of the node's name (outside the ring, clear of the other marks). */
  labelX: number;
  labelY: number;
  fill: string;
  text: string;
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
  /** Line path from edge to edge (offset to its side for two-way pairs) and the arrowhead. */
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
}

export const MIN_MARK_RADIUS = 12;
export const MAX_MARK_RADIUS = 40;
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

/** A node's name ("node 12" in 10 px type) as a box around its centre, and its gap from the mark. */
const LABEL_HALF_WIDTH = 20;
const LABEL_HALF_HEIGHT = 6;
const LABEL_GAP = 4;
/** How far past its mark a name can reach, in any direction. */
const LABEL_REACH = LABEL_GAP + 2 * Math.hypot(LABEL_HALF_WIDTH, LABEL_HALF_HEIGHT);

/**
 * The largest mark radius for n marks on a ring in a square of `size`: neighbours never overlap
 * (a radius below half the distance between neighbouring centres, less a gap) and the names,
 * drawn outside the ring, stay inside the square.
 */
export function maxMarkRadius(n: number, size: number): number {
  if (n <= 1) return Math.min(MAX_MARK_RADIUS, size / 2 - LABEL_GAP - 2 * LABEL_HALF_HEIGHT);
  const ring = size / 2 - MAX_MARK_RADIUS - LABEL_REACH;
  return Math.max(MIN_MARK_RADIUS, Math.min(MAX_MARK_RADIUS, ring * Math.sin(Math.PI / n) - 4));
}

export function trafficLayout(t: TrafficInput, size: number, scales: TrafficScales = defaultScales(t)): TrafficLayout {
  const n = t.nodeIds.length;
  const rMax = maxMarkRadius(n, size);
  const rScale = scaleSqrt().domain([0, scales.maxMcLoadBytesPerS]).range([MIN_MARK_RADIUS, rMax]).clamp(true);
  const wScale = scaleLinear().domain([0, scales.maxLinkLoadBytesPerS]).range([MIN_LINK_WIDTH, MAX_LINK_WIDTH]).clamp(true);
  const c = size / 2;
  // The names go outside the ring (radially), so the ring leaves them room on every side.
  const ring = n > 1 ? c - rMax - LABEL_REACH : 0;
  const hotIndex = t.hotIndex !== undefined && t.hotIndex >= 0 && t.hotIndex < n ? t.hotIndex : -1;
  const marks: NodeMark[] = t.nodeIds.map((id, i) => {
    const angle = -Math.PI / 2 + (2 * Math.PI * i) / Math.max(n, 1);
    const util = t.mcUtilisation[i] ?? 0;
    const fill = utilisationColor(util);
    const r = rScale(t.mcLoadBytesPerS[i] ?? 0);
    // One mark: its name under it; several: its name outward from the centre, its box just clear
    // of the mark (the box's extent in that direction past the gap), so clear of its neighbours.
    const cos = Math.cos(angle);
    const sin = Math.sin(angle);
    const out = ring + r + LABEL_GAP + LABEL_HALF_WIDTH * Math.abs(cos) + LABEL_HALF_HEIGHT * Math.abs(sin);
    return {
      index: i,
      id,
      x: c + ring * Math.cos(angle),
      y: c + ring * Math.sin(angle),
      r,
      labelX: n > 1 ? Math.max(LABEL_HALF_WIDTH, Math.min(size - LABEL_HALF_WIDTH, c + out * cos)) : c,
      labelY: n > 1 ? c + out * sin : c + r + LABEL_GAP + LABEL_HALF_HEIGHT,
      fill,
      text: textColorOn(toHex(fill)),
      loadBytesPerS: t.mcLoadBytesPerS[i] ?? 0,
      utilisation: util,
      share: t.mcShare[i] ?? 0,
      hot: i === hotIndex,
      memoryOnly: t.memoryOnly?.[i] ?? false,
      cpuGlyph: !(t.memoryOnly?.[i] ?? false),
      tier: t.tier?.[i] ?? null,
      kind: t.memoryKind?.[i] ?? null,
      capacityBytesPerS: t.capacityBytesPerS?.[i] ?? null,
      tierLabel: (t.memoryOnly?.[i] ?? false) ? tierLabelOf(t.memoryKind?.[i] ?? null, t.tier?.[i] ?? null, t.capacityBytesPerS?.[i] ?? null) : null,
    };
  });
  const links: LinkMark[] = [];
  t.links.forEach((l, index) => {
    const a = marks[l.from];
    const b = marks[l.to];
    if (!a || !b || l.from === l.to) return;
    const dx = b.x - a.x;
    const dy = b.y - a.y;
    const len = Math.hypot(dx, dy) || 1;
    const ux = dx / len;
    const uy = dy / len;
    const load = t.linkLoadBytesPerS[index] ?? 0;
    const width = wScale(load);
    const off = Math.max(3, width / 2 + 1.5);
    const nx = -uy * off;
    const ny = ux * off;
    const x1 = a.x + ux * (a.r + 2) + nx;
    const y1 = a.y + uy * (a.r + 2) + ny;
    const head = 6 + width;
    const x2 = b.x - ux * (b.r + 2) + nx;
    const y2 = b.y - uy * (b.r + 2) + ny;
    const bx = x2 - ux * head;
    const by = y2 - uy * head;
    const hw = head * 0.55;
    const util = t.linkUtilisation[index] ?? 0;
    links.push({
      index,
      from: l.from,
      to: l.to,
      d: `M${r1(x1)},${r1(y1)}L${r1(bx)},${r1(by)}`,
      arrow: `M${r1(x2)},${r1(y2)}L${r1(bx - uy * hw)},${r1(by + ux * hw)}L${r1(bx + uy * hw)},${r1(by - ux * hw)}Z`,
      width,
      stroke: utilisationColor(util),
      loadBytesPerS: load,
      utilisation: util,
      capacityBytesPerS: l.capacityBytesPerS,
      labelX: (x1 + x2) / 2 + nx * 2,
      labelY: (y1 + y2) / 2 + ny * 2,
    });
  });
  return { size, marks, links, hotId: hotIndex >= 0 ? t.nodeIds[hotIndex]! : null };
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

function toHex(color: string): string {
  const m = /rgb\((\d+),\s*(\d+),\s*(\d+)\)/.exec(color);
  if (!m) return color;
  return `#${[m[1], m[2], m[3]].map((v) => Number(v).toString(16).padStart(2, '0')).join('')}`;
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
            {/* The chip sits just left of the node's name, which the layout keeps clear of the marks. */}
            {m.cpuGlyph && <path d={cpuGlyphPath(m.labelX - LABEL_HALF_WIDTH - 4, m.labelY)} data-testid="cpu-glyph" fill="#fff" stroke="#333" strokeWidth={1} aria-hidden="true" />}
            <text x={m.labelX} y={m.labelY} textAnchor="middle" dominantBaseline="central" className="ns-traffic__id" data-testid="node-label">
              {nodeLabel(m.id)}
            </text>
            {m.tierLabel && (
              <text x={m.labelX} y={m.labelY + 2 * LABEL_HALF_HEIGHT + 2} textAnchor="middle" dominantBaseline="central" className="ns-traffic__tier" data-testid="node-tier">
                {m.tierLabel}
              </text>
            )}
            <text x={m.x} y={m.y + 4} textAnchor="middle" className="ns-traffic__share" fill={m.text} data-testid="node-share" data-value={m.share}>
              {formatPercent(m.share, 0)}
            </text>
          </g>
        ))}
      </svg>
      <figcaption className="ns-traffic__legend" data-export-legend>
        <span className="ns-traffic__ramp" aria-hidden="true" />
        <span>colour: utilisation 0 → 100 %</span>
        <span>circle area: memory-controller load (largest = {formatGBps(max.maxMcLoadBytesPerS / 1e9)})</span>
        <span>arrow width: link traffic (widest = {formatGBps(max.maxLinkLoadBytesPerS / 1e9)})</span>
        <span>% = share of the DRAM traffic (bytes) each memory controller serves, under this placement{layout.hotId !== null ? `; hot spot: ${nodeLabel(layout.hotId)}` : ''}</span>
        {layout.marks.some((m) => m.memoryOnly) && <span>chip: a node with cpus; dashed, no chip: a memory-only node (its kind, tier and own bandwidth below it)</span>}
      </figcaption>
    </figure>
  );
}
