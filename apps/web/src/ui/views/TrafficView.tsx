/** Traffic per policy: the node/link traffic graph of one replay, its metrics and the top recommendations. */
import { formatSpeedup, formatTimeUs } from '@numascope/policy-engine';
import { TrafficGraph, formatPercent } from '@numascope/viz';
import { useTraceContext } from '../hooks/trace-context';
import { useAnalysis } from '../hooks/use-analysis';
import { POLICY_IDS, TIERED_POLICY_IDS, policyLabel } from '@numascope/policy-engine';
import { EngineRange, EngineRefusal, EstimateBanner, MetricCards, PredictionBasis, Progress, UnavailableList } from './EngineParts';
import { engineRequest } from '../selectors/request';
import { costText, speedupMetric, transientText } from '../selectors/policy';
import { defaultPolicy, trafficInput } from '../selectors/policy';

export function TrafficView() {
  const { state, navigate } = useTraceContext();
  const analysis = useAnalysis(engineRequest(null, state.estimate, state.range, state.base, state.win, state.rates));
  if (analysis.status === 'running') return <Progress state={analysis} />;
  const { outcome } = analysis;
  if ('error' in outcome) return <EngineRefusal error={outcome.error} onEstimate={() => navigate({ estimate: true })} />;
  const a = outcome.view;
  const p = a.policies.find((x) => x.policy === state.policy) ?? defaultPolicy(a)!;
  return (
    <section className="panel engine-view" data-testid="traffic-view" data-estimate={a.estimate ?? ''}>
      <div className="view-head">
        <h2>Traffic per policy</h2>
        <div className="policy-picker" role="radiogroup" aria-label="Policy drawn">
          {[...POLICY_IDS, ...TIERED_POLICY_IDS.filter((id) => a.policies.some((x) => x.policy === id))].map((id) => {
            const there = a.policies.some((x) => x.policy === id);
            return (
              <button
                key={id}
                type="button"
                role="radio"
                aria-checked={p.policy === id}
                disabled={!there}
                title={there ? undefined : a.unavailable.find((u) => u.policy === id)?.reason}
                data-testid={`policy-${id}`}
                onClick={() => navigate({ policy: id }, { replace: true })}
              >
                {policyLabel(id)}
              </button>
            );
          })}
        </div>
      </div>
      <EstimateBanner analysis={a} onExit={() => navigate({ estimate: false })} />
      <EngineRange analysis={a} onClear={() => navigate({ range: null })} />
      <PredictionBasis analysis={a} onBaseline={(base) => navigate({ base })} windowMs={state.win} onWindow={(win) => navigate({ win })} accessRates={state.rates} onAccessRates={(rates) => navigate({ rates })} />
      <div className="traffic-layout">
        <TrafficGraph traffic={trafficInput(a, p)} size={360} title={`${policyLabel(p.policy)} on ${a.machine.name}`} />
        <div className="traffic-layout__side">
          <p className="ns-muted traffic-summary">
        {p.description} On <strong>{a.machine.name}</strong>, {a.windowCount} window{a.windowCount === 1 ? '' : 's'} of {formatTimeUs(a.windowMs * 1000)}. Predicted speedup vs{' '}
        {policyLabel(a.baseline)}:{' '}
        <strong data-testid="traffic-speedup" data-value={p.predictedSpeedup}>
          {formatSpeedup(p.predictedSpeedup)}
        </strong>{' '}
        (predicted{' '}
        <span data-testid="traffic-predicted" data-value={p.predictedUs}>
          {formatTimeUs(p.predictedUs)}
        </span>
        ; the recording took {formatTimeUs(a.recordedUs)}); {costText(p)}.
      </p>
          <MetricCards analysis={a} policy={p} extra={[speedupMetric(a, p)]} />
        </div>
      </div>
      {a.headline === 'steady-state' && (
        <p className="ns-muted small" data-testid="traffic-transient">
          {transientText(a, p)}
        </p>
      )}
      <UnavailableList analysis={a} />
      <h3>Top recommendations</h3>
      {a.recommendations.length === 0 ? (
        <p className="ns-muted">No policy is predicted to be at least 2% faster than {policyLabel(a.baseline)}.</p>
      ) : (
        <ol className="top-recs" data-testid="top-recommendations">
          {a.recommendations.slice(0, 3).map((r) => (
            <li key={r.id} data-testid="top-recommendation" data-policy={r.policy} data-kind={r.kind} data-speedup={r.gain.speedup} data-latency-before={r.gain.latencyNsBefore} data-latency-after={r.gain.latencyNsAfter}>
              {r.title} <span className="ns-muted">(confidence {r.confidence.level})</span>
            </li>
          ))}
        </ol>
      )}
      <p>
        <button type="button" className="link-button" onClick={() => navigate({ view: 'recommend' })}>
          All recommendations and plans →
        </button>{' '}
        <button type="button" className="link-button" onClick={() => navigate({ view: 'compare' })}>
          Compare policies side by side →
        </button>{' '}
        <button type="button" className="link-button" onClick={() => navigate({ view: 'decisions', dpol: p.policy })}>
          {policyLabel(p.policy)}’s decisions, explained ({p.decisionCount}) →
        </button>
      </p>
      {a.notes.length > 0 && (
        <details className="engine-notes">
          <summary>Engine notes ({a.notes.length})</summary>
          <ul>
            {a.notes.map((n, i) => (
              <li key={i}>{n}</li>
            ))}
          </ul>
        </details>
      )}
      <p className="ns-muted small">Shares: {p.mcShare.map((s, i) => `node ${a.machine.nodeIds[i]} ${formatPercent(s, 0)}`).join(', ')}.</p>
    </section>
  );
}
