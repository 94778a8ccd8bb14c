import { useCallback, useMemo, useState } from 'react';
import type { KeyboardEvent } from 'react';
import { ChartCanvas } from './ChartCanvas.js';
import type { CanvasSize } from './ChartCanvas.js';
import { formatCount, formatPercent } from './format.js';

/**
 * One node of a call tree as the flame graph draws it: a flat array where a node's parent comes
 * before it (index 0 is the root, parent -1), with its self weight (samples attributed to it) and
 * total weight (self + its children's totals).
 */
export interface FlameNode {
  name: string;
  /** `file:line`, shown in the tooltip and the read-out; null unknown. */
  location?: string | null;
  parent: number;
  self: number;
  total: number;
}

/** A drawn frame: node `node` at row `row` (0 = the top), in CSS pixels. */
export interface FlameRect {
  node: number;
  row: number;
  x: number;
  y: number;
  width: number;
  height: number;
  /** An ancestor of the zoomed node: drawn across the whole width, as context. */
  ancestor: boolean;
}

export interface FlameLayout {
  rects: FlameRect[];
  /** Rows drawn (the chart's height is rows × rowHeight). */
  rows: number;
  /** The node drawn across the whole width. */
  zoom: number;
  /** Index into rects per node, -1 for a node not drawn (outside the zoom, or narrower than minWidth). */
  rectOf: Int32Array;
}

export interface FlameLayoutOptions {
  width: number;
  rowHeight: number;
  /** The node to zoom into (drawn across the whole width; its ancestors above it, also full width); default the root. */
  zoom?: number;
  /** Frames narrower than this (px) are not drawn, nor their children; default 0.5. */
  minWidth?: number;
}

/** Each node's children, heaviest (largest total) first, then by name: the left-to-right order of the flame graph. */
export function flameChildren(nodes: readonly FlameNode[]): number[][] {
  const out: number[][] = nodes.map(() => []);
  for (let i = 1; i < nodes.length; i++) {
    const p = nodes[i]!.parent;
    if (p >= 0 && p < i) out[p]!.push(i);
  }
  for (const c of out) c.sort((a, b) => nodes[b]!.total - nodes[a]!.total || (nodes[a]!.name < nodes[b]!.name ? -1 : nodes[a]!.name > nodes[b]!.name ? 1 : a - b));
  return out;
}

/** Depth of each node (0 for the root). */
function depths(nodes: readonly FlameNode[]): Int32Array {
  const d = new Int32Array(nodes.length);
  for (let i = 1; i < nodes.length; i++) {
    const p = nodes[i]!.parent;
    d[i] = p >= 0 && p < i ? d[p]! + 1 : 0;
  }
  return d;
}

/**
 * Rectangles of an icicle-style flame graph, **root at the top**: each row is one stack depth,
 * each frame as wide as its total weight (a share of the zoomed node's total), children left to
 * right heaviest first under their parent, starting at its left edge. Zoomed into a node, that
 * node spans the whole width at its own row, its ancestors span it above (context), and only its
 * descendants are drawn below. Pure.
 */
export function flameLayout(nodes: readonly FlameNode[], options: FlameLayoutOptions, children: number[][] = flameChildren(nodes)): FlameLayout {
  const { width, rowHeight } = options;
  const minWidth = options.minWidth ?? 0.5;
  const rectOf = new Int32Array(nodes.length).fill(-1);
  const rects: FlameRect[] = [];
  if (nodes.length === 0) return { rects, rows: 0, zoom: 0, rectOf };
  const zoom = options.zoom !== undefined && options.zoom >= 0 && options.zoom < nodes.length ? options.zoom : 0;
  const depth = depths(nodes);
  const push = (node: number, x: number, w: number, ancestor: boolean) => {
    rectOf[node] = rects.length;
    rects.push({ node, row: depth[node]!, x, y: depth[node]! * rowHeight, width: w, height: rowHeight, ancestor });
  };
  // The zoomed node's ancestors, root first, each across the whole width.
  const chain: number[] = [];
  for (let a = nodes[zoom]!.parent; a >= 0; a = nodes[a]!.parent) chain.push(a);
  for (let k = chain.length - 1; k >= 0; k--) push(chain[k]!, 0, width, true);
  const total = nodes[zoom]!.total;
  const scale = total > 0 ? width / total : 0;
  let rows = depth[zoom]! + 1;
  // Depth-first, each child from where the previous sibling ended.
  const stack: Array<{ node: number; x: number }> = [{ node: zoom, x: 0 }];
  while (stack.length > 0) {
    const { node, x } = stack.pop()!;
    const w = node === zoom ? width : nodes[node]!.total * scale;
    if (w < minWidth) continue;
    push(node, x, w, false);
    rows = Math.max(rows, depth[node]! + 1);
    let cx = x;
    const kids = children[node]!;
    const next: Array<{ node: number; x: number }> = [];
    for (const c of kids) {
      next.push({ node: c, x: cx });
      cx += nodes[c]!.total * scale;
    }
    for (let k = next.length - 1; k >= 0; k--) stack.push(next[k]!);
  }
  return { rects, rows, zoom, rectOf };
}

/** The frame under a point (CSS pixels), or null. */
export function flameRectAt(layout: FlameLayout, x: number, y: number): FlameRect | null {
  for (const r of layout.rects) if (x >= r.x && x < r.x + r.width && y >= r.y && y < r.y + r.height) return r;
  return null;
}

export type FlameMove = 'parent' | 'child' | 'previous' | 'next';

/**
 * Where the keyboard focus goes from `node`: its parent (up, toward the root), its heaviest
 * drawn child (down), or the drawn frame left or right of it in the same row (across subtrees).
 * The node itself where there is nothing that way.
 */
export function flameNeighbour(layout: FlameLayout, nodes: readonly FlameNode[], children: number[][], node: number, move: FlameMove): number {
  if (layout.rectOf[node] === undefined || layout.rectOf[node]! < 0) return layout.zoom;
  if (move === 'parent') {
    const p = nodes[node]!.parent;
    return p >= 0 && layout.rectOf[p]! >= 0 ? p : node;
  }
  if (move === 'child') return children[node]!.find((c) => layout.rectOf[c]! >= 0) ?? node;
  const me = layout.rects[layout.rectOf[node]!]!;
  let best: FlameRect | null = null;
  for (const r of layout.rects) {
    if (r.row !== me.row || r.node === node) continue;
    if (move === 'next' && r.x >= me.x + me.width - 1e-9 && (!best || r.x < best.x)) best = r;
    if (move === 'previous' && r.x + r.width <= me.x + 1e-9 && (!best || r.x > best.x)) best = r;
  }
  return best ? best.node : node;
}

/** A stable warm colour per function name (flame graph convention: the hue says nothing but tells neighbours apart). */
export function flameColor(name: string): string {
  let h = 2166136261;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619);
  const u = (h >>> 0) / 4294967296;
  const v = ((h >>> 8) & 0xff) / 255;
  return `hsl(${Math.round(10 + 40 * u)}, ${Math.round(70 + 20 * v)}%, ${Math.round(58 + 12 * (1 - u))}%)`;
}

export interface FlameGraphProps {
  nodes: readonly FlameNode[];
  width?: number;
  rowHeight?: number;
  /** What the weights count, plural (`first touches`, `accesses`, `samples (weighted)`). */
  unit?: string;
  /** Called with the zoomed node (0: not zoomed) whenever it changes. */
  onZoom?: (node: number) => void;
  testId?: string;
  label?: string;
}

/**
 * A flame graph of a call tree on the shared canvas primitive, root at the top (an icicle): width
 * = total weight. Hover reads out a frame (function, file:line, self and total weight and their
 * share of everything drawn); click zooms into it (its ancestors stay above as context; click
 * one, or **Reset zoom**, to go back out). Keyboard, once focused: ↑ parent, ↓ heaviest child,
 * ←/→ the neighbouring frame in the row, Enter zooms into the focused frame, Escape or 0 resets,
 * Home goes to the root; the focused frame is outlined and read out in an `aria-live` line.
 */
export function FlameGraph({ nodes, width = 960, rowHeight = 18, unit = 'samples (weighted)', onZoom, testId = 'flame-graph', label }: FlameGraphProps) {
  const children = useMemo(() => flameChildren(nodes), [nodes]);
  // Zoom and focus belong to one tree: a new tree (other filters) starts unzoomed.
  const [view, setView] = useState<{ nodes: readonly FlameNode[]; zoom: number; focus: number | null }>({ nodes, zoom: 0, focus: null });
  const current = view.nodes === nodes ? view : { nodes, zoom: 0, focus: null };
  const zoom = current.zoom < nodes.length ? current.zoom : 0;
  const layout = useMemo(() => flameLayout(nodes, { width, rowHeight, zoom }, children), [nodes, width, rowHeight, zoom, children]);
  const focus = current.focus !== null && current.focus < nodes.length && layout.rectOf[current.focus]! >= 0 ? current.focus : null;
  const [focused, setFocused] = useState(false);
  const height = Math.max(1, layout.rows) * rowHeight;
  const all = nodes[0]?.total ?? 0;

  const setZoom = (z: number) => {
    setView({ nodes, zoom: z, focus: z });
    onZoom?.(z);
  };
  const setFocus = (f: number) => setView({ nodes, zoom, focus: f });

  const describe = useCallback(
    (n: number) => {
      const node = nodes[n]!;
      const share = (v: number) => (all > 0 ? formatPercent(v / all) : '–');
      const where = node.location ? ` (${node.location})` : '';
      return `${node.name}${where}: total ${formatCount(node.total)} ${unit} (${share(node.total)}), self ${formatCount(node.self)} (${share(node.self)})`;
    },
    [nodes, all, unit],
  );

  const draw = useCallback(
    (ctx: CanvasRenderingContext2D, _size: CanvasSize) => {
      const style = getComputedStyle(ctx.canvas);
      ctx.font = `11px ${style.fontFamily || 'sans-serif'}`;
      ctx.textBaseline = 'middle';
      for (const r of layout.rects) {
        const node = nodes[r.node]!;
        const w = Math.max(1, r.width - 1);
        ctx.globalAlpha = r.ancestor ? 0.55 : 1;
        ctx.fillStyle = r.node === 0 ? '#b8bec6' : flameColor(node.name);
        ctx.fillRect(r.x, r.y, w, r.height - 1);
        ctx.globalAlpha = 1;
        if (w < 24) continue;
        ctx.fillStyle = '#1b1f24';
        let text = node.name;
        const room = w - 6;
        if (ctx.measureText(text).width > room) {
          while (text.length > 1 && ctx.measureText(`${text}…`).width > room) text = text.slice(0, -1);
          text = `${text}…`;
        }
        ctx.fillText(text, r.x + 3, r.y + r.height / 2);
      }
    },
    [layout, nodes],
  );

  const hitTest = useCallback((x: number, y: number) => flameRectAt(layout, x, y)?.node ?? null, [layout]);

  function key(e: KeyboardEvent<HTMLCanvasElement>) {
    const at = focus ?? zoom;
    const go = (m: FlameMove) => setFocus(flameNeighbour(layout, nodes, children, at, m));
    if (e.key === 'ArrowUp') go('parent');
    else if (e.key === 'ArrowDown') go('child');
    else if (e.key === 'ArrowLeft') go('previous');
    else if (e.key === 'ArrowRight') go('next');
    else if (e.key === 'Home') setFocus(0);
    else if (e.key === 'Enter' || e.key === ' ') setZoom(at);
    else if (e.key === 'Escape' || e.key === '0') setZoom(0);
    else return;
    e.preventDefault();
  }

  const box = focus !== null ? layout.rects[layout.rectOf[focus]!]! : null;
  const focusStyle = box
    ? { left: `${(box.x / width) * 100}%`, top: `${(box.y / height) * 100}%`, width: `${(Math.max(box.width, 4) / width) * 100}%`, height: `${(box.height / height) * 100}%` }
    : null;
  const summary =
    label ??
    `Flame graph, root at the top: ${formatCount(nodes.length, 'frame')} of the call tree, ${formatCount(all)} ${unit}; width is total weight. ` +
      'Arrow keys move between frames (read out below), Enter zooms into the focused frame, Escape resets the zoom.';

  if (nodes.length === 0) return null;
  return (
    <div className="ns-flame" data-testid={testId} data-zoom={zoom} data-rects={layout.rects.length} data-total={all} data-export="flame-graph">
      <div className="ns-heatmap__toolbar" role="group" aria-label="Flame graph zoom">
        <button type="button" onClick={() => setZoom(0)} disabled={zoom === 0} data-testid={`${testId}-reset`}>
          Reset zoom
        </button>
        <span className="ns-muted" data-testid={`${testId}-zoomed`} data-export-legend>
          {zoom === 0 ? 'whole tree' : `zoomed into ${nodes[zoom]!.name}`} · root at the top, width = total weight
        </span>
      </div>
      <ChartCanvas
        width={width}
        height={height}
        draw={draw}
        hitTest={hitTest}
        tooltip={describe}
        onPick={(n) => setZoom(n)}
        label={summary}
        testId={`${testId}-canvas`}
        tabIndex={0}
        onKeyDown={key}
        onFocus={() => {
          setFocused(true);
          if (focus === null) setFocus(zoom);
        }}
        onBlur={() => setFocused(false)}
        overlay={focusStyle && focused ? <div className="ns-heatmap__focus" style={focusStyle} data-testid={`${testId}-focus`} aria-hidden="true" /> : null}
      />
      <p
        className="ns-heatmap__readout"
        role="status"
        aria-live="polite"
        data-testid={`${testId}-frame`}
        data-node={focus ?? ''}
        data-name={focus !== null ? nodes[focus]!.name : ''}
        data-total={focus !== null ? nodes[focus]!.total : ''}
        data-self={focus !== null ? nodes[focus]!.self : ''}
      >
        {focus !== null ? describe(focus) : 'Focus the flame graph to move between its frames with the arrow keys.'}
      </p>
    </div>
  );
}
