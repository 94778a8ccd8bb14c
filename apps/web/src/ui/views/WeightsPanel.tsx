/**
 * Weighted interleave's recommendation for one policy run (the engine's weightsJson, carried in
 * PolicyView.weights): the weights in words, what they are predicted to gain against DRAM only and
 * against equal weights, the curve of predicted time against the DRAM share, per-object weights,
 * the numactl line and sysfs settings, and how the weights were found.
 */
import { formatSpeedup, policyLabel } from '@numascope/policy-engine';
import { WeightCurveChart, formatPercent } from '@numascope/viz';
import type { WeightCurveChartProps } from '@numascope/viz';
import type { AnalysisView, PolicyView } from '../../worker/analysis';
import { accessRateSource } from '../selectors/policy';
import { weightGains, weightsRatio, weightsSentence, weightsText } from '../selectors/weights';

export function WeightsPanel({ analysis, policy, where }: { analysis: AnalysisView; policy: PolicyView; where?: string }) {
  const w = policy.weights;
  if (!w) return null;
  const r = w.recommendation;
  const gains = weightGains(w);
  const title = `${policyLabel(policy.policy)} on ${analysis.machine.name}${where ? ` (${where})` : ''}`;
  const dramOnlyAlready = r !== null && r.slowNodes.length > 0 && w.nodes.every((n) => r.fastNodes.includes(n));
  const sysfs = Object.entries(w.sysfs);
  const curve = r ? r.curve.filter((p): p is typeof p & { timeVsDramOnly: number } => p.timeVsDramOnly !== null) : [];
  return (
    <section
      className="weights-panel"
      data-testid="weights-panel"
      data-policy={policy.policy}
      data-machine={analysis.machine.name}
      data-nodes={w.nodes.join(',')}
      data-weights={w.weights.join(',')}
      data-dram-share={r?.dramShare ?? ''}
      aria-label={`Weighted interleave: ${title}`}
    >
      <h3>{title}</h3>
      <p className="weights-panel__headline">
        <strong data-testid="weights-words">{weightsSentence(w)}</strong>
        {dramOnlyAlready && <span className="ns-muted"> (every page on the fast side: the slower memory is not predicted to help this program)</span>}
      </p>
      {r && (
        <p data-testid="weights-gains">
          Predicted with these weights:{' '}
          <span data-testid="weights-vs-dram" data-value={gains.vsDramOnly ?? ''}>
            {gains.vsDramOnly !== null ? formatSpeedup(gains.vsDramOnly) : '–'}
          </span>{' '}
          vs DRAM only,{' '}
          <span data-testid="weights-vs-equal" data-value={gains.vsEqual ?? ''}>
            {gains.vsEqual !== null ? formatSpeedup(gains.vsEqual) : '–'}
          </span>{' '}
          vs equal weights (1:1) <span className="ns-muted small">(speedups: the other placement&rsquo;s predicted time ÷ this one&rsquo;s)</span>
          <br />
          Optimum at <span data-testid="weights-optimum" data-value={r.optimum.dramShare}>{formatPercent(r.optimum.dramShare)}</span> on DRAM; within{' '}
          {formatPercent(r.flat.band, 0)} of it from{' '}
          <span data-testid="weights-flat" data-from={r.flat.fromShare} data-to={r.flat.toShare}>
            {formatPercent(r.flat.fromShare)} to {formatPercent(r.flat.toShare)}
          </span>{' '}
          on DRAM (how much the exact ratio matters). Started from the bandwidth ratio, {weightsText(r.bandwidthRatio.nodes, r.bandwidthRatio.weights)} (
          {formatPercent(r.bandwidthRatio.dramShare)} on DRAM).
        </p>
      )}
      <p className="ns-muted small" data-testid="weights-rates">
        Access rates: {accessRateSource(analysis)}.
      </p>
      {r && curve.length > 0 && r.optimum.timeVsDramOnly !== null && r.timeVsDramOnly !== null && r.bandwidthRatio.timeVsDramOnly !== null && (
        <WeightCharts
          id={policy.policy.replace(/[^a-z0-9-]/gi, '_')}
          title={title}
          chart={{
            points: curve,
            optimum: { dramShare: r.optimum.dramShare, timeVsDramOnly: r.optimum.timeVsDramOnly },
            recommended: { dramShare: r.dramShare, timeVsDramOnly: r.timeVsDramOnly, label: `weights ${weightsRatio(w.weights)}` },
            bandwidthRatio: { dramShare: r.bandwidthRatio.dramShare, timeVsDramOnly: r.bandwidthRatio.timeVsDramOnly, label: `weights ${weightsRatio(r.bandwidthRatio.weights)}` },
            flat: r.flat,
          }}
        />
      )}
      {r && <p className="ns-muted small">{r.sides}. Curve times are the recommendation&rsquo;s own model times: compare its points with each other, not with the policies&rsquo; predicted times.</p>}
      {w.objects.length > 0 && (
        <table className="data weights-objects" data-testid="weights-objects">
          <caption>Per allocation site (the other pages at the process weights)</caption>
          <thead>
            <tr>
              <th scope="col">allocation site</th>
              <th scope="col">weights</th>
              <th scope="col">pages on DRAM</th>
            </tr>
          </thead>
          <tbody>
            {w.objects.map((o) => (
              <tr key={o.site} data-testid="weights-object" data-weights={o.weights.join(',')}>
                <th scope="row">
                  <code>{o.site}</code>
                </th>
                <td>{weightsText(o.nodes, o.weights)}</td>
                <td>{formatPercent(o.dramShare)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <p>
        Launch line: <code data-testid="weights-numactl">{w.numactl}</code>
        <br />
        <span className="ns-muted small" data-testid="weights-note">
          {w.note}.
        </span>
      </p>
      {sysfs.length > 0 && (
        <p className="ns-muted small" data-testid="weights-sysfs">
          System-wide weights (sysfs):{' '}
          {sysfs.map(([file, v], i) => (
            <span key={file}>
              {i > 0 ? ', ' : ''}
              <code>
                {file} = {v}
              </code>
            </span>
          ))}
        </p>
      )}
      {r && (
        <details data-testid="weights-method">
          <summary>How these weights were found</summary>
          <p className="ns-muted small">{r.method}.</p>
        </details>
      )}
    </section>
  );
}

/** Zoom around the flat band when it covers less than this share of the axis (else the whole curve says it). */
const ZOOM_BELOW = 0.6;
/** Shares shown either side of the flat band in the zoomed chart. */
const ZOOM_MARGIN = 0.1;

/**
 * The whole curve, and beside it the shares around the flat band: the slow-memory end of the
 * curve is often several times DRAM's time, which squashes the optimum's neighbourhood.
 */
function WeightCharts({ id, title, chart }: { id: string; title: string; chart: Omit<WeightCurveChartProps, 'title' | 'testId' | 'shareRange'> }) {
  const from = Math.max(0, chart.flat.fromShare - ZOOM_MARGIN);
  const to = Math.min(1, chart.flat.toShare + ZOOM_MARGIN);
  return (
    <div className="weights-panel__charts">
      <WeightCurveChart {...chart} testId={`weight-curve-${id}`} title={`Predicted time against the DRAM share: ${title}`} />
      {to - from < ZOOM_BELOW && (
        <WeightCurveChart
          {...chart}
          testId={`weight-curve-${id}-zoom`}
          shareRange={[from, to]}
          title={`Around the optimum: ${formatPercent(from)} to ${formatPercent(to)} on DRAM`}
        />
      )}
    </div>
  );
}
