import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'react';
import type { HTMLAttributes, PointerEvent, ReactNode } from 'react';

export interface CanvasSize {
  /** CSS pixels. */
  width: number;
  height: number;
}

export interface ChartCanvasProps<Hit> extends Omit<HTMLAttributes<HTMLCanvasElement>, 'children'> {
  width: number;
  height: number;
  /** Draws the chart in CSS pixels (the device pixel ratio is already applied). */
  draw: (ctx: CanvasRenderingContext2D, size: CanvasSize) => void;
  /** What is under a point (CSS pixels from the canvas's top left), for hover and click. */
  hitTest?: (x: number, y: number) => Hit | null;
  /** Tooltip text for a hit. */
  tooltip?: (hit: Hit) => string;
  onPick?: (hit: Hit) => void;
  /** Accessible name: what the chart shows, in words. */
  label: string;
  testId?: string;
  /** Drawn over the canvas (selection bands, focus hints), positioned by the caller. */
  overlay?: ReactNode;
}

/** The pointer's position in the canvas's CSS pixels, whatever size it is displayed at. */
export function canvasPoint(e: { clientX: number; clientY: number; currentTarget: Element }, width: number): { x: number; y: number } {
  const rect = e.currentTarget.getBoundingClientRect();
  const scale = rect.width > 0 ? width / rect.width : 1;
  return { x: (e.clientX - rect.left) * scale, y: (e.clientY - rect.top) * scale };
}

/**
 * The one canvas primitive every dense view uses. It sizes the backing store to the device
 * pixel ratio (and redraws when that changes, e.g. the window moves to another screen),
 * coalesces redraw requests into one per animation frame, and turns pointer positions into
 * hits for tooltips and clicks. The first draw of each new `draw` function happens in the same
 * commit, so what React shows and what the canvas shows never disagree.
 */
export function ChartCanvas<Hit>({
  width,
  height,
  draw,
  hitTest,
  tooltip,
  onPick,
  label,
  testId,
  overlay,
  onPointerMove,
  onPointerLeave,
  onClick,
  style,
  ...rest
}: ChartCanvasProps<Hit>) {
  const ref = useRef<HTMLCanvasElement>(null);
  const frame = useRef(0);
  const [dpr, setDpr] = useState(() => globalThis.devicePixelRatio || 1);
  const [hover, setHover] = useState<{ x: number; y: number; text: string } | null>(null);

  const paint = useCallback(() => {
    frame.current = 0;
    const canvas = ref.current;
    const ctx = canvas?.getContext?.('2d');
    if (!canvas || !ctx) return; // no canvas (a test DOM)
    const w = Math.round(width * dpr);
    const h = Math.round(height * dpr);
    if (canvas.width !== w) canvas.width = w;
    if (canvas.height !== h) canvas.height = h;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    draw(ctx, { width, height });
    canvas.dataset.draws = String(Number(canvas.dataset.draws ?? 0) + 1);
  }, [draw, width, height, dpr]);

  useLayoutEffect(paint, [paint]);

  // Device pixel ratio changes (zoom, another screen): redraw at the next frame.
  useEffect(() => {
    if (typeof matchMedia !== 'function') return;
    const mq = matchMedia(`(resolution: ${dpr}dppx)`);
    const onChange = () => setDpr(globalThis.devicePixelRatio || 1);
    mq.addEventListener?.('change', onChange);
    return () => mq.removeEventListener?.('change', onChange);
  }, [dpr]);

  // Theme changes (light/dark) change the colours the draw function reads from CSS.
  useEffect(() => {
    if (typeof matchMedia !== 'function') return;
    const mq = matchMedia('(prefers-color-scheme: dark)');
    const onChange = () => {
      if (!frame.current && typeof requestAnimationFrame === 'function') frame.current = requestAnimationFrame(paint);
    };
    mq.addEventListener?.('change', onChange);
    return () => {
      mq.removeEventListener?.('change', onChange);
      if (frame.current) cancelAnimationFrame(frame.current);
      frame.current = 0;
    };
  }, [paint]);

  function move(e: PointerEvent<HTMLCanvasElement>) {
    onPointerMove?.(e);
    if (!hitTest || !tooltip) return;
    const p = canvasPoint(e, width);
    const hit = hitTest(p.x, p.y);
    setHover(hit === null ? null : { x: p.x, y: p.y, text: tooltip(hit) });
  }

  return (
    <div className="ns-canvas" style={{ maxWidth: width }} data-testid={testId}>
      <canvas
        ref={ref}
        role="img"
        aria-label={label}
        style={{ width: '100%', maxWidth: width, aspectRatio: `${width} / ${height}`, display: 'block', ...style }}
        onPointerMove={move}
        onPointerLeave={(e) => {
          onPointerLeave?.(e);
          setHover(null);
        }}
        onClick={(e) => {
          onClick?.(e);
          if (!hitTest || !onPick) return;
          const p = canvasPoint(e, width);
          const hit = hitTest(p.x, p.y);
          if (hit !== null) onPick(hit);
        }}
        {...rest}
      />
      {overlay}
      {hover && (
        <div
          className="ns-timeline__tooltip"
          style={{ left: `${((hover.x + 12) / width) * 100}%`, top: `${((hover.y + 12) / height) * 100}%` }}
          aria-hidden="true"
        >
          {hover.text}
        </div>
      )}
    </div>
  );
}
