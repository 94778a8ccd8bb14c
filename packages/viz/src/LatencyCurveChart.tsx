import { scaleLinear } from 'd3-scale';
import { nodeColor, nodeLabel } from './palette.js';

export interface LatencyCurvePoint {
  /** Delivered bandwidth of the load threads, GB/s. */
  deliveredGBps: number;
  /** Latency of the dependent pointer chase, ns per load. */
  latencyNs: number;
  /** Load threads at this point (shown in the tooltip). */
  loadThreads: number;
}

export interface LatencyCurveChartProps {
  /** The memory node the curve was measured on (its palette colour). */
  memoryNode: number;
  points: readonly LatencyCurvePoint[];
  /** Chart title; default "Loaded latency, memory node N". */
  title?: string;
  width?: number;
  height?: number;
  testId?: string;
}

const MARGIN = { top: 10, right: 14, bottom: 38, left: 52 };

/**
 * A small loaded-latency curve (Intel MLC style): latency (ns) against the bandwidth the load
 * threads delivered (GB/s), one marker per measured point joined in measurement order. D3
 * computes the scales and ticks; React renders the SVG. Each point's numbers are in its tooltip
 * and in the accessible label, so the chart is never the only way to read them.
 */
export function LatencyCurveChart({ memoryNode, points, title, width = 300, height = 190, testId }: LatencyCurveChartProps) {
  const name = title ?? `Loaded latency, memory node ${memoryNode}`;
  const maxX = Math.max(1, ...points.map((p) => p.deliveredGBps));
  const maxY = Math.max(1, ...points.map((p) => p.latencyNs));
  const x = scaleLinear().domain([0, maxX]).range([MARGIN.left, width - MARGIN.right]).nice();
  const y = scaleLinear().domain([0, maxY]).range([height - MARGIN.bottom, MARGIN.top]).nice();
  const axisY = height - MARGIN.bottom;
  const path = points.map((p, i) => `${i === 0 ? 'M' : 'L'}${x(p.deliveredGBps).toFixed(1)},${y(p.latencyNs).toFixed(1)}`).join('');
  const color = nodeColor(memoryNode);
  const fmt = (p: LatencyCurvePoint) => `${p.loadThreads} load thread${p.loadThreads === 1 ? '' : 's'}: ${p.deliveredGBps.toFixed(1)} GB/s delivered, ${p.latencyNs.toFixed(0)} ns`;
  return (
    <figure className="ns-chart ns-curve" data-testid={testId} data-points={points.length}>
      <figcaption className="ns-chart__title">{name}</figcaption>
      <svg viewBox={`0 0 ${width} ${height}`} width="100%" style={{ maxWidth: width }} role="img" aria-label={`${name}: ${points.length === 0 ? 'no points' : points.map(fmt).join('; ')}`}>
        {x.ticks(4).map((t) => (
          <g key={`x${t}`} className="ns-axis">
            <line x1={x(t)} x2={x(t)} y1={MARGIN.top} y2={axisY} className="ns-grid" />
            <text x={x(t)} y={axisY + 14} textAnchor="middle">
              {t}
            </text>
          </g>
        ))}
        {y.ticks(4).map((t) => (
          <g key={`y${t}`} className="ns-axis">
            <line x1={MARGIN.left} x2={width - MARGIN.right} y1={y(t)} y2={y(t)} className="ns-grid" />
            <text x={MARGIN.left - 6} y={y(t)} textAnchor="end" dominantBaseline="central">
              {t}
            </text>
          </g>
        ))}
        <text className="ns-axis ns-axis__label" x={(MARGIN.left + width - MARGIN.right) / 2} y={height - 4} textAnchor="middle">
          delivered bandwidth (GB/s)
        </text>
        <text className="ns-axis ns-axis__label" transform={`translate(12,${(MARGIN.top + axisY) / 2}) rotate(-90)`} textAnchor="middle">
          latency (ns)
        </text>
        {points.length > 1 && <path d={path} fill="none" stroke={color} strokeWidth={2} data-testid="curve-line" />}
        {points.map((p, i) => (
          <circle key={i} cx={x(p.deliveredGBps)} cy={y(p.latencyNs)} r={3.5} fill={color} data-load={p.loadThreads}>
            <title>{`${nodeLabel(memoryNode)}, ${fmt(p)}`}</title>
          </circle>
        ))}
      </svg>
    </figure>
  );
}
