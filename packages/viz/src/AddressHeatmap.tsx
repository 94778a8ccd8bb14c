import { scaleLinear } from 'd3-scale';
import { interpolateViridis } from 'd3-scale-chromatic';
import { useCallback, useMemo, useRef, useState } from 'react';
import type { KeyboardEvent, PointerEvent, WheelEvent } from 'react';
import { ChartCanvas, canvasPoint } from './ChartCanvas.js';
import type { CanvasSize } from './ChartCanvas.js';
import { formatCount, formatDurationTick, formatDurationUs } from './format.js';
import { nodeColor, nodeLabel } from './palette.js';

/** A binned pages × time grid (the Worker's answer), as the heatmap draws it. */
export interface HeatmapGrid {
  /** 'node': hue = the accessing node, intensity = samples; otherwise intensity = that count. */
  mode: 'node' | 'samples' | 'faults' | 'accesses';
  rows: number;
  cols: number;
  fromUs: number;
  toUs: number;
  /** Pages shown: [rankLo, rankHi) in address order. */
  rankLo: number;
  rankHi: number;
  values: ArrayLike<number>;
  /** Per cell, node slot (index into nodeIds; nodeIds.length = unknown) of the dominant accessing node. */
  dominant: ArrayLike<number>;
  rowAddress: ArrayLike<number>;
  rowRegion: ArrayLike<number>;
  max: number;
  total: number;
  pageCount: number;
}

/** One cell of the grid, as a click or Enter/Space selects it. */
export interface HeatmapCell {
  row: number;
  col: number;
  /** Region of the row's first page (-1 none). */
  region: number;
  /** Pages of the row, [rankLo, rankHi) in address order. */
  rankLo: number;
  rankHi: number;
  /** Time span of the column, µs. */
  fromUs: number;
  toUs: number;
  value: number;
}

export interface AddressHeatmapProps {
  grid: HeatmapGrid;
  nodeIds: readonly number[];
  /** Zoom to pages [lo, hi) (address order). */
  onZoom: (pages: { lo: number; hi: number } | null) => void;
  /** A cell was clicked, or chosen with Enter/Space from the keyboard. */
  onSelect?: (cell: HeatmapCell) => void;
  /** Pages to mark (address-order ranks, ascending): rows holding one get a bar in the margin and an outline. */
  marks?: ArrayLike<number> | null;
  /** A region's short name for tooltips. */
  regionName?: (region: number) => string;
  width?: number;
  height?: number;
  testId?: string;
}

export const HEATMAP_MARGIN = { top: 6, right: 12, bottom: 24, left: 120 };

const MODE_UNIT: Record<HeatmapGrid['mode'], [string, string]> = {
  node: ['sample', 'samples'],
  samples: ['sample', 'samples'],
  faults: ['first touch', 'first touches'],
  accesses: ['access', 'accesses'],
};

export function formatAddress(a: number): string {
  return '0x' + Math.round(a).toString(16);
}

/** Intensity 0..1 of a count, on a log scale so a few hot cells do not wash out the rest. */
export function intensity(v: number, max: number): number {
  if (v <= 0 || max <= 0) return 0;
  return Math.log1p(v) / Math.log1p(max);
}

/** Plot size that the Worker should bin to: one cell per pixel row, one per two pixel columns. */
export function heatmapResolution(width: number, height: number): { rows: number; cols: number } {
  return {
    rows: Math.max(1, Math.floor(height - HEATMAP_MARGIN.top - HEATMAP_MARGIN.bottom)),
    cols: Math.max(1, Math.floor((width - HEATMAP_MARGIN.left - HEATMAP_MARGIN.right) / 2)),
  };
}

/** Zoom the page window [lo, hi) by `factor` (< 1 = in) around `centre`, clamped to [0, pageCount). */
export function zoomPages(lo: number, hi: number, factor: number, centre: number, pageCount: number): { lo: number; hi: number } | null {
  const span = Math.max(1, Math.round((hi - lo) * factor));
  if (span >= pageCount) return null;
  let nlo = Math.round(centre - ((centre - lo) / Math.max(1, hi - lo)) * span);
  nlo = Math.max(0, Math.min(pageCount - span, nlo));
  return { lo: nlo, hi: nlo + span };
}

/** The cell's pages and time span. */
export function heatmapCell(grid: HeatmapGrid, row: number, col: number): HeatmapCell {
  const span = grid.rankHi - grid.rankLo;
  return {
    row,
    col,
    region: grid.rowRegion[row] ?? -1,
    rankLo: grid.rankLo + Math.ceil((row * span) / grid.rows),
    rankHi: grid.rankLo + Math.ceil(((row + 1) * span) / grid.rows),
    fromUs: grid.fromUs + ((grid.toUs - grid.fromUs) * col) / grid.cols,
    toUs: grid.fromUs + ((grid.toUs - grid.fromUs) * (col + 1)) / grid.cols,
    value: grid.values[row * grid.cols + col] ?? 0,
  };
}

/** Rows of the grid holding at least one marked page (ranks), by the Worker's binning; and how many marks are in view. */
export function markedRows(grid: Pick<HeatmapGrid, 'rows' | 'rankLo' | 'rankHi'>, marks: ArrayLike<number>): { rows: Uint8Array; inView: number } {
  const out = new Uint8Array(grid.rows);
  const span = grid.rankHi - grid.rankLo;
  let inView = 0;
  for (let i = 0; i < marks.length; i++) {
    const rank = marks[i]!;
    if (rank < grid.rankLo || rank >= grid.rankHi) continue;
    out[Math.floor(((rank - grid.rankLo) * grid.rows) / span)] = 1;
    inView++;
  }
  return { rows: out, inView };
}

/** The cell the keyboard starts on: the one with the most (first in reading order on ties). */
export function hottestCell(grid: Pick<HeatmapGrid, 'rows' | 'cols' | 'values'>): { r: number; c: number } {
  let best = 0;
  for (let k = 1; k < grid.rows * grid.cols; k++) if (grid.values[k]! > grid.values[best]!) best = k;
  return { r: Math.floor(best / grid.cols), c: best % grid.cols };
}

/** Draws the heatmap (cells, marked rows, region boundaries, address labels, time axis) on a canvas `h` pixels high. */
function drawHeatmap(
  ctx: CanvasRenderingContext2D,
  h: number,
  at: { grid: HeatmapGrid; nodeIds: readonly number[]; marked: { rows: Uint8Array; inView: number } | null; pw: number; ph: number; cw: number; rh: number },
): void {
  const M = HEATMAP_MARGIN;
  const { grid, nodeIds, marked, pw, ph, cw, rh } = at;
  const style = getComputedStyle(ctx.canvas);
  const fg = style.color || '#222';
  ctx.font = `11px ${style.fontFamily || 'sans-serif'}`;
  ctx.fillStyle = style.getPropertyValue('--ns-bg-raised') || '#f4f5f7';
  ctx.fillRect(M.left, M.top, pw, ph);
  for (let r = 0; r < grid.rows; r++) {
    for (let c = 0; c < grid.cols; c++) {
      const v = grid.values[r * grid.cols + c]!;
      if (v <= 0) continue;
      const k = intensity(v, grid.max);
      if (grid.mode === 'node') {
        const slot = grid.dominant[r * grid.cols + c]!;
        ctx.fillStyle = nodeColor(slot < nodeIds.length ? nodeIds[slot]! : -1, nodeIds);
        ctx.globalAlpha = 0.45 + 0.55 * k;
      } else {
        ctx.fillStyle = interpolateViridis(0.1 + 0.9 * k);
        ctx.globalAlpha = 1;
      }
      ctx.fillRect(M.left + c * cw, M.top + r * rh, Math.ceil(cw), Math.ceil(rh));
    }
  }
  ctx.globalAlpha = 1;
  // Marked pages: a bar in the margin and an outline around each run of marked rows.
  if (marked) {
    ctx.fillStyle = fg;
    ctx.strokeStyle = fg;
    ctx.lineWidth = 1;
    for (let r = 0; r < grid.rows; r++) {
      if (!marked.rows[r]) continue;
      let end = r;
      while (end + 1 < grid.rows && marked.rows[end + 1]) end++;
      const y0 = M.top + r * rh;
      const hh = Math.max(2, (end + 1 - r) * rh);
      ctx.fillRect(M.left - 4, y0, 3, hh);
      ctx.strokeRect(M.left + 0.5, Math.round(y0) + 0.5, pw - 1, Math.max(1, Math.round(hh) - 1));
      r = end;
    }
  }
  // Region boundaries and address labels.
  ctx.strokeStyle = fg;
  ctx.fillStyle = fg;
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  let lastLabel = -Infinity;
  for (let r = 0; r < grid.rows; r++) {
    const boundary = r === 0 || grid.rowRegion[r] !== grid.rowRegion[r - 1];
    const yy = M.top + r * rh;
    if (boundary) {
      ctx.globalAlpha = 0.35;
      ctx.beginPath();
      ctx.moveTo(M.left - 4, Math.round(yy) + 0.5);
      ctx.lineTo(M.left + pw, Math.round(yy) + 0.5);
      ctx.stroke();
      ctx.globalAlpha = 1;
    }
    if ((boundary && yy - lastLabel >= 14) || yy - lastLabel >= 64) {
      ctx.fillText(formatAddress(grid.rowAddress[r]!), M.left - 6, Math.min(M.top + ph - 6, yy + 6));
      lastLabel = yy;
    }
  }
  // Time axis.
  ctx.textAlign = 'center';
  ctx.textBaseline = 'alphabetic';
  // Round times (d3's nice ticks: 0, 200 ms, 400 ms …), not sixths of the range (303.03 ms).
  const span = Math.max(1, grid.toUs - grid.fromUs);
  const ticks = timeTicks(grid.fromUs, grid.toUs, 6);
  ticks.forEach((t, i) => {
    const px = M.left + (pw * (t - grid.fromUs)) / span;
    // A label near the plot's right edge ends there, so it is never cut off.
    ctx.textAlign = i === ticks.length - 1 && px > M.left + pw - 30 ? 'right' : 'center';
    ctx.fillText(formatDurationTick(t), px, h - 6);
  });
}

/**
 * Address space × time: pages in address order (so unmapped gaps take no room) down, time
 * across, on the shared canvas primitive. Zoom with the wheel, by dragging a band of rows, with
 * the buttons, or with the keyboard once focused: arrow keys move a focused cell (its value is
 * read out), Enter/Space selects it as a click does, +/− zoom around it, PageUp/PageDown (or
 * moving past the top or bottom edge) pan, 0 resets.
 */
export function AddressHeatmap({ grid, nodeIds, onZoom, onSelect, marks, regionName, width = 960, height = 380, testId = 'heatmap' }: AddressHeatmapProps) {
  const M = HEATMAP_MARGIN;
  const pw = width - M.left - M.right;
  const ph = height - M.top - M.bottom;
  const cw = pw / grid.cols;
  const rh = ph / grid.rows;
  const span = grid.rankHi - grid.rankLo;
  const [band, setBand] = useState<{ a: number; b: number } | null>(null);
  const dragging = useRef(false);
  /** The keyboard's cell (kept inside the grid when it changes). */
  const [focusCell, setFocusCell] = useState<{ r: number; c: number } | null>(null);
  const [focused, setFocused] = useState(false);
  const cur = focusCell ? { r: Math.min(focusCell.r, grid.rows - 1), c: Math.min(focusCell.c, grid.cols - 1) } : null;
  const marked = useMemo(() => (marks && marks.length > 0 ? markedRows(grid, marks) : null), [grid, marks]);

  const draw = useCallback(
    (ctx: CanvasRenderingContext2D, { height: h }: CanvasSize) => drawHeatmap(ctx, h, { grid, nodeIds, marked, pw, ph, cw, rh }),
    [grid, nodeIds, marked, pw, ph, cw, rh],
  );

  const cellAt = useCallback(
    (x: number, y: number) => {
      const c = Math.floor((x - M.left) / cw);
      const r = Math.floor((y - M.top) / rh);
      if (c < 0 || r < 0 || c >= grid.cols || r >= grid.rows) return null;
      return { r, c };
    },
    [grid, cw, rh, M.left, M.top],
  );

  const tooltip = useCallback(
    ({ r, c }: { r: number; c: number }) => {
      const v = grid.values[r * grid.cols + c]!;
      const [one, many] = MODE_UNIT[grid.mode];
      const t0 = grid.fromUs + ((grid.toUs - grid.fromUs) * c) / grid.cols;
      const t1 = grid.fromUs + ((grid.toUs - grid.fromUs) * (c + 1)) / grid.cols;
      const region = grid.rowRegion[r]!;
      const where = `${formatAddress(grid.rowAddress[r]!)}${region >= 0 && regionName ? ` (${regionName(region)})` : ''}`;
      const slot = grid.dominant[r * grid.cols + c]!;
      const who = grid.mode === 'node' && v > 0 ? `, mostly from ${nodeLabel(slot < nodeIds.length ? nodeIds[slot]! : -1)}` : '';
      return `${where}, ${formatDurationUs(t0)}–${formatDurationUs(t1)}: ${formatCount(v, one, many)}${who}`;
    },
    [grid, nodeIds, regionName],
  );

  const rankAt = (y: number) => grid.rankLo + Math.max(0, Math.min(span - 1, Math.floor(((y - M.top) / ph) * span)));
  const zoomBy = (factor: number, centre = grid.rankLo + span / 2) => onZoom(zoomPages(grid.rankLo, grid.rankHi, factor, centre, grid.pageCount));
  const zoomed = span < grid.pageCount;
  const pan = (dir: -1 | 1) => {
    if (!zoomed) return;
    const step = Math.max(1, Math.round(span / 4));
    if (dir > 0) onZoom({ lo: Math.min(grid.pageCount - span, grid.rankLo + step), hi: Math.min(grid.pageCount, grid.rankHi + step) });
    else onZoom({ lo: Math.max(0, grid.rankLo - step), hi: Math.max(span, grid.rankHi - step) });
  };

  function wheel(e: WheelEvent<HTMLCanvasElement>) {
    if (e.deltaY === 0) return;
    const p = canvasPoint(e, width);
    zoomBy(e.deltaY < 0 ? 0.5 : 2, rankAt(p.y));
  }
  function down(e: PointerEvent<HTMLCanvasElement>) {
    if (e.button !== 0) return;
    const p = canvasPoint(e, width);
    e.currentTarget.setPointerCapture?.(e.pointerId);
    dragging.current = true;
    setBand({ a: p.y, b: p.y });
  }
  function move(e: PointerEvent<HTMLCanvasElement>) {
    if (!dragging.current) return;
    const p = canvasPoint(e, width);
    setBand((b) => (b ? { a: b.a, b: p.y } : b));
  }
  function up(e: PointerEvent<HTMLCanvasElement>) {
    dragging.current = false;
    if (band && Math.abs(band.b - band.a) >= 4) {
      const lo = rankAt(Math.min(band.a, band.b));
      const hi = rankAt(Math.max(band.a, band.b)) + 1;
      onZoom(hi - lo >= grid.pageCount ? null : { lo, hi });
    } else if (band) {
      // A click (no band dragged): select the cell under the pointer.
      const p = canvasPoint(e, width);
      const hit = cellAt(p.x, p.y);
      if (hit) {
        setFocusCell(hit);
        onSelect?.(heatmapCell(grid, hit.r, hit.c));
      }
    }
    setBand(null);
  }
  function key(e: KeyboardEvent<HTMLCanvasElement>) {
    const at = cur ?? hottestCell(grid);
    const move = (r: number, c: number) => setFocusCell({ r: Math.max(0, Math.min(grid.rows - 1, r)), c: Math.max(0, Math.min(grid.cols - 1, c)) });
    if (e.key === '+' || e.key === '=') zoomBy(0.5, cur ? heatmapCell(grid, at.r, at.c).rankLo : undefined);
    else if (e.key === '-' || e.key === '_') zoomBy(2, cur ? heatmapCell(grid, at.r, at.c).rankLo : undefined);
    else if (e.key === '0') onZoom(null);
    else if (e.key === 'ArrowLeft') move(at.r, at.c - 1);
    else if (e.key === 'ArrowRight') move(at.r, at.c + 1);
    else if (e.key === 'ArrowUp') {
      if (cur && at.r === 0 && zoomed && grid.rankLo > 0) pan(-1);
      else move(at.r - 1, at.c);
    } else if (e.key === 'ArrowDown') {
      if (cur && at.r === grid.rows - 1 && zoomed && grid.rankHi < grid.pageCount) pan(1);
      else move(at.r + 1, at.c);
    } else if (e.key === 'PageUp') pan(-1);
    else if (e.key === 'PageDown') pan(1);
    else if (e.key === 'Home') move(at.r, 0);
    else if (e.key === 'End') move(at.r, grid.cols - 1);
    else if (e.key === 'Enter' || e.key === ' ') {
      move(at.r, at.c);
      onSelect?.(heatmapCell(grid, at.r, at.c));
    } else return;
    e.preventDefault();
  }

  const [one, many] = MODE_UNIT[grid.mode];
  const label =
    `Address-space heatmap: pages ${formatCount(grid.rankLo)}–${formatCount(grid.rankHi)} of ${formatCount(grid.pageCount)} in address order, ` +
    `${formatDurationUs(grid.fromUs)} to ${formatDurationUs(grid.toUs)}; ${formatCount(grid.total, one, many)}. ` +
    'Arrow keys move between cells (each cell read out below), Enter or Space selects a cell’s region, +/− or the wheel zoom, ' +
    'PageUp/PageDown pan, 0 resets; drag rows to zoom to them.';
  const focusHit = cur ? heatmapCell(grid, cur.r, cur.c) : null;
  const focusBox = cur
    ? (() => {
        const w = Math.max(cw, 8);
        const h = Math.max(rh, 8);
        const x = Math.max(0, M.left + (cur.c + 0.5) * cw - w / 2);
        const y = Math.max(0, M.top + (cur.r + 0.5) * rh - h / 2);
        return { left: `${(x / width) * 100}%`, top: `${(y / height) * 100}%`, width: `${(w / width) * 100}%`, height: `${(h / height) * 100}%` };
      })()
    : null;

  return (
    <div
      className="ns-heatmap"
      data-testid={testId}
      data-total={grid.total}
      data-max={grid.max}
      data-rows={grid.rows}
      data-cols={grid.cols}
      data-rank-lo={grid.rankLo}
      data-rank-hi={grid.rankHi}
      data-mode={grid.mode}
      data-marked-rows={marked ? marked.rows.reduce((a, b) => a + b, 0) : 0}
      data-marked-pages={marked ? marked.inView : 0}
      data-export="heatmap"
    >
      <div className="ns-heatmap__toolbar" role="group" aria-label="Heatmap zoom">
        <button type="button" onClick={() => zoomBy(0.5)} disabled={span <= 1} data-testid={`${testId}-zoom-in`}>
          Zoom in
        </button>
        <button type="button" onClick={() => zoomBy(2)} disabled={!zoomed} data-testid={`${testId}-zoom-out`}>
          Zoom out
        </button>
        <button type="button" onClick={() => onZoom(null)} disabled={!zoomed} data-testid={`${testId}-zoom-reset`}>
          Show all pages
        </button>
        <span className="ns-muted" data-testid={`${testId}-window`} data-export-legend>
          pages {formatCount(grid.rankLo)}–{formatCount(grid.rankHi)} of {formatCount(grid.pageCount)} (address order) · {grid.rows}×{grid.cols} cells
        </span>
      </div>
      <ChartCanvas
        width={width}
        height={height}
        draw={draw}
        hitTest={cellAt}
        tooltip={tooltip}
        label={label}
        tabIndex={0}
        onWheel={wheel}
        onPointerDown={down}
        onPointerMove={move}
        onPointerUp={up}
        onKeyDown={key}
        onFocus={() => {
          setFocused(true);
          if (!focusCell) setFocusCell(hottestCell(grid));
        }}
        onBlur={() => setFocused(false)}
        overlay={
          <>
            {band ? (
              <div
                className="ns-heatmap__band"
                style={{ top: `${(Math.min(band.a, band.b) / height) * 100}%`, height: `${(Math.abs(band.b - band.a) / height) * 100}%`, left: `${(M.left / width) * 100}%`, right: `${(M.right / width) * 100}%` }}
              />
            ) : null}
            {focusBox && focused ? <div className="ns-heatmap__focus" style={focusBox} data-testid={`${testId}-focus`} aria-hidden="true" /> : null}
          </>
        }
      />
      <p
        className="ns-heatmap__readout"
        role="status"
        aria-live="polite"
        data-testid={`${testId}-cell`}
        data-row={focusHit?.row ?? ''}
        data-col={focusHit?.col ?? ''}
        data-value={focusHit?.value ?? ''}
        data-region={focusHit?.region ?? ''}
      >
        {focusHit ? `Cell row ${focusHit.row + 1} of ${grid.rows}, column ${focusHit.col + 1} of ${grid.cols}: ${tooltip({ r: focusHit.row, c: focusHit.col })}` : 'Focus the heatmap to move between its cells with the arrow keys.'}
      </p>
    </div>
  );
}

/** About `count` round times (µs) between `fromUs` and `toUs`, for a time axis (d3's linear ticks). */
export function timeTicks(fromUs: number, toUs: number, count: number): number[] {
  if (!(toUs > fromUs)) return [fromUs];
  return scaleLinear().domain([fromUs, toUs]).ticks(count);
}
