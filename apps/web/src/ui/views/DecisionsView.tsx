/**
 * Decisions: every decision every policy made in the replay (engine `Decision`), sorted by
 * window, filtered by policy and kind, each with its explanation and numbers. Selecting one
 * about pages selects them in the Memory view (its main region, a zoom onto its pages, and
 * marks on the heatmap's rows).
 */
import { useMemo } from 'react';
import type { TraceSummary } from '@numascope/policy-engine';
import { formatCount, formatDurationUs, nodeLabel } from '@numascope/viz';
import type { RegionMeta } from '@numascope/policy-engine';
import { DECISION_KINDS, formatTimeUs } from '@numascope/policy-engine';
import { decisionSelection, filterDecisions } from '../selectors/decisions';
import type { DecisionView } from '../../worker/decisions';
import { POLICY_IDS, policyLabel } from '@numascope/policy-engine';
import { useDecisions } from '../hooks/use-decisions';
import { regionName } from '../selectors/summary';
import { useTraceContext } from '../hooks/trace-context';
import { EngineRange, EngineRefusal, EstimateBanner, Progress } from './EngineParts';
import { VirtualTable } from './VirtualRows';
import { engineRequest } from '../selectors/request';
import { aboutText } from '../selectors/decisions';

/**
 * Decisions listed as a plain table; a longer list scrolls in its own box and renders only the rows
 * in view (VirtualTable, rows measured: explanations wrap), so 152 or 34,544 decisions are one
 * screen high and every one is reachable.
 */
export const DECISION_EAGER_ROWS = 30;

export function DecisionsView({ summary, regions }: { summary: TraceSummary; regions: RegionMeta[] }) {
  const { state, navigate } = useTraceContext();
  const request = engineRequest(null, state.estimate, state.range, state.base, state.win, state.rates);
  const decisions = useDecisions(request);
  const all = decisions.status === 'done' && 'decisions' in decisions.outcome ? decisions.outcome.decisions : null;
  const filtered = useMemo(() => (all ? filterDecisions(all, { policy: state.dpol, kind: state.dkind }) : []), [all, state.dpol, state.dkind]);
  const counts = useMemo(() => {
    const byPolicy = new Map<string, number>();
    const byKind = new Map<string, number>();
    for (const d of all ?? []) {
      byPolicy.set(d.policy, (byPolicy.get(d.policy) ?? 0) + 1);
      if (state.dpol === null || d.policy === state.dpol) byKind.set(d.kind, (byKind.get(d.kind) ?? 0) + 1);
    }
    return { byPolicy, byKind };
  }, [all, state.dpol]);
  const threadName = (t: number) => {
    const th = summary.threads[t];
    return th ? `${th.name || '(unnamed)'} · tid ${th.tid}` : `thread ${t}`;
  };

  if (decisions.status === 'running') {
    return decisions.analysis ? <Progress state={decisions.analysis} /> : <p className="ns-muted">Listing the decisions…</p>;
  }
  if ('error' in decisions.outcome) return <EngineRefusal error={decisions.outcome.error} onEstimate={() => navigate({ estimate: true })} />;
  const a = decisions.view!;
  const selected = state.dec ? (all!.find((d) => d.key === state.dec) ?? null) : null;
  function select(d: DecisionView) {
    const sel = decisionSelection(d, summary.totals.pages);
    navigate({ dec: d.key, ...(d.scope === 'pages' ? { region: sel.region, pages: sel.pages } : {}) });
  }

  return (
    <section className="panel engine-view decisions-view" data-testid="decisions-view" aria-labelledby="decisions-heading">
      <h2 id="decisions-heading">Policy decisions, explained</h2>
      <EstimateBanner analysis={a} onExit={() => navigate({ estimate: false })} />
      <EngineRange analysis={a} onClear={() => navigate({ range: null, dec: null })} />
      <p className="ns-muted hint">
        Every decision each policy made while replaying this recording on <strong>{a.machine.name}</strong> ({a.windowCount} window{a.windowCount === 1 ? '' : 's'} of {formatTimeUs(a.windowMs * 1000)}),
        in window order, with the numbers that drove it. Select a decision about pages to see them in the Memory view.
      </p>
      <div className="decision-filters">
        <label>
          Policy{' '}
          <select value={state.dpol ?? ''} data-testid="decision-policy" onChange={(e) => navigate({ dpol: e.target.value || null }, { replace: true })}>
            <option value="">all ({formatCount(all!.length)})</option>
            {POLICY_IDS.map((id) => (
              <option key={id} value={id}>
                {policyLabel(id)} ({formatCount(counts.byPolicy.get(id) ?? 0)})
              </option>
            ))}
          </select>
        </label>{' '}
        <label>
          Kind{' '}
          <select value={state.dkind ?? ''} data-testid="decision-kind" onChange={(e) => navigate({ dkind: DECISION_KINDS.find((k) => k === e.target.value) ?? null }, { replace: true })}>
            <option value="">all</option>
            {DECISION_KINDS.map((k) => (
              <option key={k} value={k}>
                {k} ({formatCount(counts.byKind.get(k) ?? 0)})
              </option>
            ))}
          </select>
        </label>{' '}
        <span data-testid="decisions-count" data-value={filtered.length} data-total={all!.length}>
          {formatCount(filtered.length, 'decision')} of {formatCount(all!.length)}, sorted by window
        </span>
      </div>
      {state.dec && !selected && (
        <p className="notice" data-testid="decision-missing">
          The selected decision ({state.dec}) is not in this analysis (the time range or the estimate changed).{' '}
          <button type="button" className="link-button" onClick={() => navigate({ dec: null })}>
            Clear the selection
          </button>
        </p>
      )}
      {selected && <DecisionDetail d={selected} regions={regions} threadName={threadName} onClear={() => navigate({ dec: null })} onMemory={() => navigate({ view: 'memory' })} />}
      {filtered.length === 0 ? (
        <p className="ns-muted" data-testid="no-decisions">
          No decision matches these filters.
        </p>
      ) : (
        <DecisionTable decisions={filtered} selected={selected?.key ?? null} threadName={threadName} onSelect={select} />
      )}
    </section>
  );
}

const DECISIONS_HEAD = (
  <thead>
    <tr>
      <th scope="col">window</th>
      <th scope="col" className="text">policy</th>
      <th scope="col" className="text">kind</th>
      <th scope="col" className="text">about</th>
      <th scope="col" className="text">to</th>
      <th scope="col" className="text">explanation</th>
    </tr>
  </thead>
);

/** The filtered decisions, in window order: every row reachable, the long list in a scrolling box of its own. */
function DecisionTable({
  decisions,
  selected,
  threadName,
  onSelect,
}: {
  decisions: readonly DecisionView[];
  selected: string | null;
  threadName: (t: number) => string;
  onSelect: (d: DecisionView) => void;
}) {
  return (
    <VirtualTable
      testId="decisions-table"
      className="decisions-table"
      rows={decisions}
      columns={6}
      eager={DECISION_EAGER_ROWS}
      rowPx={56}
      measure
      head={DECISIONS_HEAD}
      row={(d, index, m) => (
        <tr
          key={d.key}
          data-index={index}
          {...m}
          data-testid="decision-row"
          data-key={d.key}
          data-policy={d.policy}
          data-kind={d.kind}
          data-window={d.window}
          data-pages={d.pages ?? ''}
          className={selected === d.key ? 'selected' : undefined}
          aria-selected={selected === d.key}
        >
          <th scope="row">
            <button type="button" className="link-button" aria-pressed={selected === d.key} onClick={() => onSelect(d)} data-testid="decision-select">
              {d.window}
            </button>{' '}
            <span className="ns-muted small">{formatDurationUs(d.fromUs)}</span>
          </th>
          <td className="text">{policyLabel(d.policy)}</td>
          <td className="text">{d.kind}</td>
          <td className="text" data-value={d.pages ?? ''}>
            {aboutText(d, threadName)}
          </td>
          <td className="text">{d.toNodeIds ? d.toNodeIds.map(nodeLabel).join(', ') : '–'}</td>
          <td className="text decision-explanation">{d.explanation}</td>
        </tr>
      )}
    />
  );
}

function DecisionDetail({
  d,
  regions,
  threadName,
  onClear,
  onMemory,
}: {
  d: DecisionView;
  regions: RegionMeta[];
  threadName: (t: number) => string;
  onClear: () => void;
  onMemory: () => void;
}) {
  return (
    <section className="decision-detail notice" data-testid="decision-detail" data-key={d.key} data-scope={d.scope} aria-label="Selected decision">
      <h3>
        {policyLabel(d.policy)}, window {d.window} ({formatDurationUs(d.fromUs)} – {formatDurationUs(d.toUs)}): {d.kind}{' '}
        <button type="button" className="link-button" onClick={onClear}>
          clear
        </button>
      </h3>
      <p data-testid="decision-explanation">{d.explanation}</p>
      <dl className="facts">
        <div>
          <dt>pages</dt>
          <dd data-testid="decision-pages" data-value={d.pages ?? ''}>
            {d.pages === null ? '–' : formatCount(d.pages, 'page')}
          </dd>
        </div>
        <div>
          <dt>threads</dt>
          <dd data-testid="decision-threads" data-value={d.threads?.length ?? 0}>
            {d.threads ? d.threads.map(threadName).join(', ') : '–'}
          </dd>
        </div>
        <div>
          <dt>to</dt>
          <dd>{d.toNodeIds ? d.toNodeIds.map(nodeLabel).join(', ') : '–'}</dd>
        </div>
      </dl>
      {d.scope === 'pages' && (
        <>
          <table className="data" data-testid="decision-regions">
            <caption>Its pages by region</caption>
            <thead>
              <tr>
                <th scope="col">region</th>
                <th scope="col" className="text">name</th>
                <th scope="col">pages</th>
              </tr>
            </thead>
            <tbody>
              {d.regions.slice(0, 20).map((r) => (
                <tr key={r.region} data-region={r.region} data-value={r.pages}>
                  <th scope="row">#{r.region}</th>
                  <td className="text">{regions[r.region] ? regionName(regions[r.region]!) : ''}</td>
                  <td>{formatCount(r.pages)}</td>
                </tr>
              ))}
              {d.outsideRegions > 0 && (
                <tr data-region="-1" data-value={d.outsideRegions}>
                  <th scope="row">–</th>
                  <td className="text ns-muted">outside any listed region</td>
                  <td>{formatCount(d.outsideRegions)}</td>
                </tr>
              )}
            </tbody>
          </table>
          {d.regions.length > 20 && <p className="ns-muted small">and {formatCount(d.regions.length - 20, 'more region')}</p>}
          <p>
            <button type="button" className="primary" onClick={onMemory} data-testid="decision-show-memory">
              Show these pages in the Memory view →
            </button>{' '}
            <span className="ns-muted small">
              selects region #{d.regions[0]?.region ?? '–'}, zooms to pages {formatCount(d.rankLo)}–{formatCount(d.rankHi)} in address order and marks the
              decision’s pages
            </span>
          </p>
        </>
      )}
      {d.scope === 'all-pages' && <p className="ns-muted">This decision is about every page of the recording: every region’s details list it.</p>}
    </section>
  );
}
