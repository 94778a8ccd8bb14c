import { scaleBand, scaleLinear } from 'd3-scale';
import { formatCompact, formatPercent } from './format.js';
import { nodeColor, nodeLabel } from './palette.js';

export interface NodeBarDatum {
  /** Node id; -1 for the "unknown node" bar. */
  node: number;
  value: number;
}

export interface NodeBarChartProps {
  /** What the bars measure, with its unit: "Pages seen (4 KiB pages)". Used as the chart's title. */
  title: string;
  data: readonly NodeBarDatum[];
  /** The machine's node ids, to give every node its palette colour. */
  nodeIds: readonly number[];
  /** Formats a value with its unit, for labels and tooltips. */
  format: (value: number) => string;
  /** Formats an axis tick; defaults to compact counts. */
  formatTick?: (value: number) => string;
  /** The axis's unit, written after its last tick: "pages (4 KiB)". */
  unit?: string;
  width?: number;
  testId?: string;
}

const ROW = 26;
const MARGIN = { top: 8, right: 150, bottom: 26, left: 110 };

/**
 * Horizontal bars, one per node. D3 computes the scales and ticks; React renders the SVG.
 * Each bar shows its value and share of the total as text, so colour is never the only cue.
 */
export function NodeBarChart({
  title,
  data,
  nodeIds,
  format,
  formatTick = formatCompact,
  unit,
  width = 560,
  testId,
}: NodeBarChartProps) {
  const height = MARGIN.top + MARGIN.bottom + ROW * Math.max(data.length, 1);
  const total = data.reduce((sum, d) => sum + d.value, 0);
  const max = data.reduce((m, d) => Math.max(m, d.value), 0);
  const x = scaleLinear()
    .domain([0, max > 0 ? max : 1])
    .range([MARGIN.left, width - MARGIN.right])
    .nice();
  const y = scaleBand<string>()
    .domain(data.map((d) => String(d.node)))
    .range([MARGIN.top, height - MARGIN.bottom])
    .padding(0.2);
  const ticks = x.ticks(4);
  const axisY = height - MARGIN.bottom;

  return (
    <figure className="ns-chart" data-testid={testId}>
      <figcaption className="ns-chart__title">{title}</figcaption>
      <svg
        viewBox={`0 0 ${width} ${height}`}
        width="100%"
        style={{ maxWidth: width }}
        role="img"
        aria-label={`${title}: ${data.map((d) => `${nodeLabel(d.node)} ${format(d.value)}`).join(', ')}`}
      >
        {ticks.map((t) => (
          <g key={t} className="ns-axis">
            <line x1={x(t)} x2={x(t)} y1={MARGIN.top} y2={axisY} className="ns-grid" />
            <text x={x(t)} y={axisY + 16} textAnchor="middle">
              {formatTick(t)}
            </text>
          </g>
        ))}
        {data.map((d) => {
          const top = y(String(d.node)) ?? 0;
          const share = total > 0 ? d.value / total : NaN;
          const barWidth = Math.max(0, x(d.value) - x(0));
          return (
            <g key={d.node} data-node={d.node}>
              <title>{`${nodeLabel(d.node)}: ${format(d.value)} (${formatPercent(share)} of total)`}</title>
              <text x={MARGIN.left - 8} y={top + y.bandwidth() / 2} textAnchor="end" dominantBaseline="central">
                {nodeLabel(d.node)}
              </text>
              <rect
                x={x(0)}
                y={top}
                width={barWidth}
                height={y.bandwidth()}
                fill={nodeColor(d.node, nodeIds)}
                rx={2}
              />
              <text
                x={x(0) + barWidth + 6}
                y={top + y.bandwidth() / 2}
                dominantBaseline="central"
                className="ns-chart__value"
              >
                {`${format(d.value)} · ${formatPercent(share)}`}
              </text>
            </g>
          );
        })}
        <line x1={x(0)} x2={x(0)} y1={MARGIN.top} y2={axisY} className="ns-axis-line" />
        {unit && (
          <text x={width - MARGIN.right + 14} y={axisY + 16} className="ns-axis ns-axis__unit" data-testid={testId ? `${testId}-unit` : undefined}>
            {unit}
          </text>
        )}
      </svg>
    </figure>
  );
}
