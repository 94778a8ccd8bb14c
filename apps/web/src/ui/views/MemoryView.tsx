import { useMemo, useRef, useState } from 'react';
import { AddressHeatmap, HeatTable, NodeLegend, formatBytes, formatCount, formatDurationUs, heatmapResolution, nodeLabel } from '@numascope/viz';
import type { TraceSummary } from '@numascope/policy-engine';
import type { HeatmapMode, RegionMeta } from '@numascope/policy-engine';
import { regionName, regionRows, slotLabels } from '../selectors/summary';
import type { RegionRow } from '../selectors/summary';
import { useTraceContext, useTraceQuery } from '../hooks/trace-context';
import { useWidth } from '../hooks/use-width';
import { regionDecisions } from '../selectors/decisions';
import type { DecisionView } from '../../worker/decisions';
import { policyLabel } from '@numascope/policy-engine';
import { useDecisionPages, useDecisions } from '../hooks/use-decisions';
import { EngineRefusal, Progress } from './EngineParts';
import { RegionObjects } from './ObjectsPanel';
import { VirtualTable } from './VirtualRows';
import { engineRequest } from '../selectors/request';

const HEAT_LABELS: Record<HeatmapMode, string> = { node: 'accessing node', samples: 'samples', faults: 'first touches', accesses: 'accesses' };
type TableMetric = 'pages' | 'samples' | 'faults' | 'accesses';
const TABLE_LABELS: Record<TableMetric, string> = { pages: 'pages seen', samples: 'samples', faults: 'first touches', accesses: 'accesses' };

/** Memory: an address-space heatmap, the regions table and the selected region's details. */
export function MemoryView({ summary, regions }: { summary: TraceSummary; regions: RegionMeta[] }) {
  const { state, navigate } = useTraceContext();
  const noAccess = summary.totals.accessSamples === 0;
  const nodeIds = summary.nodes.map((n) => n.id);
  const ref = useRef<HTMLDivElement>(null);
  const width = Math.max(360, useWidth(ref));
  const height = 380;
  const res = heatmapResolution(width, height);
  const heat = noAccess && state.heat === 'accesses' ? 'samples' : state.heat;
  const grid = useTraceQuery({ kind: 'heatmap', range: state.range, pages: state.pages, rows: res.rows, cols: res.cols, mode: heat });
  const table = useTraceQuery({ kind: 'regions', range: state.range });
  const rows = useMemo(() => (table.data ? regionRows(regions, table.data) : []), [regions, table.data]);
  const [metric, setMetric] = useState<TableMetric>('samples');
  const names = useMemo(() => regions.map((r) => regionName(r)), [regions]);
  const modes: HeatmapMode[] = noAccess ? ['node', 'samples', 'faults'] : ['node', 'samples', 'faults', 'accesses'];
  const tableMetrics: TableMetric[] = noAccess ? ['pages', 'samples', 'faults'] : ['pages', 'samples', 'faults', 'accesses'];
  const selected = state.region !== null && state.region < regions.length ? state.region : null;
  // A decision selected in the Decisions view: its pages are marked on the heatmap.
  const decisionRequest = state.dec ? engineRequest(null, state.estimate, state.range, state.base, state.win, state.rates) : null;
  const decisions = useDecisions(decisionRequest);
  const marks = useDecisionPages(decisionRequest, state.dec);
  const decision = decisions.status === 'done' && 'decisions' in decisions.outcome ? (decisions.outcome.decisions.find((d) => d.key === state.dec) ?? null) : null;

  return (
    <div className="memory-view" ref={ref}>
      <section className="panel" aria-labelledby="heatmap-heading" id="heatmap">
        <div className="heatmap-head">
          <h2 id="heatmap-heading">Address space over time</h2>
          <fieldset className="segmented segmented--small">
            <legend>Heatmap colour</legend>
            {modes.map((m) => (
              <label key={m}>
                <input type="radio" name="heat-mode" value={m} checked={heat === m} onChange={() => navigate({ heat: m })} data-testid={`heat-${m}`} />
                {HEAT_LABELS[m]}
              </label>
            ))}
          </fieldset>
          {heat === 'node' && (
            <div data-export-legend-for="heatmap">
              <NodeLegend nodeIds={nodeIds} includeUnknown />
            </div>
          )}
        </div>
        {state.dec && <DecisionBanner decision={decision} decisionKey={state.dec} loading={decisions.status === 'running'} marks={marks} regions={regions} />}
        {grid.data ? (
          <AddressHeatmap
            grid={grid.data}
            nodeIds={nodeIds}
            marks={state.dec ? marks : null}
            onSelect={(cell) => cell.region >= 0 && cell.region < regions.length && navigate({ region: cell.region })}
            onZoom={(pages) => navigate({ pages })}
            regionName={(r) => names[r] ?? `region ${r}`}
            width={width}
            height={height}
          />
        ) : (
          <p className="ns-muted">{grid.status === 'error' ? grid.message : 'Binning the address space…'}</p>
        )}
        <p className="ns-muted hint" data-export-legend-for="heatmap">
          Each row is a band of pages in address order (gaps between mappings take no room; lines mark region boundaries); each column a slice of
          time. Colour: {heat === 'node' ? 'the node of the cpus that made most of the samples, stronger where there are more' : `${HEAT_LABELS[heat]} per cell (log scale)`}.
          {noAccess ? ' Accesses are not sampled in this trace.' : ''}
        </p>
        {grid.data && grid.data.noAddress > 0 && (
          <p className="ns-muted hint">{formatCount(grid.data.noAddress, 'sample')} in this range have no address and are not drawn.</p>
        )}
      </section>

      <section className="panel" aria-labelledby="regions-heading" id="regions">
        <h2 id="regions-heading">
          Regions <span className="count">({formatCount(regions.length, 'region')})</span>
        </h2>
        <p className="ns-muted hint">
          Mappings from /proc/PID/maps. {summary.labels.pagesSource === 'scan' ? 'Pages (every resident page, from the placement scan)' : 'Pages seen (by samples only: this trace has no placement scan)'} are counted by their last known node; samples, first touches and accesses are those in the
          {state.range ? ` selected range (${formatDurationUs(state.range.fromUs)} – ${formatDurationUs(state.range.toUs)})` : ' whole trace'}, by the
          node of the page. Select a region for its threads and sharing pattern.
        </p>
        <fieldset className="segmented">
          <legend>Per-node columns</legend>
          {tableMetrics.map((m) => (
            <label key={m}>
              <input type="radio" name="region-metric" value={m} checked={metric === m} onChange={() => setMetric(m)} />
              {TABLE_LABELS[m]} per node
            </label>
          ))}
        </fieldset>
        <VirtualTable
          testId="regions-table"
          rows={rows}
          columns={11 + slotLabels(nodeIds).length}
          row={(r) => <RegionTableRow key={r.index} row={r} metric={metric} noAccess={noAccess} selected={selected === r.index} onSelect={() => navigate({ region: r.index })} />}
          head={
            <thead>
              <tr>
                <th scope="col">region</th>
                <th scope="col" className="text">kind</th>
                <th scope="col" className="text">path</th>
                <th scope="col" className="text">policy</th>
                <th scope="col" className="text">allocation site</th>
                <th scope="col">start</th>
                <th scope="col">size</th>
                <th scope="col">{summary.labels.pagesSource === 'scan' ? 'pages' : 'pages seen'}</th>
                <th scope="col">samples</th>
                <th scope="col">first touches</th>
                <th scope="col">accesses</th>
                {slotLabels(nodeIds).map((l) => (
                  <th scope="col" key={l}>
                    {TABLE_LABELS[metric]}, {l}
                  </th>
                ))}
              </tr>
            </thead>
          }
        />
        {table.data && (table.data.outsideRegions > 0 || table.data.noAddress > 0) && (
          <p className="ns-muted hint" data-testid="regions-outside">
            Not in the table: {formatCount(table.data.outsideRegions, 'sample')} on pages outside any listed region, {formatCount(table.data.noAddress, 'sample')} without an address.
          </p>
        )}
      </section>
      {selected !== null && <RegionDetailPanel summary={summary} meta={regions[selected]!} onClose={() => navigate({ region: null })} />}
    </div>
  );
}

function RegionTableRow({ row: r, metric, noAccess, selected, onSelect }: { row: RegionRow; metric: TableMetric; noAccess: boolean; selected: boolean; onSelect: () => void }) {
  return (
    <tr data-testid={`region-row-${r.index}`} className={selected ? 'selected' : undefined} aria-selected={selected}>
      <th scope="row">
        <button type="button" className="link-button" onClick={onSelect} aria-pressed={selected} data-testid={`region-select-${r.index}`}>
          #{r.index}
        </button>
      </th>
      <td className="text">{r.kind}</td>
      <td className="text region-path">{r.path ?? <span className="ns-muted">(anonymous)</span>}</td>
      <td className="text">{r.policy}</td>
      <td className="text region-site" data-testid={`region-${r.index}-site`}>
        {r.allocSite ?? <span className="ns-muted">–</span>}
      </td>
      <td>
        <code>0x{r.start.toString(16)}</code>
      </td>
      <td>{formatBytes(r.end - r.start)}</td>
      <td data-testid={`region-${r.index}-pages`} data-value={r.pages}>
        {formatCount(r.pages)}
      </td>
      <td data-testid={`region-${r.index}-samples`} data-value={r.samples}>
        {formatCount(r.samples)}
      </td>
      <td data-testid={`region-${r.index}-faults`} data-value={r.faults}>
        {formatCount(r.faults)}
      </td>
      <td data-testid={`region-${r.index}-accesses`} data-value={r.accesses}>
        {noAccess ? '–' : formatCount(r.accesses)}
      </td>
      {r.perNode[metric].map((v, s) => (
        <td key={s} data-value={v}>
          {metric === 'accesses' && noAccess ? '–' : formatCount(v)}
        </td>
      ))}
    </tr>
  );
}

function RegionDetailPanel({ summary, meta, onClose }: { summary: TraceSummary; meta: RegionMeta; onClose: () => void }) {
  const { state } = useTraceContext();
  const detail = useTraceQuery({ kind: 'region', region: meta.index, range: state.range });
  const nodeIds = summary.nodes.map((n) => n.id);
  const labels = slotLabels(nodeIds);
  const d = detail.data;
  const threads = summary.threads;
  const touching = useMemo(() => {
    if (!d) return [];
    const S = d.slots;
    return threads.filter((t) => {
      for (let s = 0; s < S; s++) if (d.threadNodes.samples[t.index * S + s]! > 0) return true;
      return false;
    });
  }, [d, threads]);
  const matrix = useMemo(() => {
    if (!d) return new Float64Array(0);
    const S = d.slots;
    const out = new Float64Array(touching.length * S);
    touching.forEach((t, r) => out.set(d.threadNodes.samples.subarray(t.index * S, t.index * S + S), r * S));
    return out;
  }, [d, touching]);
  const owners = useMemo(() => {
    if (!d) return [];
    const out: Array<{ thread: number; pages: number }> = [];
    d.firstTouchPages.forEach((pages, t) => pages > 0 && out.push({ thread: t, pages }));
    return out.sort((a, b) => b.pages - a.pages);
  }, [d]);
  const pattern = !d
    ? ''
    : d.threadsTouching === 0
      ? 'not touched in this range'
      : d.threadsTouching === 1
        ? `private to one thread, on ${formatCount(d.nodesTouched, 'node')}`
        : `shared by ${formatCount(d.threadsTouching, 'thread')}, on ${formatCount(d.nodesTouched, 'node')}`;

  return (
    <section className="panel region-detail" aria-labelledby="region-detail-heading" id="region-detail" data-testid="region-detail" data-region={meta.index}>
      <h2 id="region-detail-heading">
        Region #{meta.index}: {regionName(meta)}{' '}
        <button type="button" className="link-button" onClick={onClose}>
          close
        </button>
      </h2>
      <dl className="facts">
        <div>
          <dt>address</dt>
          <dd>
            <code>
              0x{meta.start.toString(16)}–0x{meta.end.toString(16)}
            </code>
          </dd>
        </div>
        <div>
          <dt>size</dt>
          <dd>{formatBytes(meta.end - meta.start)}</dd>
        </div>
        <div>
          <dt>kind</dt>
          <dd>{meta.kind}</dd>
        </div>
        <div>
          <dt>policy</dt>
          <dd>{meta.policy}</dd>
        </div>
        <div>
          <dt>allocation site</dt>
          <dd data-testid="region-detail-site">{meta.allocSite ?? <span className="ns-muted">unknown</span>}</dd>
        </div>
        <div>
          <dt>pages seen</dt>
          <dd data-testid="region-detail-pages" data-value={d?.pages ?? ''}>
            {d ? formatCount(d.pages) : '…'}
          </dd>
        </div>
        <div>
          <dt>sharing</dt>
          <dd data-testid="region-detail-pattern" data-threads={d?.threadsTouching ?? ''}>
            {pattern || '…'}
          </dd>
        </div>
      </dl>
      <h3>First-touch owners</h3>
      {owners.length === 0 ? (
        <p className="ns-muted">No pages of this region were seen.</p>
      ) : (
        <ul className="owners" data-testid="region-owners">
          {owners.slice(0, 12).map((o) => (
            <li key={o.thread} data-thread={o.thread} data-value={o.pages}>
              {o.thread < threads.length ? `${threads[o.thread]!.name || '(unnamed)'} · tid ${threads[o.thread]!.tid}` : 'unknown thread'}:{' '}
              {formatCount(o.pages, 'page')}
            </li>
          ))}
          {owners.length > 12 && <li className="ns-muted">and {formatCount(owners.length - 12, 'more thread')}</li>}
        </ul>
      )}
      <h3>Sharing pattern: samples by thread and node of the page</h3>
      {touching.length === 0 ? (
        <p className="ns-muted">No thread touched this region in the {state.range ? 'selected range' : 'trace'}.</p>
      ) : (
        <HeatTable
          caption={`Samples on region #${meta.index} per thread (rows) and node of the page (columns)`}
          rowHeader="thread"
          rowLabels={touching.map((t) => `${t.name || '(unnamed)'} · tid ${t.tid}`)}
          rowKeys={touching.map((t) => t.index)}
          columnLabels={labels}
          columnKeys={[...nodeIds.map(String), 'unknown']}
          values={matrix}
          testId="region-sharing"
        />
      )}
      <p className="ns-muted hint">{nodeLabel(-1)} counts samples whose page's node is not known.</p>
      <RegionObjects summary={summary} region={meta.index} />
      {/* After the region's own numbers: the engine's replay may take a while on a large trace. */}
      {d && <RegionDecisions region={meta.index} />}
    </section>
  );
}

/** The Memory view's note about the decision selected in the Decisions view, whose pages the heatmap marks. */
function DecisionBanner({
  decision,
  decisionKey,
  loading,
  marks,
  regions,
}: {
  decision: DecisionView | null;
  decisionKey: string;
  loading: boolean;
  marks: Int32Array | null;
  regions: RegionMeta[];
}) {
  const { navigate } = useTraceContext();
  const clear = (
    <button type="button" className="link-button" onClick={() => navigate({ dec: null })} data-testid="memory-decision-clear">
      clear
    </button>
  );
  if (!decision) {
    return (
      <p className="notice" data-testid="memory-decision" data-key={decisionKey}>
        {loading ? `Finding decision ${decisionKey}…` : `Decision ${decisionKey} is not in the current analysis.`} {clear}
      </p>
    );
  }
  return (
    <div className="notice notice--decision" data-testid="memory-decision" data-key={decision.key} data-pages={marks?.length ?? ''}>
      <strong>
        {policyLabel(decision.policy)}, window {decision.window} ({formatDurationUs(decision.fromUs)} – {formatDurationUs(decision.toUs)}), {decision.kind}:
      </strong>{' '}
      {decision.explanation}{' '}
      {decision.scope === 'pages' ? (
        <span className="ns-muted">
          Its {formatCount(marks?.length ?? decision.pages ?? 0, 'page')} are marked on the heatmap (bar at the left edge, outlined rows); regions{' '}
          {decision.regions
            .slice(0, 5)
            .map((r) => `#${r.region} ${regions[r.region] ? regionName(regions[r.region]!) : ''} (${formatCount(r.pages, 'page')})`)
            .join(', ')}
          {decision.regions.length > 5 ? `, and ${formatCount(decision.regions.length - 5, 'more')}` : ''}.
        </span>
      ) : (
        <span className="ns-muted">It names no pages to mark.</span>
      )}{' '}
      <button type="button" className="link-button" onClick={() => navigate({ view: 'decisions' })}>
        all decisions
      </button>{' '}
      {clear}
    </div>
  );
}

/** Every policy decision about a region's pages, with the reason (from the Decisions view's analysis). */
function RegionDecisions({ region }: { region: number }) {
  const { state, navigate } = useTraceContext();
  const decisions = useDecisions(engineRequest(null, state.estimate, state.range, state.base, state.win, state.rates));
  const rows = useMemo(
    () => (decisions.status === 'done' && 'decisions' in decisions.outcome ? regionDecisions(decisions.outcome.decisions, region) : null),
    [decisions, region],
  );
  let body;
  if (decisions.status === 'running') body = decisions.analysis ? <Progress state={decisions.analysis} /> : <p className="ns-muted">Listing the decisions…</p>;
  else if ('error' in decisions.outcome && decisions.outcome.error.code === 'no-access-data') {
    body = (
      <p className="ns-muted" data-testid="region-decisions-none">
        No policy decisions: this recording has no memory-access samples, so the engine does not replay it (the Traffic view offers a
        placement-only estimate).
      </p>
    );
  } else if ('error' in decisions.outcome) body = <EngineRefusal error={decisions.outcome.error} onEstimate={() => navigate({ estimate: true })} />;
  else if (rows!.length === 0) body = <p className="ns-muted" data-testid="region-decisions-none">No policy made a decision about this region’s pages{state.range ? ' in the selected range' : ''}.</p>;
  else {
    body = (
      <div className="table-scroll">
        <table className="data" data-testid="region-decisions" data-value={rows!.length}>
          <thead>
            <tr>
              <th scope="col">window</th>
              <th scope="col" className="text">policy</th>
              <th scope="col" className="text">kind</th>
              <th scope="col">pages here</th>
              <th scope="col" className="text">reason</th>
            </tr>
          </thead>
          <tbody>
            {rows!.slice(0, 100).map(({ decision: d, pages }) => (
              <tr key={d.key} data-testid="region-decision" data-key={d.key} data-policy={d.policy} data-pages={pages ?? ''}>
                <th scope="row">
                  <button type="button" className="link-button" onClick={() => navigate({ view: 'decisions', dec: d.key })} title="Show in the Decisions view">
                    {d.window}
                  </button>{' '}
                  <span className="ns-muted small">{formatDurationUs(d.fromUs)}</span>
                </th>
                <td className="text">{policyLabel(d.policy)}</td>
                <td className="text">{d.kind}</td>
                <td>{pages === null ? 'all' : formatCount(pages)}</td>
                <td className="text decision-explanation">{d.explanation}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {rows!.length > 100 && <p className="ns-muted small">and {formatCount(rows!.length - 100, 'more decision')} (see the Decisions view)</p>}
      </div>
    );
  }
  return (
    <>
      <h3>Policy decisions about this region</h3>
      <p className="ns-muted hint">
        What each replayed policy decided about this region’s pages, with its reason ({state.range ? 'the selected time range' : 'the whole trace'}); “all” marks
        decisions about every page.
      </p>
      {body}
    </>
  );
}
