/** Recommendations and plan: pick actions, build a plan with the engine's buildPlan, preview and export it. */
import { useState, useSyncExternalStore } from 'react';
import type { Plan } from '@numascope/policy-engine';
import { formatLatencyNs, formatSpeedup } from '@numascope/policy-engine';
import { formatBytes, formatCount, formatDurationUs, nodeLabel } from '@numascope/viz';
import { useTraceContext } from '../hooks/trace-context';
import { useAnalysis } from '../hooks/use-analysis';
import { ActionListOf } from './ActionList';
import { policyLabel } from '@numascope/policy-engine';
import { openApplyWithPlan } from '../live/apply';
import type { PlanLike } from '../live/apply';
import { liveSession } from '../live/store';
import { pageToken } from '../live/token';
import { desktopBridge } from '../live/desktop';
import { EngineRange, EngineRefusal, EstimateBanner, PredictionBasis, Progress, Badge } from './EngineParts';
import { WeightsPanel } from './WeightsPanel';
import { actionsRequest } from '../selectors/request';
import { predictionBadge } from '../selectors/policy';
import { weightedPolicies } from '../selectors/weights';
import { planName } from '../selectors/policy';

export function RecommendView({ source }: { source: string }) {
  const { state, navigate, client, traceId } = useTraceContext();
  const request = actionsRequest(state);
  const analysis = useAnalysis(request);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [plan, setPlan] = useState<{ plan: Plan; json: string } | { error: string } | null>(null);
  const connected = useLiveConnected();
  if (analysis.status === 'running') return <Progress state={analysis} />;
  if ('error' in analysis.outcome) return <EngineRefusal error={analysis.outcome.error} onEstimate={() => navigate({ estimate: true })} />;
  const a = analysis.outcome.view;
  const badge = predictionBadge(a);

  async function build() {
    if (!client?.plan) return;
    const out = await client.plan(traceId, request, [...selected], new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'), source.split('/').pop() ?? source);
    setPlan(out.plan && out.json ? { plan: out.plan, json: out.json } : { error: out.error ?? 'unknown error' });
  }

  function download(json: string) {
    const blob = new Blob([json], { type: 'application/json' });
    const url = URL.createObjectURL(blob);
    const link = document.createElement('a');
    link.href = url;
    link.download = planName(source);
    link.click();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }

  return (
    <section className="panel engine-view" data-testid="recommend-view">
      <h2>Recommendations &amp; plan</h2>
      <EstimateBanner analysis={a} onExit={() => navigate({ estimate: false })} />
      <EngineRange analysis={a} onClear={() => navigate({ range: null })} />
      <PredictionBasis analysis={a} onBaseline={(base) => navigate({ base })} windowMs={state.win} onWindow={(win) => navigate({ win })} accessRates={state.rates} onAccessRates={(rates) => navigate({ rates })} />
      <ActionListOf analysis={a} where="recommend" />
      {a.recommendations.length === 0 ? (
        <p className="ns-muted" data-testid="no-recommendations">
          No policy is predicted to be at least 2% faster than {policyLabel(a.baseline)} on this recording.
        </p>
      ) : (
        <table
          className="recs-table"
          data-testid="recommendations"
          data-export="recommendations"
          data-export-title={`Recommendations: actions predicted at least 2% faster than ${policyLabel(a.baseline)}, with their cost and confidence`}
        >
          <thead>
            <tr>
              <th scope="col">plan</th>
              <th scope="col">action</th>
              <th scope="col">
                predicted speedup of the action alone <Badge {...badge} />
              </th>
              <th scope="col">cost</th>
              <th scope="col">confidence</th>
            </tr>
          </thead>
          <tbody>
            {a.recommendations.map((r) => (
              <tr
                key={r.id}
                data-testid="recommendation"
                data-id={r.id}
                data-kind={r.kind}
                data-policy={r.policy}
                data-speedup={r.gain.speedup}
                data-latency-before={r.gain.latencyNsBefore}
                data-latency-after={r.gain.latencyNsAfter}
                data-pages={r.cost.pages}
                data-threads={r.cost.threads}
              >
                <td data-export-text={selected.has(r.id) ? 'in plan' : r.planable ? '' : 'not applicable'}>
                  <input
                    type="checkbox"
                    aria-label={`Include in the plan: ${r.title}`}
                    disabled={!r.planable || a.planReason !== null}
                    title={r.planable ? undefined : 'not machine-applicable: a launch line or a code change'}
                    checked={selected.has(r.id)}
                    onChange={(e) => {
                      const next = new Set(selected);
                      if (e.target.checked) next.add(r.id);
                      else next.delete(r.id);
                      setSelected(next);
                      setPlan(null);
                    }}
                  />
                </td>
                <td>
                  {r.title}
                  {r.command && (
                    <div>
                      <code>{r.command}</code>
                    </div>
                  )}
                  <div className="ns-muted small">from {policyLabel(r.policy)}</div>
                </td>
                <td data-value={r.gain.speedup} data-headline={r.gain.headline}>
                  {formatSpeedup(r.gain.speedup)}{' '}
                  <span className="ns-muted small" data-testid="recommendation-headline">
                    {r.gain.headline === 'applied-now' ? 'applied now' : 'at next launch'}
                    {r.gain.headline === 'applied-now' ? `; at next launch ${formatSpeedup(r.gain.nextLaunchSpeedup)}` : ''}
                    {r.gain.basis === 'action' && r.policy !== 'observed' ? `; ${policyLabel(r.policy)} as a whole ${formatSpeedup(r.gain.policySpeedup)}` : ''}
                  </span>{' '}
                  <span className="ns-muted small">
                    latency {formatLatencyNs(r.gain.latencyNsBefore)} → {formatLatencyNs(r.gain.latencyNsAfter)}
                  </span>
                </td>
                <td data-value={r.cost.bytes}>
                  {r.cost.pages > 0 ? `${formatCount(r.cost.pages, 'page')}, ${formatBytes(r.cost.bytes)}, ~${formatDurationUs(r.cost.seconds * 1e6)}` : ''}
                  {r.cost.threads > 0 ? ` ${formatCount(r.cost.threads, 'thread')} pinned` : ''}
                  {r.cost.pages === 0 && r.cost.threads === 0 ? 'none' : ''}
                </td>
                <td data-value={r.confidence.score} data-testid="confidence">
                  {r.confidence.level} ({r.confidence.score.toFixed(2)})
                  {/* Why: each reason lowered the score (the engine's confidenceOf). */}
                  <div className="ns-muted small" data-testid="confidence-why">
                    {r.confidence.reasons.length > 0 ? r.confidence.reasons.join('; ') : 'measured accesses on a measured machine'}
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {/* On a recording's own memory-tiered machine (memory-only nodes, several tiers) the engine replays weighted interleave; re-targeted machines are in Compare. */}
      {weightedPolicies(a).map((p) => (
        <WeightsPanel key={p.policy} analysis={a} policy={p} />
      ))}
      {a.planReason && <p className="ns-muted">Plans: {a.planReason}.</p>}
      <p>
        <button type="button" disabled={selected.size === 0} onClick={() => void build()} data-testid="build-plan">
          Build plan from {selected.size} selected
        </button>
      </p>
      {plan && 'error' in plan && (
        <p className="notice notice--error" role="alert" data-testid="plan-error">
          {plan.error}
        </p>
      )}
      {plan && 'plan' in plan && <PlanPreview plan={plan.plan} onExport={() => download(plan.json)} />}
      <PlanApplyNote synthetic={a.synthetic} connected={connected} plan={plan && 'plan' in plan ? plan : null} name={`${planName(source)} (built here)`} />
    </section>
  );
}

/** Where a built plan can be applied: live mode's "Apply a plan" (serve or the desktop app), or why not here. */
export function PlanApplyNote({ synthetic, connected, plan, name }: { synthetic: boolean; connected: boolean; plan: { json: string } | null; name: string }) {
  return synthetic ? (
    <p className="notice" data-testid="apply-synthetic">
      This trace is <strong>synthetic</strong>: its process and pid were made up by a generator, so there is nothing on this
      machine to apply a plan to. Export the plan to read it; record a real program (<code>numascope record</code>) to apply one.
    </p>
  ) : connected ? (
    <p className="notice" data-testid="apply-live">
      <button
        type="button"
        className="primary"
        disabled={!plan}
        title={plan ? undefined : 'Build a plan first'}
        onClick={() => {
          if (plan) openApplyWithPlan(JSON.parse(plan.json) as PlanLike, name);
        }}
        data-testid="apply-through-live"
      >
        Apply through live mode
      </button>{' '}
      Opens the Live screen’s “Apply a plan” with this plan: dry run, apply and rollback on this machine through <code>numascope serve</code>.
    </p>
  ) : (
    <p className="notice" data-testid="apply-note">
      Apply needs live mode (<code>numascope serve</code>) or the desktop app: export the plan, then apply it there or with{' '}
      <code>numascope apply PLAN.json</code>. See <a href="https://github.com/numascope/numascope/blob/main/docs/apply.md">docs/apply.md</a>.
    </p>
  );
}

/** Connected to numascope serve (the page has a token and the server has not refused or lost it) or inside the desktop app. */
export function useLiveConnected(): boolean {
  const session = liveSession();
  const state = useSyncExternalStore(
    (fn) => session.subscribe(fn),
    () => session.state,
  );
  const k = state.phase.kind;
  return (pageToken() !== null || desktopBridge() !== null) && k !== 'no-token' && k !== 'unauthorized' && k !== 'unreachable';
}

export function PlanPreview({ plan, onExport }: { plan: Plan; onExport: () => void }) {
  const ids = plan.target.machine.nodeIds;
  const toNode = new Map<number, { pages: number }>();
  for (const r of plan.pageRanges) {
    const pages = Number((BigInt(r.end) - BigInt(r.start)) / 4096n);
    r.toNodes.forEach((n, i) => {
      const share = r.action === 'move' ? pages : Math.floor(pages / r.toNodes.length) + (i < pages % r.toNodes.length ? 1 : 0);
      toNode.set(n, { pages: (toNode.get(n)?.pages ?? 0) + share });
    });
  }
  return (
    <div className="plan-preview" data-testid="plan-preview">
      <h3>Plan preview</h3>
      <p>
        <span data-testid="plan-pages" data-value={plan.expected.pagesToMove}>
          {formatCount(plan.expected.pagesToMove, 'page')}
        </span>{' '}
        to move (
        <span data-testid="plan-bytes" data-value={plan.expected.bytesToMove}>
          {formatBytes(plan.expected.bytesToMove)}
        </span>
        ),{' '}
        <span data-testid="plan-threads" data-value={plan.expected.threadsToPin}>
          {formatCount(plan.expected.threadsToPin, 'thread')}
        </span>{' '}
        to pin, {plan.pageRanges.length} page ranges, for pid {plan.target.pid}.
      </p>
      <table className="plan-nodes">
        <thead>
          <tr>
            <th scope="col">node</th>
            <th scope="col">pages in ranges sent here</th>
            <th scope="col">pages after</th>
            <th scope="col">bytes after</th>
          </tr>
        </thead>
        <tbody>
          {ids.map((id) => {
            const after = plan.expected.pagesPerNodeAfter[String(id)] ?? 0;
            return (
              <tr key={id} data-testid="plan-node" data-node={id} data-value={after}>
                <th scope="row">{nodeLabel(id)}</th>
                <td>{formatCount(toNode.get(id)?.pages ?? 0, 'page')}</td>
                <td>{formatCount(after, 'page')}</td>
                <td>{formatBytes(after * 4096)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <PlanRanges plan={plan} />
      {plan.threads.length > 0 && (
        <ul data-testid="plan-thread-pins">
          {plan.threads.map((t) => (
            <li key={t.tid}>
              tid {t.tid}: {t.expectedNode !== null ? `${nodeLabel(t.expectedNode)} → ` : ''}
              {t.toNodes.map(nodeLabel).join(', ')}
            </li>
          ))}
        </ul>
      )}
      <button type="button" onClick={onExport} data-testid="export-plan">
        Export plan JSON
      </button>{' '}
      <span className="ns-muted small">validated with the engine’s validatePlan (docs/plan-format.md)</span>
    </div>
  );
}

/** Ranges the preview lists before "… and N more" (the exported JSON has them all). */
const RANGES_SHOWN = 12;

/** The plan's page ranges: where each goes, how many of its pages are not there yet (expectedNodes). */
function PlanRanges({ plan }: { plan: Plan }) {
  if (plan.pageRanges.length === 0) return null;
  const rest = plan.pageRanges.length - RANGES_SHOWN;
  return (
    <table className="plan-ranges" data-testid="plan-ranges">
      <caption className="ns-muted small">Page ranges, in address order{rest > 0 ? ` (first ${RANGES_SHOWN} of ${plan.pageRanges.length})` : ''}</caption>
      <thead>
        <tr>
          <th scope="col">range</th>
          <th scope="col">action</th>
          <th scope="col">pages</th>
          <th scope="col">not there yet</th>
        </tr>
      </thead>
      <tbody>
        {plan.pageRanges.slice(0, RANGES_SHOWN).map((r) => {
          const pages = Number((BigInt(r.end) - BigInt(r.start)) / 4096n);
          // A move's pages already on its node stay; for an interleave the plan knows only the total.
          const there = r.action === 'move' && r.expectedNodes ? (r.expectedNodes[String(r.toNodes[0])] ?? 0) : null;
          return (
            <tr key={r.start} data-testid="plan-range">
              <td>
                <code>
                  {r.start}–{r.end}
                </code>
              </td>
              <td>
                {r.action} → {r.toNodes.map(nodeLabel).join(', ')}
              </td>
              <td>{formatCount(pages, 'page')}</td>
              <td data-value={there === null ? '' : pages - there}>{there === null ? '—' : formatCount(pages - there, 'page')}</td>
            </tr>
          );
        })}
      </tbody>
      {rest > 0 && (
        <tfoot>
          <tr>
            <td colSpan={4} className="ns-muted small">
              … and {rest} more (all in the exported plan)
            </td>
          </tr>
        </tfoot>
      )}
    </table>
  );
}
