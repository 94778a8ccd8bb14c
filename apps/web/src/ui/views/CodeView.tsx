import { useMemo, useRef, useState } from 'react';
import { FlameGraph, formatCount, formatDurationUs, formatPercent, nodeLabel, threadLabel } from '@numascope/viz';
import type { C2cLine, C2cTable, CallTree, CallTreeNode, FunctionRow, FunctionTable, TraceSummary } from '@numascope/policy-engine';
import { C2C_LINE_LIMIT, type CodeOutcome } from '../../worker/code';
import { useTraceContext } from '../hooks/trace-context';
import { useWorkerCall } from '../hooks/use-decisions';
import { useWidth } from '../hooks/use-width';
import {
  codeRequest,
  defaultExpanded,
  localityPatch,
  localityValue,
  nextSort,
  sortFunctions,
  treeChildren,
  treeRows,
  weightUnit,
} from '../selectors/code';
import type { FunctionSort, FunctionSortKey } from '../selectors/code';
import type { ViewState } from '../url-state';
import { VirtualTable } from './VirtualRows';

/** The `code-locations` capability is unavailable: said plainly, with its reason, in the other UNAVAILABLE badges' words. */
export function CodeUnavailable({ reason, testId = 'code-none' }: { reason: string; testId?: string }) {
  return (
    <p className="notice" data-testid={testId}>
      <span className="ns-badge" data-status="unavailable">
        <span className="ns-badge__body">
          <span className="ns-badge__status">unavailable</span>
        </span>
      </span>{' '}
      <strong>No code locations in this trace</strong> (code locations: {reason}). The Code view needs page-fault or access samples with user call
      stacks: a recording made by <code>numascope record</code> (trace format 3, call stacks on by default, <code>--call-stack-depth</code>).
    </p>
  );
}

/**
 * Code: which functions made the sampled accesses and first-touched the pages (the engine's
 * code attribution, computed in the Worker): a sortable function table, the call tree as a flame
 * graph and as an expandable table, all under one set of filters kept in the link (locality, op,
 * data object, thread, the timeline's range). A function's row lists the data objects it touched,
 * each linking to the object in the Memory view's Objects panel.
 */
export function CodeView({ summary }: { summary: TraceSummary }) {
  const { state } = useTraceContext();
  const request = useMemo(() => codeRequest(state), [state]);
  const key = JSON.stringify(request);
  const answer = useWorkerCall<CodeOutcome>(key, (client, traceId) => (client.code ? client.code(traceId, request) : null));
  const [last, setLast] = useState<CodeOutcome | null>(null);
  const outcome = answer.status === 'ready' ? answer.data : last;
  if (answer.status === 'ready' && answer.data !== last) setLast(answer.data);

  if (answer.status === 'error') return <p className="notice notice--error">{answer.message}</p>;
  if (!outcome) return <p className="ns-muted" data-testid="code-loading">Attributing the samples to code…</p>;
  if (!outcome.available) {
    return (
      <section className="panel code-view" aria-labelledby="code-heading" data-testid="code-view" data-available="false">
        <h2 id="code-heading">Code</h2>
        <CodeUnavailable reason={outcome.reason} />
        {outcome.c2c && <C2cPanel table={outcome.c2c} />}
      </section>
    );
  }
  return (
    <div className="code-view" data-testid="code-view" data-available="true" data-loading={answer.status === 'loading' ? 'true' : 'false'}>
      <CodeFilters summary={summary} objects={outcome.objects} />
      <FunctionsPanel table={outcome.table} />
      <FlamePanel tree={outcome.tree} unit={weightUnit(state.codeOp, outcome.table.totals)} />
      <CallTreePanel tree={outcome.tree} />
      {outcome.c2c && <C2cPanel table={outcome.c2c} />}
    </div>
  );
}

function CodeFilters({ summary, objects }: { summary: TraceSummary; objects: Extract<CodeOutcome, { available: true }>['objects'] }) {
  const { state, navigate } = useTraceContext();
  const set = (patch: Partial<ViewState>) => navigate(patch, { replace: true });
  const objectOptions = objects.map((o) => o.object);
  if (state.codeObject && !objectOptions.includes(state.codeObject)) objectOptions.unshift(state.codeObject);
  return (
    <section className="panel" aria-labelledby="code-filters-heading">
      <h2 id="code-filters-heading">Code: functions, call tree and the data they touched</h2>
      <p className="ns-muted hint">
        Each sample goes to {state.codeBy === 'self' ? 'the sampled instruction (its own frame)' : 'its code site: the innermost frame outside allocators and language runtimes (a memset in libc counts for its caller)'}
        . Weights are the samples’ weights: accesses for loads and stores, faults for first touches (an adaptive sampler’s sample stands for many).
        Every filter applies to the table, the flame graph and the call tree; {state.range ? `time: ${formatDurationUs(state.range.fromUs)} – ${formatDurationUs(state.range.toUs)} (the timeline’s selection)` : 'time: the whole trace (select a range on the timeline)'}.
      </p>
      <div className="decision-filters code-filters">
        <label>
          Attribute to{' '}
          <select value={state.codeBy ?? 'site'} data-testid="code-by" onChange={(e) => set({ codeBy: e.target.value === 'self' ? 'self' : null })}>
            <option value="site">code site</option>
            <option value="self">sampled instruction</option>
          </select>
        </label>
        <label>
          Memory{' '}
          <select value={localityValue(state)} data-testid="code-locality" onChange={(e) => set(localityPatch(e.target.value))}>
            <option value="all">all</option>
            <option value="local">local (the cpu’s node)</option>
            <option value="remote">remote (another node)</option>
            {summary.nodes.map((n) => (
              <option key={n.id} value={`n${n.id}`}>
                on {nodeLabel(n.id)}
              </option>
            ))}
          </select>
        </label>
        <label>
          Op{' '}
          <select value={state.codeOp ?? ''} data-testid="code-op" onChange={(e) => set({ codeOp: e.target.value === 'load' || e.target.value === 'store' || e.target.value === 'fault' ? e.target.value : null })}>
            <option value="">all</option>
            <option value="load">loads</option>
            <option value="store">stores</option>
            <option value="fault">first touches</option>
          </select>
        </label>
        <label>
          Data object{' '}
          <select value={state.codeObject ?? ''} data-testid="code-object" onChange={(e) => set({ codeObject: e.target.value || null })}>
            <option value="">all{objects.length === 0 ? ' (no allocation sites in this trace)' : ''}</option>
            {objectOptions.map((o) => (
              <option key={o} value={o}>
                {o}
              </option>
            ))}
          </select>
        </label>
        <label>
          Thread{' '}
          <select value={state.codeThread ?? ''} data-testid="code-thread" onChange={(e) => set({ codeThread: e.target.value === '' ? null : Number(e.target.value) })}>
            <option value="">all</option>
            {summary.threads.map((t) => (
              <option key={t.index} value={t.index}>
                {threadLabel(t)}
              </option>
            ))}
          </select>
        </label>
      </div>
    </section>
  );
}

const COLUMNS: Array<{ key: FunctionSortKey; label: string; text?: boolean }> = [
  { key: 'function', label: 'function', text: true },
  { key: 'location', label: 'file:line', text: true },
  { key: 'accesses', label: 'accesses' },
  { key: 'remote', label: 'remote share' },
  { key: 'latency', label: 'mean latency' },
  { key: 'firstTouches', label: 'first touches (est.) by node' },
  { key: 'pages', label: 'pages sampled' },
  { key: 'objects', label: 'objects', text: true },
];

function firstTouchText(r: FunctionRow): string {
  if (r.firstTouchesByNode.length === 0) return '–';
  const parts = r.firstTouchesByNode.map((p) => `${p.node < 0 ? 'unknown' : `node ${p.node}`}: ${formatCount(p.firstTouches)}`);
  return r.firstTouchesByNode.length === 1 ? `${formatCount(r.firstTouches)} (${parts[0]!.split(':')[0]})` : `${formatCount(r.firstTouches)} (${parts.join(', ')})`;
}

function latencyText(r: FunctionRow): string {
  if (r.meanLatencyNs !== null) return `${r.meanLatencyNs.toFixed(0)} ns`;
  if (r.meanLatencyCycles !== null) return `${r.meanLatencyCycles.toFixed(0)} cycles`;
  return '–';
}

function FunctionsPanel({ table }: { table: FunctionTable }) {
  const { state, navigate } = useTraceContext();
  const [sort, setSort] = useState<FunctionSort | null>(null);
  const rows = useMemo(() => sortFunctions(table.rows, sort), [table.rows, sort]);
  const selected = state.codeFn !== null ? (table.rows.find((r) => r.function === state.codeFn) ?? null) : null;
  const t = table.totals;
  return (
    <section className="panel" aria-labelledby="code-functions-heading" id="code-functions">
      <h2 id="code-functions-heading">
        Functions <span className="count">({formatCount(table.functionCount, 'function')})</span>
      </h2>
      <p className="ns-muted hint" data-testid="code-totals" data-samples={t.samples} data-with-stack={t.withStack}>
        {formatCount(t.withStack)} of {formatCount(t.samples, 'sample')} under these filters have a call stack: {formatCount(t.accesses, 'access', 'accesses')} and{' '}
        {formatCount(t.firstTouches, 'first touch', 'first touches')} (weighted)
        {t.withoutStack.accesses + t.withoutStack.firstTouches > 0
          ? `; without a stack, attributed to no function: ${formatCount(t.withoutStack.accesses)} accesses, ${formatCount(t.withoutStack.firstTouches)} first touches`
          : ''}
        . First touches (est.) are the weighted fault samples by the node of the page; pages sampled the distinct pages they saw. Mean latency where the PMU
        measured it{table.clock.ghz !== null ? ` (cycles at ${table.clock.ghz} GHz)` : ''}. Select a function for the data it touched.
      </p>
      {table.rows.length === 0 ? (
        <p className="ns-muted" data-testid="code-functions-none">
          No sample with a call stack passes these filters.
        </p>
      ) : (
        <div data-export="code-functions">
          <VirtualTable
            testId="code-functions"
            rows={rows}
            columns={COLUMNS.length}
            head={
              <thead>
                <tr>
                  {COLUMNS.map((c) => (
                    <th
                      key={c.key}
                      scope="col"
                      className={c.text ? 'text' : undefined}
                      aria-sort={sort?.key === c.key ? (sort.descending ? 'descending' : 'ascending') : 'none'}
                    >
                      <button type="button" className="link-button sort-button" data-testid={`code-sort-${c.key}`} onClick={() => setSort((s) => nextSort(s, c.key))}>
                        {c.label}
                        {sort?.key === c.key ? (sort.descending ? ' ▾' : ' ▴') : ''}
                      </button>
                    </th>
                  ))}
                </tr>
              </thead>
            }
            row={(r) => (
              <tr
                key={`${r.module ?? ''}\u0000${r.function}`}
                data-testid="code-fn-row"
                data-function={r.function}
                className={selected === r ? 'selected' : undefined}
                aria-selected={selected === r}
              >
                <th scope="row" className="text code-fn-name">
                  <button
                    type="button"
                    className="link-button"
                    aria-pressed={selected === r}
                    data-testid="code-fn-select"
                    title={r.module ?? undefined}
                    onClick={() => navigate({ codeFn: selected === r ? null : r.function })}
                  >
                    <code>{r.function}</code>
                  </button>
                  {r.runtime && <span className="ns-muted small"> (runtime)</span>}
                </th>
                <td className="text" data-testid="code-fn-location">
                  {r.location ?? <span className="ns-muted">–</span>}
                </td>
                <td data-value={r.accesses}>{r.accesses > 0 ? formatCount(r.accesses) : '–'}</td>
                <td data-value={r.remoteShare ?? ''}>{r.remoteShare === null ? '–' : formatPercent(r.remoteShare)}</td>
                <td data-value={r.meanLatencyNs ?? ''}>{latencyText(r)}</td>
                <td data-testid="code-fn-first-touches" data-value={r.firstTouches}>
                  {firstTouchText(r)}
                </td>
                <td data-testid="code-fn-pages" data-value={r.pagesSampled}>
                  {r.pagesSampled > 0 ? formatCount(r.pagesSampled) : '–'}
                </td>
                <td className="text code-fn-objects">
                  {r.objects.length === 0 ? <span className="ns-muted">–</span> : `${r.objects[0]!.site}${r.objects.length > 1 ? ` +${r.objects.length - 1}` : ''}`}
                </td>
              </tr>
            )}
          />
        </div>
      )}
      {table.functionCount > table.rows.length && <p className="ns-muted small">and {formatCount(table.functionCount - table.rows.length, 'more function')} with fewer samples</p>}
      {state.codeFn !== null && !selected && (
        <p className="notice" data-testid="code-fn-missing">
          {state.codeFn} has no samples under these filters.{' '}
          <button type="button" className="link-button" onClick={() => navigate({ codeFn: null })}>
            Clear the selection
          </button>
        </p>
      )}
      {selected && <FunctionDetail row={selected} />}
    </section>
  );
}

/** The selected function: the data objects it touched (with counts), each linking to the Objects panel, and its lines. */
function FunctionDetail({ row }: { row: FunctionRow }) {
  const { state, navigate } = useTraceContext();
  return (
    <div className="code-fn-detail" data-testid="code-fn-detail" data-function={row.function}>
      <h3>
        Data touched by <code>{row.function}</code>
        {row.location ? ` (${row.location})` : ''}
      </h3>
      {row.objects.length === 0 ? (
        <p className="ns-muted" data-testid="code-fn-objects-none">
          None of its samples fell in a recorded allocation{state.codeObject ? ' of the filtered object' : ''}.
        </p>
      ) : (
        <div className="table-scroll">
          <table className="data" data-testid="code-fn-objects">
            <thead>
              <tr>
                <th scope="col" className="text">data object (allocation site)</th>
                <th scope="col">samples</th>
                <th scope="col">accesses</th>
                <th scope="col">first touches</th>
                <th scope="col" className="text">show</th>
              </tr>
            </thead>
            <tbody>
              {row.objects.map((o) => (
                <tr key={o.site} data-testid="code-fn-object" data-site={o.site} data-allocation={o.allocation} data-region={o.region}>
                  <th scope="row" className="text">
                    {o.region >= 0 ? (
                      <button
                        type="button"
                        className="link-button"
                        data-testid="code-fn-object-link"
                        title="Show this object in the Memory view’s Objects panel"
                        onClick={() => navigate({ view: 'memory', region: o.region, obj: o.allocation, pages: null })}
                      >
                        {o.site}
                      </button>
                    ) : (
                      <span title="Its region is not known: it cannot be shown in the Memory view">{o.site}</span>
                    )}
                  </th>
                  <td data-value={o.samples}>{formatCount(o.samples)}</td>
                  <td data-value={o.accesses}>{formatCount(o.accesses)}</td>
                  <td data-value={o.firstTouches}>{formatCount(o.firstTouches)}</td>
                  <td className="text">
                    <button type="button" className="link-button" data-testid="code-fn-object-filter" onClick={() => navigate({ codeObject: o.site })}>
                      filter by it
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {row.lines.length > 0 && (
        <p className="ns-muted small" data-testid="code-fn-lines">
          Lines:{' '}
          {row.lines
            .map((l) => `${l.file ? l.file.slice(l.file.lastIndexOf('/') + 1) : '?'}:${l.line} (${l.accesses > 0 ? `${formatCount(l.accesses)} accesses` : ''}${l.accesses > 0 && l.firstTouches > 0 ? ', ' : ''}${l.firstTouches > 0 ? `${formatCount(l.firstTouches)} first touches` : ''})`)
            .join(' · ')}
        </p>
      )}
      {row.module && <p className="ns-muted small">Module: {row.module}</p>}
    </div>
  );
}

function FlamePanel({ tree, unit }: { tree: CallTree; unit: string }) {
  const ref = useRef<HTMLDivElement>(null);
  const width = Math.max(360, useWidth(ref));
  return (
    <section className="panel" aria-labelledby="code-flame-heading" id="code-flame" ref={ref}>
      <h2 id="code-flame-heading">Flame graph</h2>
      <p className="ns-muted hint" data-export-legend-for="flame-graph">
        The call tree of the sampled stacks, root at the top: each row one call depth, each frame as wide as its total weight ({unit}), callees under their
        caller, heaviest first. Hover for a frame’s numbers; click a frame to zoom into it (click an ancestor above, or Reset zoom, to go back). Keyboard: focus the
        graph, then ↑ caller, ↓ heaviest callee, ←/→ neighbours in the row, Enter zooms, Escape resets.
      </p>
      {tree.totalWeight === 0 ? (
        <p className="ns-muted" data-testid="code-flame-none">
          No sample with a call stack passes these filters.
        </p>
      ) : (
        <FlameGraph nodes={tree.nodes} width={width} unit={unit} testId="flame-graph" />
      )}
      {tree.truncated && (
        <p className="ns-muted hint" data-testid="code-tree-truncated">
          The tree was cut at {formatCount(tree.limit, 'node')}: {formatCount(tree.truncatedWeight)} of the weight stays with the deepest frame drawn.
        </p>
      )}
      {tree.withoutStackWeight > 0 && (
        <p className="ns-muted hint">{formatCount(tree.withoutStackWeight)} of the weight under these filters has no call stack and is not drawn.</p>
      )}
    </section>
  );
}

function CallTreePanel({ tree }: { tree: CallTree }) {
  const children = useMemo(() => treeChildren(tree.nodes), [tree.nodes]);
  const [open, setOpen] = useState<{ nodes: readonly CallTreeNode[]; expanded: Set<number> }>(() => ({ nodes: tree.nodes, expanded: defaultExpanded(tree.nodes, children) }));
  const expanded = open.nodes === tree.nodes ? open.expanded : defaultExpanded(tree.nodes, children);
  const rows = useMemo(() => treeRows(tree.nodes, expanded, children), [tree.nodes, expanded, children]);
  const all = tree.totalWeight;
  const toggle = (n: number) => {
    const next = new Set(expanded);
    if (next.has(n)) next.delete(n);
    else next.add(n);
    setOpen({ nodes: tree.nodes, expanded: next });
  };
  const share = (v: number) => (all > 0 ? formatPercent(v / all) : '–');
  if (tree.totalWeight === 0) return null;
  return (
    <section className="panel" aria-labelledby="code-tree-heading" id="code-tree">
      <h2 id="code-tree-heading">Call tree</h2>
      <p className="ns-muted hint">The same tree as a table: total (the frame and its callees) and self (samples attributed to the frame itself), callers above their callees.</p>
      <div data-export="code-call-tree">
        <VirtualTable
          testId="code-tree"
          rows={rows}
          columns={4}
          head={
            <thead>
              <tr>
                <th scope="col">total</th>
                <th scope="col">self</th>
                <th scope="col" className="text">function</th>
                <th scope="col" className="text">file:line</th>
              </tr>
            </thead>
          }
          row={(r) => {
            const n = tree.nodes[r.node]!;
            return (
              <tr key={r.node} data-testid="code-tree-row" data-node={r.node} data-name={n.name} data-depth={r.depth} data-total={n.total} data-self={n.self}>
                <td data-value={n.total}>
                  {formatCount(n.total)} <span className="ns-muted small">{share(n.total)}</span>
                </td>
                <td data-value={n.self}>
                  {formatCount(n.self)} <span className="ns-muted small">{share(n.self)}</span>
                </td>
                <th scope="row" className="text code-tree__name" style={{ paddingLeft: `${0.5 + r.depth * 1.1}em` }}>
                  {r.hasChildren ? (
                    <button
                      type="button"
                      className="link-button code-tree__toggle"
                      aria-expanded={r.expanded}
                      aria-label={`${r.expanded ? 'Collapse' : 'Expand'} ${n.name}`}
                      data-testid="code-tree-toggle"
                      onClick={() => toggle(r.node)}
                    >
                      {r.expanded ? '▾' : '▸'}
                    </button>
                  ) : (
                    <span className="code-tree__toggle" aria-hidden="true">
                      {' '}
                    </span>
                  )}{' '}
                  <code>{n.name}</code>
                </th>
                <td className="text">{n.location ?? <span className="ns-muted">–</span>}</td>
              </tr>
            );
          }}
        />
      </div>
    </section>
  );
}

/**
 * perf c2c's Shared Data Cache Line Table (engine code/c2c.ts): the cache lines with a HITM load,
 * most HITMs first, counted as `perf c2c report` counts them (records, not weights), over the whole
 * recording (not under the filters above, as perf's); a line opens into its offsets and the code
 * of their loads and stores. Only for traces with IBS/PEBS samples.
 */
function C2cPanel({ table }: { table: C2cTable }) {
  const [open, setOpen] = useState<string | null>(null);
  const t = table.totals;
  return (
    <section className="panel" aria-labelledby="code-c2c-heading" id="code-c2c" data-testid="code-c2c" data-available={table.available ? 'true' : 'false'}>
      <h2 id="code-c2c-heading">
        Shared cache lines <span className="count">(perf c2c{table.available ? `: ${formatCount(t.sharedLines, 'line')}` : ''})</span>
      </h2>
      {!table.available ? (
        <p className="ns-muted" data-testid="code-c2c-none">
          Not available: {table.reason}.
        </p>
      ) : (
        <>
          <p className="ns-muted hint" data-testid="code-c2c-totals" data-records={t.records} data-lines={t.sharedLines}>
            The cache lines with at least one HITM load (a load that found the line modified in another core&apos;s cache), as <code>perf c2c report</code>{' '}
            counts them: {formatCount(t.records, 'IBS/PEBS load or store', 'IBS/PEBS loads and stores')} with an address ({formatCount(t.localHitm)} local and{' '}
            {formatCount(t.remoteHitm)} remote HITM), over the whole recording, not under the filters above.
            {t.uncounted > 0 ? ` ${formatCount(t.uncounted, 'load')} in none of perf's columns (e.g. a remote-cache load whose snoop result was neither HIT nor HITM) ${t.uncounted === 1 ? 'is' : 'are'} in no line's records.` : ''}
            {t.sharedLines > table.lines.length ? ` The ${formatCount(C2C_LINE_LIMIT)} with the most HITMs are listed.` : ''}
          </p>
          {table.lines.length === 0 ? (
            <p data-testid="code-c2c-empty">No cache line had a HITM load: no contended line in this recording.</p>
          ) : (
            <div className="table-scroll">
              <table className="data" data-testid="code-c2c-table">
                <thead>
                  <tr>
                    <th scope="col">#</th>
                    <th scope="col" className="text">
                      line address
                    </th>
                    <th scope="col">node</th>
                    <th scope="col">HITM (local / remote)</th>
                    <th scope="col">records</th>
                    <th scope="col">loads</th>
                    <th scope="col">stores (L1 hit / miss / N/A)</th>
                    <th scope="col" className="text">
                      loads by level
                    </th>
                    <th scope="col">threads</th>
                  </tr>
                </thead>
                <tbody>
                  {table.lines.map((l, i) => (
                    <C2cRow key={l.address} line={l} index={i} open={open === l.address} toggle={() => setOpen((o) => (o === l.address ? null : l.address))} />
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </section>
  );
}

function levelText(l: C2cLine): string {
  const parts: Array<[string, number]> = [
    ['FB', l.loadFB],
    ['L1', l.loadL1],
    ['L2', l.loadL2],
    ['LLC', l.llcHit],
    ['remote hit', l.remoteHit],
    ['local DRAM', l.localDram],
    ['remote DRAM', l.remoteDram],
  ];
  const shown = parts.filter(([, v]) => v > 0).map(([k, v]) => `${k} ${formatCount(v)}`);
  return shown.length > 0 ? shown.join(', ') : '–';
}

function C2cRow({ line: l, index, open, toggle }: { line: C2cLine; index: number; open: boolean; toggle: () => void }) {
  return (
    <>
      <tr data-testid="code-c2c-line" data-address={l.addressHex} data-records={l.records} data-hitm={l.totalHitm}>
        <td>{index}</td>
        <th scope="row" className="text">
          <button type="button" className="link-button c2c-address" aria-expanded={open} data-testid="code-c2c-open" onClick={toggle}>
            {open ? '▾' : '▸'} {l.addressHex}
          </button>
        </th>
        <td>{l.node < 0 ? '?' : l.node}</td>
        <td data-testid="code-c2c-hitm">
          {formatCount(l.totalHitm)} ({formatCount(l.localHitm)} / {formatCount(l.remoteHitm)})
        </td>
        <td data-testid="code-c2c-records">{formatCount(l.records)}</td>
        <td>{formatCount(l.loads)}</td>
        <td>
          {formatCount(l.stores)} ({formatCount(l.storeL1Hit)} / {formatCount(l.storeL1Miss)} / {formatCount(l.storeNA)})
        </td>
        <td className="text">{levelText(l)}</td>
        <td>{formatCount(l.threads.length)}</td>
      </tr>
      {open && (
        <tr data-testid="code-c2c-detail">
          <td />
          <td colSpan={8} className="text">
            <table className="data c2c-offsets">
              <thead>
                <tr>
                  <th scope="col">offset</th>
                  <th scope="col">records</th>
                  <th scope="col">loads / stores</th>
                  <th scope="col">HITM (local / remote)</th>
                  <th scope="col">threads</th>
                  <th scope="col" className="text">
                    code (records)
                  </th>
                </tr>
              </thead>
              <tbody>
                {l.offsets.map((o) => (
                  <tr key={o.offset} data-testid="code-c2c-offset" data-offset={o.offset}>
                    <td className="c2c-address">0x{o.offset.toString(16)}</td>
                    <td>{formatCount(o.records)}</td>
                    <td>
                      {formatCount(o.loads)} / {formatCount(o.stores)}
                    </td>
                    <td>
                      {formatCount(o.localHitm)} / {formatCount(o.remoteHitm)}
                    </td>
                    <td>{formatCount(o.threads.length)}</td>
                    <td className="text" data-testid="code-c2c-code">
                      {o.code.length === 0 ? '–' : o.code.map((c) => `${c.code} (${formatCount(c.records)})`).join(', ')}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </td>
        </tr>
      )}
    </>
  );
}
