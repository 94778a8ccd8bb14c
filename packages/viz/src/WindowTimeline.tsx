import { scaleLinear } from 'd3';
import { useMemo, useRef, useState } from 'react';
import type { KeyboardEvent, PointerEvent } from 'react';
import { formatCompact, formatDurationTick, formatDurationUs } from './format.js';
import { nodeColor, nodeLabel } from './palette.js';

export interface WindowRange {
  fromUs: number;
  toUs: number;
}

export interface WindowTimelineProps {
  /** Window length, µs; window w covers [w·windowUs, (w+1)·windowUs). */
  windowUs: number;
  windows: number;
  /** Values per window and node slot, laid out `w * (nodeIds.length + 1) + slot`; the last slot is "unknown node". */
  values: ArrayLike<number>;
  nodeIds: readonly number[];
  /** What the bars count, with its unit: "samples". */
  metric: string;
  /** Selected range (snapped to windows), or null for the whole trace. */
  range: WindowRange | null;
  onRange: (range: WindowRange | null) => void;
  width?: number;
  height?: number;
  testId?: string;
}

const MARGIN = { top: 8, right: 16, bottom: 22, left: 56 };

/** Bottom of each node's bar in each window (`w * (slots + 1) + s`; the last entry is the stack's top), and the tallest stack. */
export function stackWindows(values: ArrayLike<number>, windows: number, slots: number): { max: number; tops: Float64Array } {
  const tops = new Float64Array(windows * (slots + 1));
  let max = 0;
  for (let w = 0; w < windows; w++) {
    let acc = 0;
    for (let s = 0; s < slots; s++) {
      tops[w * (slots + 1) + s] = acc;
      acc += values[w * slots + s]!;
    }
    tops[w * (slots + 1) + slots] = acc;
    if (acc > max) max = acc;
  }
  return { max, tops };
}

/** Snaps a span of windows [a, b] (either order) to a time range. */
export function windowsToRange(a: number, b: number, windowUs: number): WindowRange {
  const lo = Math.min(a, b);
  const hi = Math.max(a, b);
  return { fromUs: lo * windowUs, toUs: (hi + 1) * windowUs };
}

/** Windows one arrow key press moves or resizes the range by: about 2 % of the trace, at least one. */
export function keyboardStep(windows: number): number {
  return Math.max(1, Math.round(windows / 50));
}

/** Windows one PageUp/PageDown press moves or resizes the range by: a quarter of the trace, at least one. */
export function pageStep(windows: number): number {
  return Math.max(1, Math.round(windows / 4));
}

/**
 * The timeline under every view: per-window counts stacked by node, and a brush. Drag across
 * it to select a time range (snapped to windows); click without dragging to clear. Keyboard,
 * once focused, in steps that scale with the trace (keyboardStep, pageStep), so that any share of
 * it is a few presses away: ←/→ move the range by a step (or select the first/last step),
 * Shift+←/→ shrink or grow it, Alt+arrows do the same by one window; PageUp/PageDown move it by a
 * quarter of the trace (Shift: shrink/grow); Home/End move it to the start/end keeping its length
 * (with nothing selected: the first/last quarter), Shift+Home/End extend it to the start/end;
 * Escape clears.
 */
export function WindowTimeline({
  windowUs,
  windows,
  values,
  nodeIds,
  metric,
  range,
  onRange,
  width = 960,
  height = 120,
  testId = 'timeline',
}: WindowTimelineProps) {
  const slots = nodeIds.length + 1;
  const { max, tops } = useMemo(() => stackWindows(values, windows, slots), [values, windows, slots]);
  const endUs = windows * windowUs;
  const x = useMemo(() => scaleLinear().domain([0, endUs]).range([MARGIN.left, width - MARGIN.right]), [endUs, width]);
  const y = useMemo(() => scaleLinear().domain([0, Math.max(1, max)]).nice(3).range([height - MARGIN.bottom, MARGIN.top]), [max, height]);
  const paths = useMemo(() => {
    const out: string[] = [];
    const bw = Math.max(0.5, x(windowUs) - x(0));
    for (let s = 0; s < slots; s++) {
      let d = '';
      for (let w = 0; w < windows; w++) {
        const lo = tops[w * (slots + 1) + s]!;
        const hi = tops[w * (slots + 1) + s + 1]!;
        if (hi <= lo) continue;
        const x0 = x(w * windowUs);
        d += `M${x0.toFixed(2)},${y(hi).toFixed(2)}h${bw.toFixed(2)}V${y(lo).toFixed(2)}h${(-bw).toFixed(2)}Z`;
      }
      out.push(d);
    }
    return out;
  }, [tops, slots, windows, windowUs, x, y]);
  const [drag, setDrag] = useState<{ a: number; b: number } | null>(null);
  const moved = useRef(false);

  const windowAt = (clientX: number, el: Element) => {
    const rect = el.getBoundingClientRect();
    const px = ((clientX - rect.left) / Math.max(1, rect.width)) * width;
    return Math.max(0, Math.min(windows - 1, Math.floor(x.invert(px) / windowUs)));
  };

  function down(e: PointerEvent<SVGRectElement>) {
    if (e.button !== 0) return;
    const svg = e.currentTarget.ownerSVGElement!;
    e.currentTarget.setPointerCapture?.(e.pointerId);
    const w = windowAt(e.clientX, svg);
    moved.current = false;
    setDrag({ a: w, b: w });
  }
  function move(e: PointerEvent<SVGRectElement>) {
    if (!drag) return;
    const w = windowAt(e.clientX, e.currentTarget.ownerSVGElement!);
    if (w !== drag.b) {
      moved.current = true;
      setDrag({ a: drag.a, b: w });
    }
  }
  function up() {
    if (!drag) return;
    onRange(moved.current ? windowsToRange(drag.a, drag.b, windowUs) : null);
    setDrag(null);
  }

  function key(e: KeyboardEvent<SVGSVGElement>) {
    if (windows <= 0) return;
    const cur = range ? { a: Math.floor(range.fromUs / windowUs), b: Math.ceil(range.toUs / windowUs) - 1 } : null;
    let next: { a: number; b: number } | null | undefined;
    const clamp = (v: number) => Math.max(0, Math.min(windows - 1, v));
    // Move by `d` windows keeping the length (stopping at the ends), or (resize) move the end.
    const shift = (c: { a: number; b: number }, d: number, resize: boolean) => {
      if (resize) return { a: c.a, b: Math.max(c.a, clamp(c.b + d)) };
      const by = d > 0 ? Math.min(d, windows - 1 - c.b) : Math.max(d, -c.a);
      return { a: c.a + by, b: c.b + by };
    };
    const step = e.altKey ? 1 : keyboardStep(windows);
    const page = pageStep(windows);
    switch (e.key) {
      case 'ArrowRight':
        next = cur ? shift(cur, step, e.shiftKey) : { a: 0, b: step - 1 };
        break;
      case 'ArrowLeft':
        next = cur ? shift(cur, -step, e.shiftKey) : { a: windows - step, b: windows - 1 };
        break;
      case 'PageDown':
        next = cur ? shift(cur, page, e.shiftKey) : { a: 0, b: page - 1 };
        break;
      case 'PageUp':
        next = cur ? shift(cur, -page, e.shiftKey) : { a: windows - page, b: windows - 1 };
        break;
      case 'Home':
        if (!cur) next = { a: 0, b: page - 1 };
        else next = e.shiftKey ? { a: 0, b: cur.b } : { a: 0, b: cur.b - cur.a };
        break;
      case 'End':
        if (!cur) next = { a: windows - page, b: windows - 1 };
        else next = e.shiftKey ? { a: cur.a, b: windows - 1 } : { a: windows - 1 - (cur.b - cur.a), b: windows - 1 };
        break;
      case 'Escape':
      case 'Delete':
      case 'Backspace':
        next = null;
        break;
      default:
        return;
    }
    e.preventDefault();
    onRange(next ? windowsToRange(next.a, next.b, windowUs) : null);
  }

  const shown = drag ? windowsToRange(drag.a, drag.b, windowUs) : range;
  const ticks = x.ticks(8);
  const yTicks = y.ticks(3);
  const plotBottom = height - MARGIN.bottom;
  const label =
    `Timeline of ${metric} per ${formatDurationUs(windowUs)} window, stacked by node. ` +
    (range ? `Selected ${formatDurationUs(range.fromUs)} to ${formatDurationUs(range.toUs)}.` : 'No range selected.') +
    ` Drag to select a time range; with the keyboard: arrows move it by ${formatDurationUs(keyboardStep(windows) * windowUs)} (Alt: one window), Shift+arrows resize it, ` +
    `PageUp/PageDown by ${formatDurationUs(pageStep(windows) * windowUs)}, Home/End to the ends (Shift: extend), Escape clears.`;

  return (
    <div className="ns-window-timeline" data-testid={testId} data-window-us={windowUs} data-windows={windows} data-from={range?.fromUs ?? ''} data-to={range?.toUs ?? ''} data-export="timeline">
      <svg
        viewBox={`0 0 ${width} ${height}`}
        width="100%"
        style={{ maxWidth: width }}
        tabIndex={0}
        role="slider"
        aria-label={label}
        aria-valuemin={0}
        aria-valuemax={endUs}
        aria-valuenow={range?.fromUs ?? 0}
        aria-valuetext={range ? `${formatDurationUs(range.fromUs)} to ${formatDurationUs(range.toUs)}` : 'whole trace'}
        onKeyDown={key}
        className="ns-window-timeline__svg"
      >
        {yTicks.map((t) => (
          <g key={`y${t}`} className="ns-axis">
            <line x1={MARGIN.left} x2={width - MARGIN.right} y1={y(t)} y2={y(t)} className="ns-grid" />
            <text x={MARGIN.left - 6} y={y(t)} textAnchor="end" dominantBaseline="central">
              {formatCompact(t)}
            </text>
          </g>
        ))}
        {paths.map((d, s) =>
          d ? (
            <path key={s} d={d} fill={nodeColor(s < nodeIds.length ? nodeIds[s]! : -1, nodeIds)} data-node={s < nodeIds.length ? nodeIds[s] : -1}>
              <title>{`${nodeLabel(s < nodeIds.length ? nodeIds[s]! : -1)}: ${metric}`}</title>
            </path>
          ) : null,
        )}
        {ticks.map((t) => (
          <g key={`x${t}`} className="ns-axis">
            <text x={x(t)} y={plotBottom + 15} textAnchor="middle">
              {formatDurationTick(t)}
            </text>
          </g>
        ))}
        <line x1={MARGIN.left} x2={width - MARGIN.right} y1={plotBottom} y2={plotBottom} className="ns-axis-line" />
        {shown && (
          <g className="ns-brush" data-testid={`${testId}-selection`}>
            <rect x={MARGIN.left} y={MARGIN.top} width={Math.max(0, x(shown.fromUs) - MARGIN.left)} height={plotBottom - MARGIN.top} className="ns-brush__shade" />
            <rect x={x(Math.min(endUs, shown.toUs))} y={MARGIN.top} width={Math.max(0, width - MARGIN.right - x(Math.min(endUs, shown.toUs)))} height={plotBottom - MARGIN.top} className="ns-brush__shade" />
            <rect x={x(shown.fromUs)} y={MARGIN.top} width={Math.max(1, x(Math.min(endUs, shown.toUs)) - x(shown.fromUs))} height={plotBottom - MARGIN.top} className="ns-brush__band" />
          </g>
        )}
        <rect
          x={MARGIN.left}
          y={0}
          width={width - MARGIN.left - MARGIN.right}
          height={plotBottom}
          fill="transparent"
          style={{ cursor: 'crosshair' }}
          data-testid={`${testId}-brush`}
          onPointerDown={down}
          onPointerMove={move}
          onPointerUp={up}
          onPointerCancel={() => setDrag(null)}
        />
      </svg>
    </div>
  );
}
