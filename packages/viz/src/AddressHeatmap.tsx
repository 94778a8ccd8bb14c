import { interpolateViridis } from 'd3';
import { useCallback, useRef, useState } from 'react';
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

export interface AddressHeatmapProps {
  grid: HeatmapGrid;
  nodeIds: readonly number[];
  /** Zoom to pages [lo, hi) (address order). */
  onZoom: (pages: { lo: number; hi: number } | null) => void;
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

/**
 * Address space × time: pages in address order (so unmapped gaps take no room) down, time
 * across, on the shared canvas primitive. Zoom with the wheel, by dragging a band of rows, with
 * the buttons, or with the keyboard (+/− zoom, ↑/↓ pan, 0 reset) once focused.
 */
export function AddressHeatmap({ grid, nodeIds, onZoom, regionName, width = 960, height = 380, testId = 'heatmap' }: AddressHeatmapProps) {
  const M = HEATMAP_MARGIN;
  const pw = width - M.left - M.right;
  const ph = height - M.top - M.bottom;
  const cw = pw / grid.cols;
  const rh = ph / grid.rows;
  const span = grid.rankHi - grid.rankLo;
  const [band, setBand] = useState<{ a: number; b: number } | null>(null);
  const dragging = useRef(false);

  const draw = useCallback(
    (ctx: CanvasRenderingContext2D, { width: w, height: h }: CanvasSize) => {
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
      const ticks = 6;
      for (let i = 0; i <= ticks; i++) {
        const t = grid.fromUs + ((grid.toUs - grid.fromUs) * i) / ticks;
        ctx.fillText(formatDurationTick(Math.round(t)), M.left + (pw * i) / ticks, h - 6);
      }
      void w;
    },
    [grid, nodeIds, M.left, M.top, pw, ph, cw, rh],
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
  function up() {
    dragging.current = false;
    if (band && Math.abs(band.b - band.a) >= 4) {
      const lo = rankAt(Math.min(band.a, band.b));
      const hi = rankAt(Math.max(band.a, band.b)) + 1;
      onZoom(hi - lo >= grid.pageCount ? null : { lo, hi });
    }
    setBand(null);
  }
  function key(e: KeyboardEvent<HTMLCanvasElement>) {
    const step = Math.max(1, Math.round(span / 4));
    if (e.key === '+' || e.key === '=') zoomBy(0.5);
    else if (e.key === '-' || e.key === '_') zoomBy(2);
    else if (e.key === '0') onZoom(null);
    else if (e.key === 'ArrowDown' && zoomed) onZoom({ lo: Math.min(grid.pageCount - span, grid.rankLo + step), hi: Math.min(grid.pageCount, grid.rankHi + step) });
    else if (e.key === 'ArrowUp' && zoomed) onZoom({ lo: Math.max(0, grid.rankLo - step), hi: Math.max(span, grid.rankHi - step) });
    else return;
    e.preventDefault();
  }

  const [one, many] = MODE_UNIT[grid.mode];
  const label =
    `Address-space heatmap: pages ${formatCount(grid.rankLo)}–${formatCount(grid.rankHi)} of ${formatCount(grid.pageCount)} in address order, ` +
    `${formatDurationUs(grid.fromUs)} to ${formatDurationUs(grid.toUs)}; ${formatCount(grid.total, one, many)}. ` +
    'Wheel or +/− to zoom, drag rows to zoom to them, arrow keys to pan, 0 to reset.';

  return (
    <div className="ns-heatmap" data-testid={testId} data-total={grid.total} data-rows={grid.rows} data-cols={grid.cols} data-rank-lo={grid.rankLo} data-rank-hi={grid.rankHi} data-mode={grid.mode} data-export="heatmap">
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
        <span className="ns-muted" data-testid={`${testId}-window`}>
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
        overlay={
          band ? (
            <div
              className="ns-heatmap__band"
              style={{ top: `${(Math.min(band.a, band.b) / height) * 100}%`, height: `${(Math.abs(band.b - band.a) / height) * 100}%`, left: `${(M.left / width) * 100}%`, right: `${(M.right / width) * 100}%` }}
            />
          ) : null
        }
      />
    </div>
  );
}
