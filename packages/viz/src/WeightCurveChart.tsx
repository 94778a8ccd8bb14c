import { line } from 'd3-shape';
import { scaleLinear } from 'd3-scale';
import { formatPercent } from './format.js';

/** One point of the curve: the share of pages on the fast (DRAM) side and the predicted time relative to DRAM only. */
export interface WeightCurvePointView {
  /** 0..1. */
  dramShare: number;
  /** Predicted time ÷ the predicted time with every page on DRAM (1 = as fast as DRAM only, < 1 faster). */
  timeVsDramOnly: number;
}

/** A marked point of the curve (the optimum, the recommended weights, the bandwidth-ratio start). */
export interface WeightCurveMark extends WeightCurvePointView {
  /** Shown in the tooltip and the accessible description, e.g. "weights 9:2". */
  label: string;
}

export interface WeightCurveChartProps {
  points: readonly WeightCurvePointView[];
  /** The curve's minimum (continuous share, before rounding to integer weights). */
  optimum: WeightCurvePointView;
  /** The recommended integer weights' share and time. */
  recommended: WeightCurveMark;
  /** The starting point: weights in the ratio of the nodes' bandwidths. */
  bandwidthRatio: WeightCurveMark;
  /** Shares whose predicted time is within `band` of the optimum's. */
  flat: { fromShare: number; toShare: number; band: number };
  /**
   * DRAM shares shown (default [0, 1]): a narrower range zooms in on the optimum, where the full
   * curve's steep slow-memory end squashes the flat band. Points and marks outside it are left out.
   */
  shareRange?: readonly [number, number];
  title?: string;
  width?: number;
  height?: number;
  testId?: string;
}

const MARGIN = { top: 12, right: 14, bottom: 40, left: 52 };

/** Two decimals: the y ticks and values are ratios near 1. */
const ratio = (v: number) => v.toFixed(2);

/**
 * Weighted interleave's curve (the engine's recommendWeights): predicted time relative to DRAM
 * only against the share of pages on DRAM (0–100 %). The flat band (within a few per cent of the
 * optimum) is shaded, the optimum is a circle, the recommended integer weights a diamond and the
 * bandwidth-ratio starting point a triangle; a dashed line marks DRAM only (1.00). D3 computes the
 * scales, ticks and path; React renders the SVG. Every marked value is also in the tooltip and the
 * accessible description, so the chart is never the only way to read them.
 */
export function WeightCurveChart({ points, optimum, recommended, bandwidthRatio, flat, shareRange = [0, 1], title, width = 340, height = 210, testId }: WeightCurveChartProps) {
  const name = title ?? 'Predicted time against the DRAM share';
  const [from, to] = shareRange;
  const inRange = (p: WeightCurvePointView) => p.dramShare >= from - 1e-9 && p.dramShare <= to + 1e-9;
  const sorted = [...points].filter((p) => Number.isFinite(p.timeVsDramOnly) && inRange(p)).sort((a, b) => a.dramShare - b.dramShare);
  const marks = [optimum, recommended, bandwidthRatio].filter(inRange);
  const ys = [1, ...marks.map((m) => m.timeVsDramOnly), ...sorted.map((p) => p.timeVsDramOnly)].filter(Number.isFinite);
  const lo = Math.min(...ys);
  const hi = Math.max(...ys);
  const pad = Math.max((hi - lo) * 0.05, 0.01);
  const x = scaleLinear().domain([from, to]).range([MARGIN.left, width - MARGIN.right]);
  const y = scaleLinear()
    .domain([Math.max(0, lo - pad), hi + pad])
    .range([height - MARGIN.bottom, MARGIN.top])
    .nice();
  const axisY = height - MARGIN.bottom;
  const path =
    line<WeightCurvePointView>()
      .x((p) => x(p.dramShare))
      .y((p) => y(p.timeVsDramOnly))(sorted) ?? '';
  const mark = (p: WeightCurvePointView) => `${formatPercent(p.dramShare)} on DRAM: ${ratio(p.timeVsDramOnly)} of DRAM-only time`;
  const desc = [
    ...(from > 0 || to < 1 ? [`Shares from ${formatPercent(from)} to ${formatPercent(to)} on DRAM.`] : []),
    `Optimum: ${mark(optimum)}.`,
    `Recommended ${recommended.label}: ${mark(recommended)}.`,
    `Bandwidth-ratio start ${bandwidthRatio.label}: ${mark(bandwidthRatio)}.`,
    `Flat (within ${formatPercent(flat.band, 0)} of the optimum) from ${formatPercent(flat.fromShare)} to ${formatPercent(flat.toShare)} on DRAM.`,
    `${sorted.length} points from ${formatPercent(sorted[0]?.dramShare ?? 0)} to ${formatPercent(sorted[sorted.length - 1]?.dramShare ?? 1)}.`,
  ].join(' ');
  const titleId = testId ? `${testId}-title` : undefined;
  const descId = testId ? `${testId}-desc` : undefined;
  const diamond = (cx: number, cy: number, r: number) => `M${cx},${cy - r}L${cx + r},${cy}L${cx},${cy + r}L${cx - r},${cy}Z`;
  const triangle = (cx: number, cy: number, r: number) => `M${cx},${cy - r}L${cx + r},${cy + r * 0.8}L${cx - r},${cy + r * 0.8}Z`;
  const px = (v: number) => Number(v.toFixed(1));
  return (
    <figure className="ns-chart ns-weight-curve" data-testid={testId} data-points={sorted.length} data-optimum-share={optimum.dramShare} data-recommended-share={recommended.dramShare}>
      <figcaption className="ns-chart__title">{name}</figcaption>
      <svg viewBox={`0 0 ${width} ${height}`} width="100%" style={{ maxWidth: width }} role="img" aria-labelledby={titleId && descId ? `${titleId} ${descId}` : undefined} aria-label={titleId ? undefined : `${name}. ${desc}`}>
        <title id={titleId}>{name}</title>
        <desc id={descId}>{desc}</desc>
        <rect
          className="ns-weight-curve__flat"
          data-testid="weight-flat-band"
          x={px(x(Math.max(from, flat.fromShare)))}
          width={px(Math.max(0, x(Math.min(to, flat.toShare)) - x(Math.max(from, flat.fromShare))))}
          y={MARGIN.top}
          height={axisY - MARGIN.top}
        >
          <title>{`flat: within ${formatPercent(flat.band, 0)} of the optimum from ${formatPercent(flat.fromShare)} to ${formatPercent(flat.toShare)} on DRAM`}</title>
        </rect>
        {x.ticks(to - from < 0.5 ? 4 : 5).map((t) => (
          <g key={`x${t}`} className="ns-axis">
            <line x1={x(t)} x2={x(t)} y1={MARGIN.top} y2={axisY} className="ns-grid" />
            <text x={x(t)} y={axisY + 14} textAnchor="middle">
              {formatPercent(t, to - from < 0.1 ? 1 : 0)}
            </text>
          </g>
        ))}
        {y.ticks(4).map((t) => (
          <g key={`y${t}`} className="ns-axis">
            <line x1={MARGIN.left} x2={width - MARGIN.right} y1={y(t)} y2={y(t)} className="ns-grid" />
            <text x={MARGIN.left - 6} y={y(t)} textAnchor="end" dominantBaseline="central">
              {ratio(t)}
            </text>
          </g>
        ))}
        <line className="ns-weight-curve__dram" data-testid="weight-dram-only" x1={MARGIN.left} x2={width - MARGIN.right} y1={px(y(1))} y2={px(y(1))} strokeDasharray="4 3">
          <title>DRAM only: 1.00</title>
        </line>
        <text className="ns-axis ns-axis__label" x={(MARGIN.left + width - MARGIN.right) / 2} y={height - 6} textAnchor="middle">
          pages on DRAM (%)
        </text>
        <text className="ns-axis ns-axis__label" transform={`translate(12,${(MARGIN.top + axisY) / 2}) rotate(-90)`} textAnchor="middle">
          time ÷ DRAM-only time
        </text>
        {sorted.length > 1 && <path d={path} fill="none" className="ns-weight-curve__line" strokeWidth={2} data-testid="weight-curve-line" />}
        {inRange(bandwidthRatio) && (
          <path className="ns-weight-curve__start" data-testid="weight-bandwidth-ratio" d={triangle(px(x(bandwidthRatio.dramShare)), px(y(bandwidthRatio.timeVsDramOnly)), 5)} data-share={bandwidthRatio.dramShare}>
            <title>{`bandwidth-ratio start ${bandwidthRatio.label}: ${mark(bandwidthRatio)}`}</title>
          </path>
        )}
        {inRange(optimum) && (
          <circle className="ns-weight-curve__optimum" data-testid="weight-optimum" cx={px(x(optimum.dramShare))} cy={px(y(optimum.timeVsDramOnly))} r={6} data-share={optimum.dramShare}>
            <title>{`optimum: ${mark(optimum)}`}</title>
          </circle>
        )}
        {inRange(recommended) && (
          <path className="ns-weight-curve__chosen" data-testid="weight-recommended" d={diamond(px(x(recommended.dramShare)), px(y(recommended.timeVsDramOnly)), 4.5)} data-share={recommended.dramShare}>
            <title>{`recommended ${recommended.label}: ${mark(recommended)}`}</title>
          </path>
        )}
      </svg>
      <p className="ns-weight-curve__legend ns-muted small" aria-hidden="true">
        <span className="ns-weight-curve__key ns-weight-curve__key--optimum">●</span> optimum{' '}
        <span className="ns-weight-curve__key ns-weight-curve__key--chosen">◆</span> recommended {recommended.label}{' '}
        <span className="ns-weight-curve__key ns-weight-curve__key--start">▲</span> bandwidth ratio {bandwidthRatio.label}{' '}
        <span className="ns-weight-curve__key ns-weight-curve__key--flat">■</span> flat (within {formatPercent(flat.band, 0)})
      </p>
    </figure>
  );
}
