import { scaleLinear } from 'd3-scale';
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
  /** The part of the trace shown (a zoom), snapped out to windows; null or absent: all of it. */
  domain?: WindowRange | null;
  width?: number;
  height?: number;
  testId?: string;
}

const MARGIN = { top: 8, right: 16, bottom: 22, left: 56 };

/**
 * Bottom of each node's bar in each window (`w * (slots + 1) + s`; the last entry is the stack's
 * top), and the tallest stack among windows [lo, hi) (all by default: the y scale of a zoom).
 */
export function stackWindows(values: ArrayLike<number>, windows: number, slots: number, lo = 0, hi = windows): { max: number; tops: Float64Array } {
  const tops = new Float64Array(windows * (slots + 1));
  let max = 0;
  for (let w = 0; w < windows; w++) {
    let acc = 0;
    for (let s = 0; s < slots; s++) {
      tops[w * (slots + 1) + s] = acc;
      acc += values[w * slots + s]!;
    }
    tops[w * (slots + 1) + slots] = acc;
    if (acc > max && w >= lo && w < hi) max = acc;
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

/** Windows one Shift+PageUp/PageDown press resizes the range by (and the span first selected): a quarter of the trace, at least one. */
export function pageStep(windows: number): number {
  return Math.max(1, Math.round(windows / 4));
}

/** The windows [lo, hi) a domain covers, snapped outwards and clamped to the trace. */
export function domainWindows(domain: WindowRange | null | undefined, windowUs: number, windows: number): { lo: number; hi: number } {
  if (!domain || windows <= 0) return { lo: 0, hi: windows };
  const lo = Math.max(0, Math.min(windows - 1, Math.floor(domain.fromUs / windowUs)));
  const hi = Math.max(lo + 1, Math.min(windows, Math.ceil(domain.toUs / windowUs)));
  return { lo, hi };
}

/** A selection of windows [a, b] (inclusive), within [lo, hi). */
export interface WindowSpan {
  a: number;
  b: number;
}

/**
 * The selection after a key press (keyboard brushing), or null to clear it, or undefined when the
 * key is not one of the timeline's. `cur` is the selection (null: none, or all of [lo, hi)).
 * Steps scale with the windows shown; PageUp/PageDown move the selection by its own length (a
 * page of the selection, as in a text view), Shift+PageUp/PageDown shrink or grow it by a quarter.
 */
export function keyboardSpan(
  key: string,
  mods: { shift: boolean; alt: boolean },
  cur: WindowSpan | null,
  lo: number,
  hi: number,
): WindowSpan | null | undefined {
  const n = hi - lo;
  if (n <= 0) return undefined;
  const clamp = (v: number) => Math.max(lo, Math.min(hi - 1, v));
  // Move by `d` windows keeping the length (stopping at the ends), or (resize) move the end.
  const shift = (c: WindowSpan, d: number, resize: boolean): WindowSpan => {
    if (resize) return { a: c.a, b: Math.max(c.a, clamp(c.b + d)) };
    const by = d > 0 ? Math.min(d, hi - 1 - c.b) : Math.max(d, lo - c.a);
    return { a: c.a + by, b: c.b + by };
  };
  const step = mods.alt ? 1 : keyboardStep(n);
  const page = pageStep(n);
  const len = cur ? cur.b - cur.a + 1 : page;
  switch (key) {
    case 'ArrowRight':
      return cur ? shift(cur, step, mods.shift) : { a: lo, b: lo + step - 1 };
    case 'ArrowLeft':
      return cur ? shift(cur, -step, mods.shift) : { a: hi - step, b: hi - 1 };
    case 'PageDown':
      return cur ? shift(cur, mods.shift ? page : len, mods.shift) : { a: lo, b: lo + page - 1 };
    case 'PageUp':
      return cur ? shift(cur, mods.shift ? -page : -len, mods.shift) : { a: hi - page, b: hi - 1 };
    case 'Home':
      if (!cur) return { a: lo, b: lo + page - 1 };
      return mods.shift ? { a: lo, b: cur.b } : { a: lo, b: lo + (cur.b - cur.a) };
    case 'End':
      if (!cur) return { a: hi - page, b: hi - 1 };
      return mods.shift ? { a: cur.a, b: hi - 1 } : { a: hi - 1 - (cur.b - cur.a), b: hi - 1 };
    case 'Escape':
    case 'Delete':
    case 'Backspace':
      return null;
    default:
      return undefined;
  }
}

/**
 * The timeline under every view: per-window counts stacked by node, and a brush. Drag across
 * it to select a time range (snapped to windows); click without dragging to clear. Keyboard,
 * once focused, in steps that scale with the trace (keyboardStep, pageStep), so that any share of
 * it is a few presses away: ←/→ move the range by a step (or select the first/last step),
 * Shift+←/→ shrink or grow it, Alt+arrows do the same by one window; PageUp/PageDown move it by
 * its own length (Shift: shrink/grow by a quarter of the trace); Home/End move it to the
 * start/end keeping its length (with nothing selected: the first/last quarter), Shift+Home/End
 * extend it to the start/end; Escape clears. With a `domain` (a zoom) it shows and steps within
 * that part of the trace.
 */
export function WindowTimeline({
  windowUs,
  windows,
  values,
  nodeIds,
  metric,
  range,
  onRange,
  domain = null,
  width = 960,
  height = 120,
  testId = 'timeline',
}: WindowTimelineProps) {
  const slots = nodeIds.length + 1;
  const { lo, hi } = domainWindows(domain, windowUs, windows);
  const { max, tops } = useMemo(() => stackWindows(values, windows, slots, lo, hi), [values, windows, slots, lo, hi]);
  const startUs = lo * windowUs;
  const endUs = hi * windowUs;
  const x = useMemo(() => scaleLinear().domain([startUs, endUs]).range([MARGIN.left, width - MARGIN.right]), [startUs, endUs, width]);
  const y = useMemo(() => scaleLinear().domain([0, Math.max(1, max)]).nice(3).range([height - MARGIN.bottom, MARGIN.top]), [max, height]);
  const paths = useMemo(() => {
    const out: string[] = [];
    const bw = Math.max(0.5, x(windowUs) - x(0));
    for (let s = 0; s < slots; s++) {
      let d = '';
      for (let w = lo; w < hi; w++) {
        const bottom = tops[w * (slots + 1) + s]!;
        const top = tops[w * (slots + 1) + s + 1]!;
        if (top <= bottom) continue;
        const x0 = x(w * windowUs);
        d += `M${x0.toFixed(2)},${y(top).toFixed(2)}h${bw.toFixed(2)}V${y(bottom).toFixed(2)}h${(-bw).toFixed(2)}Z`;
      }
      out.push(d);
    }
    return out;
  }, [tops, slots, lo, hi, windowUs, x, y]);
  const [drag, setDrag] = useState<{ a: number; b: number } | null>(null);
  const moved = useRef(false);

  const windowAt = (clientX: number, el: Element) => {
    const rect = el.getBoundingClientRect();
    const px = ((clientX - rect.left) / Math.max(1, rect.width)) * width;
    return Math.max(lo, Math.min(hi - 1, Math.floor(x.invert(px) / windowUs)));
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

  /** The selection in windows, or null when there is none or it is all that is shown. */
  const selected: WindowSpan | null = (() => {
    if (!range) return null;
    const a = Math.max(lo, Math.floor(range.fromUs / windowUs));
    const b = Math.min(hi - 1, Math.ceil(range.toUs / windowUs) - 1);
    return b < a || (a === lo && b === hi - 1 && domain) ? null : { a, b };
  })();

  function key(e: KeyboardEvent<SVGSVGElement>) {
    const next = keyboardSpan(e.key, { shift: e.shiftKey, alt: e.altKey }, selected, lo, hi);
    if (next === undefined) return;
    e.preventDefault();
    onRange(next ? windowsToRange(next.a, next.b, windowUs) : null);
  }

  const shown = drag ? windowsToRange(drag.a, drag.b, windowUs) : selected ? range : null;
  const ticks = x.ticks(8);
  const yTicks = y.ticks(3);
  const plotBottom = height - MARGIN.bottom;
  const label =
    `Timeline of ${metric} per ${formatDurationUs(windowUs)} window, stacked by node. ` +
    (range ? `Selected ${formatDurationUs(range.fromUs)} to ${formatDurationUs(range.toUs)}.` : 'No range selected.') +
    ` Drag to select a time range; with the keyboard: arrows move it by ${formatDurationUs(keyboardStep(hi - lo) * windowUs)} (Alt: one window), Shift+arrows resize it, ` +
    `PageUp/PageDown by its own length (Shift: resize by ${formatDurationUs(pageStep(hi - lo) * windowUs)}), Home/End to the ends (Shift: extend), Escape clears.`;

  return (
    <div className="ns-window-timeline" data-testid={testId} data-window-us={windowUs} data-windows={windows} data-from={range?.fromUs ?? ''} data-to={range?.toUs ?? ''} data-domain-from={startUs} data-domain-to={endUs} data-export="timeline">
      <svg
        viewBox={`0 0 ${width} ${height}`}
        width="100%"
        style={{ maxWidth: width }}
        tabIndex={0}
        role="slider"
        aria-label={label}
        aria-valuemin={startUs}
        aria-valuemax={endUs}
        aria-valuenow={range?.fromUs ?? startUs}
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
