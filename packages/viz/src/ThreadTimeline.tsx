import { scaleLinear } from 'd3-scale';
import type { ScaleLinear } from 'd3-scale';
import { useEffect, useMemo, useRef, useState } from 'react';
import type { MouseEvent } from 'react';
import { formatDurationTick, formatDurationUs } from './format.js';
import { nodeColor, nodeLabel } from './palette.js';
import { segmentAt, threadSegments } from './timeline.js';
import type { TimelineSegment, TimelineThread } from './timeline.js';

export interface ThreadTimelineProps {
  threads: readonly TimelineThread[];
  /** Capture length, µs: the right end of the time axis. */
  durationUs: number;
  /** The machine's node ids, for colours. */
  nodeIds: readonly number[];
  width?: number;
  /**
   * Above this many segments the chart draws on a canvas instead of one SVG element per
   * segment. Default 4000.
   */
  canvasThreshold?: number;
  /** Migrations to mark (a small triangle at the top of the thread's row), by thread index. */
  markers?: readonly ThreadMarker[];
  /** Shade everything outside this time range (the brushed range). */
  highlight?: { fromUs: number; toUs: number } | null;
}

export interface ThreadMarker {
  /** Row index into the trace's threads table (TimelineThread.index). */
  thread: number;
  timeUs: number;
  label: string;
}

const ROW = 18;
const BAR = 14;
const MARGIN = { top: 6, right: 16, bottom: 26, left: 190 };

export function threadLabel(t: Pick<TimelineThread, 'tid' | 'name'>): string {
  return `${t.name || '(unnamed)'} · tid ${t.tid}`;
}

function segmentText(t: TimelineThread, s: TimelineSegment): string {
  return (
    `${threadLabel(t)}: cpu ${s.cpu < 0 ? 'unknown' : s.cpu}, ${nodeLabel(s.node)}, ` +
    `${formatDurationUs(s.startUs)} – ${formatDurationUs(s.endUs)}`
  );
}

/**
 * Threads × time: one row per thread, each run on one cpu drawn as a bar coloured by the node
 * of that cpu. Hovering a bar names the cpu, node and time range. D3 gives the scale and ticks;
 * React renders SVG, or a canvas (drawn imperatively, hit-tested on hover) when there are more
 * segments than an SVG should hold.
 */
export function ThreadTimeline({
  threads,
  durationUs,
  nodeIds,
  width = 960,
  canvasThreshold = 4000,
  markers = [],
  highlight = null,
}: ThreadTimelineProps) {
  const rowOf = useMemo(() => new Map(threads.map((t, row) => [t.index, row])), [threads]);
  const rows = useMemo(
    () => threads.map((t, row) => threadSegments(t.placements, durationUs, row, t.life)),
    [threads, durationUs],
  );
  const segmentCount = rows.reduce((n, r) => n + r.length, 0);
  const height = MARGIN.top + MARGIN.bottom + ROW * Math.max(threads.length, 1);
  const x = useMemo(
    () =>
      scaleLinear()
        .domain([0, Math.max(durationUs, 1)])
        .range([MARGIN.left, width - MARGIN.right]),
    [durationUs, width],
  );
  const ticks = useMemo(() => x.ticks(6), [x]);
  const axisY = height - MARGIN.bottom;
  const useCanvas = segmentCount > canvasThreshold;

  if (threads.length === 0) {
    return <p className="ns-muted">The trace has no threads.</p>;
  }

  const label = `Thread placement over ${formatDurationUs(durationUs)}: ${threads.length} threads, ${segmentCount} runs on one cpu`;

  if (useCanvas) {
    return (
      <TimelineCanvas
        threads={threads}
        rows={rows}
        width={width}
        height={height}
        x={x}
        ticks={ticks}
        nodeIds={nodeIds}
        label={label}
      />
    );
  }

  return (
    <div className="ns-timeline" data-render="svg" data-segments={segmentCount} data-export="threads-timeline">
      <svg viewBox={`0 0 ${width} ${height}`} width="100%" style={{ maxWidth: width }} role="img" aria-label={label}>
        {ticks.map((t) => (
          <g key={t} className="ns-axis">
            <line x1={x(t)} x2={x(t)} y1={MARGIN.top} y2={axisY} className="ns-grid" />
            <text x={x(t)} y={axisY + 16} textAnchor="middle">
              {formatDurationTick(t)}
            </text>
          </g>
        ))}
        {threads.map((t, row) => {
          const top = MARGIN.top + row * ROW;
          return (
            <g key={t.index} data-thread={t.index}>
              <text x={MARGIN.left - 8} y={top + BAR / 2} textAnchor="end" dominantBaseline="central" className="ns-timeline__label">
                {threadLabel(t)}
              </text>
              {rows[row]!.map((s) => (
                <rect
                  key={s.startUs}
                  x={x(s.startUs)}
                  y={top}
                  width={Math.max(1, x(s.endUs) - x(s.startUs))}
                  height={BAR}
                  fill={nodeColor(s.node, nodeIds)}
                  data-cpu={s.cpu}
                  data-node={s.node}
                >
                  <title>{segmentText(t, s)}</title>
                </rect>
              ))}
            </g>
          );
        })}
        <line x1={MARGIN.left} x2={width - MARGIN.right} y1={axisY} y2={axisY} className="ns-axis-line" />
        {markers.map((m, i) => {
          const row = rowOf.get(m.thread);
          if (row === undefined) return null;
          const mx = x(m.timeUs);
          const top = MARGIN.top + row * ROW;
          return (
            <path key={i} d={`M${mx - 5},${top - 2}h10l-5,8Z`} className="ns-migration" data-testid="migration-marker" data-thread={m.thread} data-time={m.timeUs}>
              <title>{m.label}</title>
            </path>
          );
        })}
        {highlight && (
          <g className="ns-brush" pointerEvents="none">
            <rect x={MARGIN.left} y={MARGIN.top} width={Math.max(0, x(highlight.fromUs) - MARGIN.left)} height={axisY - MARGIN.top} className="ns-brush__shade" />
            <rect
              x={x(Math.min(durationUs, highlight.toUs))}
              y={MARGIN.top}
              width={Math.max(0, width - MARGIN.right - x(Math.min(durationUs, highlight.toUs)))}
              height={axisY - MARGIN.top}
              className="ns-brush__shade"
            />
          </g>
        )}
      </svg>
    </div>
  );
}

interface TimelineCanvasProps {
  threads: readonly TimelineThread[];
  rows: readonly TimelineSegment[][];
  width: number;
  height: number;
  x: ScaleLinear<number, number>;
  ticks: number[];
  nodeIds: readonly number[];
  label: string;
}

function TimelineCanvas({ threads, rows, width, height, x, ticks, nodeIds, label }: TimelineCanvasProps) {
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const [hover, setHover] = useState<{ left: number; top: number; text: string } | null>(null);
  const rangeStart = x(0);

  useEffect(() => {
    const canvas = canvasRef.current;
    const ctx = canvas?.getContext('2d');
    if (!canvas || !ctx) return; // no canvas support (e.g. a test DOM)
    const dpr = globalThis.devicePixelRatio || 1;
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    const style = getComputedStyle(canvas);
    const fg = style.color || '#222';
    ctx.font = `11px ${style.fontFamily || 'sans-serif'}`;
    ctx.textBaseline = 'middle';
    ctx.strokeStyle = fg;
    ctx.globalAlpha = 0.15;
    for (const t of ticks) {
      ctx.beginPath();
      ctx.moveTo(Math.round(x(t)) + 0.5, MARGIN.top);
      ctx.lineTo(Math.round(x(t)) + 0.5, height - MARGIN.bottom);
      ctx.stroke();
    }
    ctx.globalAlpha = 1;
    ctx.fillStyle = fg;
    ctx.textAlign = 'center';
    for (const t of ticks) ctx.fillText(formatDurationTick(t), x(t), height - MARGIN.bottom + 14);
    threads.forEach((t, row) => {
      const top = MARGIN.top + row * ROW;
      ctx.fillStyle = fg;
      ctx.textAlign = 'right';
      ctx.fillText(threadLabel(t), MARGIN.left - 8, top + BAR / 2);
      for (const s of rows[row]!) {
        ctx.fillStyle = nodeColor(s.node, nodeIds);
        const left = x(s.startUs);
        ctx.fillRect(left, top, Math.max(1, x(s.endUs) - left), BAR);
      }
    });
  }, [threads, rows, width, height, x, ticks, nodeIds]);

  function onMove(e: MouseEvent<HTMLCanvasElement>) {
    const rect = e.currentTarget.getBoundingClientRect();
    const scale = rect.width > 0 ? width / rect.width : 1;
    const px = (e.clientX - rect.left) * scale;
    const py = (e.clientY - rect.top) * scale;
    const row = Math.floor((py - MARGIN.top) / ROW);
    const thread = threads[row];
    if (!thread || px < rangeStart || py - MARGIN.top - row * ROW > BAR) {
      setHover(null);
      return;
    }
    const segs = rows[row]!;
    const i = segmentAt(segs, x.invert(px));
    if (i < 0) {
      setHover(null);
      return;
    }
    setHover({ left: e.clientX - rect.left + 12, top: e.clientY - rect.top + 12, text: segmentText(thread, segs[i]!) });
  }

  return (
    <div className="ns-timeline" data-render="canvas" data-segments={rows.reduce((n, r) => n + r.length, 0)}>
      <canvas
        ref={canvasRef}
        role="img"
        aria-label={label}
        style={{ width: '100%', maxWidth: width, aspectRatio: `${width} / ${height}` }}
        onMouseMove={onMove}
        onMouseLeave={() => setHover(null)}
      />
      {hover && (
        <div className="ns-timeline__tooltip" style={{ left: hover.left, top: hover.top }} aria-hidden="true">
          {hover.text}
        </div>
      )}
    </div>
  );
}
