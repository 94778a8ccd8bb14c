/**
 * Every action as one ranked list (issue 30): the report's `actions`, the recommendations and the
 * diagnosed fixes together, each with its own predicted gain, ranked by it; fixes the engine
 * cannot predict come last, saying why. The Overview (its first few), Diagnostics and
 * Recommendations render this one component from the one analysis the Recommendations view
 * asks for (`actionsRequest`), so the three lists are the same list.
 */
import { formatSpeedup, policyLabel } from '@numascope/policy-engine';
import { useTraceContext } from '../hooks/trace-context';
import { useAnalysis } from '../hooks/use-analysis';
import type { AnalysisView } from '../../worker/analysis';
import { actionsRequest } from '../selectors/request';

/** The list from an analysis already in hand (the Recommendations view's own). */
export function ActionListOf({ analysis: a, limit, where }: { analysis: AnalysisView; limit?: number; where: string }) {
  const { navigate } = useTraceContext();
  const shown = limit === undefined ? a.actions : a.actions.slice(0, limit);
  return (
    <section aria-label="All actions, ranked" data-testid="action-list" data-where={where} data-count={a.actions.length}>
      <h3>{limit === undefined ? 'All actions, ranked by their own predicted gain' : 'Top actions, ranked by their own predicted gain'}</h3>
      {a.actions.length === 0 ? (
        <p className="ns-muted small" data-testid="action-list-empty">
          No action is predicted to help on this recording{a.diagnosis ? '' : ` (diagnostics: ${a.diagnosisNote ?? 'not made'})`}.
        </p>
      ) : (
        <ol className="action-list">
          {shown.map((x) => (
            <li key={`${x.from}:${x.id}`} data-testid="action" data-from={x.from} data-id={x.id} data-speedup={x.speedup ?? ''}>
              <strong>{x.speedup === null ? 'not predicted' : `${formatSpeedup(x.speedup)} ${x.headline === 'applied-now' ? 'applied now' : 'at next launch'}`}</strong>{' '}
              <span className="ns-muted small">{x.from === 'recommendation' ? `recommendation, as ${policyLabel(x.policy ?? '')} does` : `diagnosis: ${x.issue}${x.site ? ` at ${x.site}` : ''}`}</span>
              {': '}
              {x.title}
              {x.noPrediction ? <span className="ns-muted small"> ({x.noPrediction})</span> : null}{' '}
              {x.from === 'diagnosis' && where !== 'diagnose' && (
                <button type="button" className="link-button" onClick={() => navigate({ view: 'diagnose' })}>
                  in Diagnostics
                </button>
              )}
              {x.from === 'recommendation' && where !== 'recommend' && (
                <button type="button" className="link-button" onClick={() => navigate({ view: 'recommend' })}>
                  in Recommendations
                </button>
              )}
            </li>
          ))}
        </ol>
      )}
      {a.actions.length > 0 && a.diagnosis === null && a.diagnosisNote && (
        <p className="ns-muted small" data-testid="action-list-note">
          No diagnosed fixes in this list: {a.diagnosisNote}.
        </p>
      )}
      {limit !== undefined && a.actions.length > shown.length && (
        <button type="button" className="link-button" data-testid="action-list-all" onClick={() => navigate({ view: 'recommend' })}>
          All {a.actions.length} actions in Recommendations
        </button>
      )}
    </section>
  );
}

/** The list from the Recommendations view's analysis (run here if it is not yet cached). */
export function ActionList({ limit, where }: { limit?: number; where: string }) {
  const { state } = useTraceContext();
  const analysis = useAnalysis(actionsRequest(state));
  if (analysis.status === 'running') return <p className="ns-muted small" data-testid="action-list-running">Ranking actions…</p>;
  if ('error' in analysis.outcome) return null;
  return <ActionListOf analysis={analysis.outcome.view} limit={limit} where={where} />;
}
