/** Compare: 2 to MAX_COLUMNS columns (a policy, the recording re-targeted onto a machine preset, or a second recording), with deltas against the first. */
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { listPresets } from '@numascope/policy-engine';
import type { TraceSummary } from '@numascope/policy-engine';
import type { RegionMeta } from '@numascope/policy-engine';
import type { AnalyzeRequest } from '../../worker/analysis';
import { ManualEditor } from './ManualEditor';
import { compareRecordings, formatSpeedup, formatTimeUs, speedupPerWork } from '@numascope/policy-engine';
import { TrafficGraph, formatCount, formatPercent } from '@numascope/viz';
import type { TrafficScales } from '@numascope/viz';
import { useTraceContext } from '../hooks/trace-context';
import { COLUMN_CAP_REASON, DECOMPOSITION_ROWS, HEADLINE_LABELS, headlineView, MAX_COLUMNS, MIN_COLUMNS, columnSpec, decompositionRows, deltaRows, orderBySpeedup, parseColumns, speedupAgainst, whyLine } from '../selectors/compare';
import type { ColumnSpec, DeltaRow, Headline } from '../selectors/compare';
import { useAnalysis } from '../hooks/use-analysis';
import { ON_REQUEST_POLICY_IDS, POLICY_IDS, TIERED_POLICY_IDS, policyLabel } from '@numascope/policy-engine';
import type { AnalysisView, PolicyView } from '../../worker/analysis';
import { Badge, EngineRange, EngineRefusal, EstimateBanner, MetricLabel, PredictionBasis, Progress } from './EngineParts';
import { WeightsPanel } from './WeightsPanel';
import { METRIC_INFO, betterText } from '../selectors/metric-info';
import type { MetricKey } from '../selectors/metric-info';
import { costText, policyMetrics, predictionBadge, transientText, trafficInput } from '../selectors/policy';
import { weightedPolicies } from '../selectors/weights';
import { MANUAL_REASON, columnRequest } from '../selectors/compare';

/**
 * A row of the table against the baseline column. The speedup is a ratio and is shown as one
 * (never as a difference of two speedups); predicted times are shown with their difference.
 */
function formatDelta(r: DeltaRow): string {
  const sign = r.delta > 0 ? '+' : r.delta < 0 ? '−' : '±';
  const abs = Math.abs(r.delta);
  switch (r.metric.unit) {
    case 'ratio':
      return `${sign}${(abs * 100).toFixed(1)} pts`;
    case 'pct':
      return `${sign}${abs.toFixed(1)} pts`;
    case 'ns':
      return `${sign}${abs.toFixed(0)} ns`;
    case 'x':
      return formatSpeedup(r.value);
    case 'us':
      return `${formatTimeUs(r.value)} vs ${formatTimeUs(r.base)} (${sign}${formatTimeUs(abs)})`;
    case 'pages':
      return `${sign}${formatCount(abs)}`;
  }
}

function columnTitle(c: ColumnSpec, names: Map<number, string>): string {
  const rec = c.recording !== null ? ` · ${names.get(c.recording) ?? `recording ${c.recording}`}` : '';
  return `${policyLabel(c.policy)}${c.machine ? ` on ${c.machine}` : ''}${rec}`;
}

export function CompareView({ summary, regions }: { summary: TraceSummary; regions: RegionMeta[] }) {
  const { state, navigate, client } = useTraceContext();
  const columns = parseColumns(state.cmp, state.base ?? 'observed');
  const [names, setNames] = useState(() => new Map<number, string>());
  const [fileError, setFileError] = useState<string | null>(null);
  const setColumns = (cs: ColumnSpec[]) => navigate({ cmp: cs.map(columnSpec) });
  const add = (c: ColumnSpec) => columns.length < MAX_COLUMNS && setColumns([...columns, c]);
  const base = columns[0];
  // One shared scale so marks and arrows compare across columns: the largest MC bandwidth and link capacity of the baseline's machine.
  const baseAnalysis = useAnalysis(base ? columnRequest(base, state, summary, regions) : null, base?.recording ?? null);
  const scales: TrafficScales | undefined =
    baseAnalysis.status === 'done' && 'view' in baseAnalysis.outcome
      ? {
          maxMcLoadBytesPerS: Math.max(...baseAnalysis.outcome.view.policies.flatMap((p) => p.mcLoadBytesPerS), 1),
          maxLinkLoadBytesPerS: Math.max(...baseAnalysis.outcome.view.policies.flatMap((p) => p.linkLoadBytesPerS), 1),
        }
      : undefined;

  async function openFile(file: File) {
    setFileError(null);
    try {
      if (!client?.openExtra) throw new Error('the Worker is not available');
      const r = await client.openExtra(await file.arrayBuffer(), file.name);
      setNames((m) => new Map(m).set(r.recording, r.name));
      add({ policy: base?.policy ?? 'first-touch', machine: null, recording: r.recording });
    } catch (e) {
      setFileError(e instanceof Error ? e.message : String(e));
    }
  }

  // Each column's outcome, reported by the column (its own analysis), for the aligned table.
  const [results, setResults] = useState<Record<string, ColumnResult | null>>({});
  const onResult = useCallback((key: string, r: ColumnResult | null) => {
    setResults((m) => (m[key]?.p === r?.p && m[key]?.b === r?.b ? m : { ...m, [key]: r }));
  }, []);
  const keys = columns.map((c, i) => `${i}:${columnSpec(c)}`);
  const baseView = baseAnalysis.status === 'done' && 'view' in baseAnalysis.outcome ? baseAnalysis.outcome.view : null;

  const full = columns.length >= MAX_COLUMNS;
  const hasManual = columns.some((c) => c.policy === 'manual');
  return (
    <section className="panel engine-view" data-testid="compare-view" data-columns={columns.length}>
      <h2>Compare</h2>
      <p className="ns-muted">
        The first column is the baseline: deltas and speedups are against it. Columns are in the link (Share), except second recordings, which
        are local files.
      </p>
      <AddColumns full={full} hasManual={hasManual} basePolicy={base?.policy ?? 'first-touch'} onAdd={add} onFile={(f) => void openFile(f)} />
      {fileError && (
        <p className="notice notice--error" role="alert">
          {fileError}
        </p>
      )}
      {baseAnalysis.status === 'done' && 'view' in baseAnalysis.outcome && (
        <>
          <EngineRange analysis={baseAnalysis.outcome.view} onClear={() => navigate({ range: null })} />
          <PredictionBasis
            analysis={baseAnalysis.outcome.view}
            onBaseline={(b) => navigate({ base: b })}
            windowMs={state.win}
            onWindow={(win) => navigate({ win })}
            accessRates={state.rates}
            onAccessRates={(rates) => navigate({ rates })}
          />
        </>
      )}
      {/* Said once for every column of this recording (they share its access data), not per column. */}
      {baseView && <EstimateBanner analysis={baseView} onExit={() => navigate({ estimate: false })} />}
      {baseView && columns.length >= MIN_COLUMNS && (
        <CompareTable columns={columns.map((c, i) => ({ key: keys[i]!, title: columnTitle(c, names), spec: columnSpec(c), recording: c.recording, result: results[keys[i]!] ?? null }))} analysis={baseView} />
      )}
      {columns.length < MIN_COLUMNS && <p className="ns-muted">Add at least {MIN_COLUMNS} columns to compare.</p>}
      {/* Exported side by side, as here: the columns' graphs under the table. */}
      {/* As many columns side by side as fit (at least 16rem each, so a graph stays readable); more wrap onto the next row. */}
      <div className="compare-grid" data-export-row>
        {columns.map((c, i) => (
          <CompareColumn
            key={keys[i]}
            resultKey={keys[i]!}
            onResult={onResult}
            index={i}
            spec={c}
            base={base!}
            request={columnRequest(c, state, summary, regions)}
            baseRequest={columnRequest(base!, state, summary, regions)}
            title={columnTitle(c, names)}
            scales={scales}
            estimate={state.estimate}
            onRemove={columns.length > 1 ? () => setColumns(columns.filter((_, j) => j !== i)) : undefined}
            onBaseline={i > 0 ? () => setColumns([c, ...columns.filter((_, j) => j !== i)]) : undefined}
            onEstimate={() => navigate({ estimate: true })}
          />
        ))}
      </div>
      <CompareWeights
        entries={columns.map((c, i) => ({ spec: c, result: results[keys[i]!] ?? null, where: columnWhere(c, names) }))}
      />
      {hasManual && <ManualEditor summary={summary} regions={regions} value={state.manual} onChange={(m) => navigate({ manual: m }, { replace: true })} />}
    </section>
  );
}

/**
 * The controls that add a column: a policy, Manual, a machine preset, another recording. At
 * MAX_COLUMNS each is disabled and says why (its tooltip, and its description: the note under them).
 */
function AddColumns({
  full,
  hasManual,
  basePolicy,
  onAdd,
  onFile,
}: {
  full: boolean;
  hasManual: boolean;
  basePolicy: string;
  onAdd: (c: ColumnSpec) => void;
  onFile: (f: File) => void;
}) {
  const presets = useMemo(() => listPresets(), []);
  const fileInput = useRef<HTMLInputElement>(null);
  const fullHint = full ? { title: COLUMN_CAP_REASON, 'aria-describedby': 'compare-full' } : {};
  return (
    <>
      <div className="compare-add" aria-label="Add a column">
        <span>Add a policy:</span>
        {[...POLICY_IDS, ...TIERED_POLICY_IDS, ...ON_REQUEST_POLICY_IDS].map((id) => (
          <button key={id} type="button" disabled={full} {...fullHint} data-testid={`add-policy-${id}`} onClick={() => onAdd({ policy: id, machine: null, recording: null })}>
            + {policyLabel(id)}
          </button>
        ))}
        <button
          type="button"
          disabled={full || hasManual}
          title={full ? COLUMN_CAP_REASON : hasManual ? 'There is a Manual column already: edit its placement below' : 'A placement you drag together: threads and regions onto nodes'}
          aria-describedby={full ? 'compare-full' : undefined}
          data-testid="add-policy-manual"
          onClick={() => onAdd({ policy: 'manual', machine: null, recording: null })}
        >
          + Manual
        </button>
        <label>
          Add a machine:{' '}
          <select
            data-testid="add-machine"
            disabled={full}
            {...fullHint}
            value=""
            onChange={(e) => e.target.value && onAdd({ policy: basePolicy, machine: e.target.value, recording: null })}
          >
            <option value="">re-target onto a preset…</option>
            {presets.map((p) => (
              <option key={p.id} value={p.id} title={p.description}>
                {p.id}
              </option>
            ))}
          </select>
        </label>
        <button type="button" disabled={full} {...fullHint} data-testid="add-recording" onClick={() => fileInput.current?.click()}>
          + Open another recording…
        </button>
        <input
          ref={fileInput}
          type="file"
          accept=".numascope"
          hidden
          data-testid="add-recording-input"
          onChange={(e) => {
            const f = e.target.files?.[0];
            e.target.value = '';
            if (f) onFile(f);
          }}
        />
      </div>
      {full && (
        <p className="ns-muted small" id="compare-full" data-testid="compare-full">
          {COLUMN_CAP_REASON}
        </p>
      )}
    </>
  );
}

/** A second recording's name, for the weights panels' titles (the machine is in the title already). */
function columnWhere(c: ColumnSpec, names: Map<number, string>): string | undefined {
  return c.recording !== null ? (names.get(c.recording) ?? `recording ${c.recording}`) : undefined;
}

/**
 * Weighted interleave's recommendation for each analysis of the columns that replayed one (the
 * engine replays weighted-interleave by default on a machine with memory-only nodes or several
 * tiers: a column re-targeted onto dram-cxl-1s shows it whatever the column's policy), once per
 * machine, recording and weighted policy.
 */
function CompareWeights({ entries }: { entries: Array<{ spec: ColumnSpec; result: ColumnResult | null; where: string | undefined }> }) {
  const seen = new Set<string>();
  const panels: Array<{ key: string; a: AnalysisView; p: PolicyView; where: string | undefined }> = [];
  for (const e of entries) {
    if (!e.result) continue;
    for (const p of weightedPolicies(e.result.a)) {
      const key = `${e.spec.machine ?? ''}|${e.spec.recording ?? ''}|${p.policy}`;
      if (seen.has(key)) continue;
      seen.add(key);
      panels.push({ key, a: e.result.a, p, where: e.where });
    }
  }
  if (panels.length === 0) return null;
  return (
    <div className="compare-weights" data-testid="compare-weights">
      <h3>Weighted interleave</h3>
      <p className="ns-muted small">
        The weights the engine recommends for each memory-tiered machine the columns replay on: DRAM with CXL or HBM memory, nodes without
        cpus.
      </p>
      {panels.map((x) => (
        <WeightsPanel key={x.key} analysis={x.a} policy={x.p} where={x.where} />
      ))}
    </div>
  );
}

/** A column's outcome, for the table: its policy, the baseline column's, and its analysis. */
interface ColumnResult {
  a: AnalysisView;
  p: PolicyView;
  b: PolicyView | undefined;
  /** The baseline column's analysis (another recording's, for a second-recording column). */
  bView?: AnalysisView;
}

function CompareColumn(props: {
  resultKey: string;
  onResult: (key: string, r: ColumnResult | null) => void;
  index: number;
  spec: ColumnSpec;
  base: ColumnSpec;
  request: AnalyzeRequest | null;
  baseRequest: AnalyzeRequest | null;
  title: string;
  scales?: TrafficScales;
  estimate: boolean;
  onRemove?: () => void;
  onBaseline?: () => void;
  onEstimate: () => void;
}) {
  const { index, spec, base, title, scales } = props;
  const mine = useAnalysis(props.request, spec.recording);
  const theirs = useAnalysis(props.baseRequest, base.recording);
  const header = (
    <header className="compare-col__head">
      <h3 data-testid="column-title">
        {index === 0 ? <span className="ns-badge-inline">baseline</span> : null} {title}
      </h3>
      {props.onBaseline && (
        <button type="button" className="link-button" onClick={props.onBaseline}>
          make baseline
        </button>
      )}
      {props.onRemove && (
        <button type="button" className="link-button" aria-label={`Remove column ${title}`} data-testid="remove-column" onClick={props.onRemove}>
          remove
        </button>
      )}
    </header>
  );
  let body;
  let result: ColumnResult | null = null;
  if (!props.request) body = <p className="notice" data-testid="column-unavailable">{MANUAL_REASON}</p>;
  else if (mine.status === 'running') body = <Progress state={mine} />;
  else if ('error' in mine.outcome) body = <EngineRefusal error={mine.outcome.error} onEstimate={props.onEstimate} />;
  else {
    const a = mine.outcome.view;
    const p = a.policies.find((x) => x.policy === spec.policy);
    const bView = theirs.status === 'done' && 'view' in theirs.outcome ? theirs.outcome.view : undefined;
    const b = bView?.policies.find((x) => x.policy === base.policy);
    body = p ? <ColumnBody a={a} p={p} b={b} index={index} title={title} scales={scales} /> : <Unavailable a={a} policy={spec.policy} />;
    result = p ? { a, p, b, ...(bView ? { bView } : {}) } : null;
  }
  const { onResult, resultKey } = props;
  // `result` is a new object each render; its parts are stable, so the effect depends on them, not on it.
  useEffect(() => onResult(resultKey, result), [onResult, resultKey, result?.p, result?.b, result?.a, result?.bView]); // eslint-disable-line react-hooks/exhaustive-deps
  useEffect(() => () => onResult(resultKey, null), [onResult, resultKey]);
  return (
    <article className="compare-col" data-testid="compare-column" data-spec={columnSpec(spec)}>
      {header}
      {body}
    </article>
  );
}

function Unavailable({ a, policy }: { a: AnalysisView; policy: string }) {
  const why = a.unavailable.find((u) => u.policy === policy)?.reason ?? `${policy} is not a policy this app replays`;
  return (
    <p className="notice" data-testid="column-unavailable">
      <span className="ns-badge" data-status="unavailable">
        <span className="ns-badge__body">
          <span className="ns-badge__status">unavailable</span>
        </span>
      </span>{' '}
      {why}
    </p>
  );
}

function ColumnBody({
  a,
  p,
  b,
  index,
  title,
  scales,
}: {
  a: AnalysisView;
  p: PolicyView;
  b: PolicyView | undefined;
  index: number;
  title: string;
  scales?: TrafficScales;
}) {
  const speedup = b ? speedupAgainst(b, p) : null;
  return (
    <>
      <p className="ns-muted small">{a.machine.name}</p>
      <TrafficGraph traffic={trafficInput(a, p)} size={a.machine.nodeIds.length > 4 ? 300 : 250} scales={scales} title={title} />
      <p>
        Speedup vs the first column:{' '}
        <strong data-testid="column-speedup" data-value={speedup ?? ''}>
          {speedup !== null ? formatSpeedup(speedup) : '…'}
        </strong>
        <br />
        Predicted{' '}
        <span data-testid="column-predicted" data-value={p.predictedUs}>
          {formatTimeUs(p.predictedUs)}
        </span>{' '}
        (the recording took <span data-testid="column-recorded" data-value={a.recordedUs}>{formatTimeUs(a.recordedUs)}</span>)
        <br />
        To get there: <span data-testid="column-migration" data-value={p.bytesToMove}>{costText(p)}</span>
      </p>
      {a.headline === 'steady-state' && <p className="ns-muted small" data-testid="column-transient">{transientText(a, p)}</p>}
      {b && index > 0 && (
        <table className="delta-table" data-testid="delta-table">
          <caption>Against the first column</caption>
          <thead>
            <tr>
              <th scope="col">metric</th>
              <th scope="col">Δ (speedup: ratio)</th>
            </tr>
          </thead>
          <tbody>
            {deltaRows(b, p).map((r) => (
              <tr key={r.metric.key} data-testid={`delta-${r.metric.key}`} data-verdict={r.verdict} data-base={r.base} data-column={r.value}>
                <th scope="row">{r.metric.label}</th>
                <td data-value={r.metric.unit === 'x' ? r.value : r.delta} className={`delta delta--${r.verdict}`}>
                  {formatDelta(r)} {r.relative !== null && r.metric.unit !== 'x' ? <span className="ns-muted">({formatPercent(r.relative, 0)})</span> : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

/** The table's rows: the engine views' figures (one formatter each, as on the Traffic cards), then the cost. */
const TABLE_ROWS: Array<{ key: string; label: string }> = [
  { key: 'predictedSpeedup', label: 'Speedup vs the first column' },
  { key: 'predictedUs', label: 'Predicted time' },
  { key: 'localAccessRatio', label: 'Local access ratio' },
  { key: 'memoryLatencyNs', label: 'Memory latency' },
  { key: 'mcImbalancePct', label: 'MC imbalance' },
  { key: 'interconnectUsagePct', label: 'Interconnect usage' },
  { key: 'interconnectImbalancePct', label: 'Interconnect imbalance' },
  { key: 'pagesToMove', label: 'To get there' },
];

/** A row's label for the exported table: the name, its unit and better direction, and its badge. */
function exportLabel(key: string, label: string, badge: string | null): string {
  const info = key in METRIC_INFO ? METRIC_INFO[key as MetricKey] : null;
  const better = info ? betterText(info) : null;
  const unit = info ? [info.unit, better].filter(Boolean).join(', ') : '';
  return `${label}${unit ? ` (${unit})` : ''}${badge ? ` [${badge}]` : ''}`;
}

/**
 * One aligned table of every column's figures, fastest first (speedup against the first column),
 * with a line per column on why it wins or loses. Columns still replaying show "…".
 */
function CompareTable({
  columns: given,
  analysis,
}: {
  columns: Array<{ key: string; title: string; spec: string; recording: number | null; result: ColumnResult | null }>;
  analysis: AnalysisView;
}) {
  const windowMs = analysis.windowMs;
  // Which headline the table shows (issue 30: both named, the user switches).
  const [headline, setHeadline] = useState<Headline>('next-launch');
  const columns = given.map((c) => (c.result ? { ...c, result: { ...c.result, p: headlineView(c.result.p, headline), b: c.result.b ? headlineView(c.result.b, headline) : undefined } } : c));
  // A column of another recording is compared by work (per instruction or DRAM access), not by
  // duration: the two recordings may be of different lengths (engine compareRecordings).
  const baseRecording = columns[0]?.recording ?? null;
  const byWork = columns.map((c) => (c.result?.bView && c.recording !== baseRecording ? compareRecordings(c.result.bView, c.result.a) : null));
  const speedups = columns.map((c, i) => {
    const r = c.result;
    if (!r?.b) return null;
    const w = byWork[i];
    return w ? speedupPerWork(w, r.b.predictedUs, r.p.predictedUs) : speedupAgainst(r.b, r.p);
  });
  const workNotes = [
    ...new Set(
      byWork.flatMap((w, i) =>
        w ? [`${columns[i]!.title}: speedup per ${w.unit === null ? 'unit of work unavailable (ratio of predicted times)' : w.unit.replace(/s$/, '')} against the first column`, ...w.warnings] : [],
      ),
    ),
  ];
  const order = orderBySpeedup(speedups);
  const cell = (c: (typeof columns)[number], key: string, speedup: number | null): { text: string; value: number | string } => {
    const r = c.result;
    if (!r) return { text: '…', value: '' };
    if (key === 'predictedSpeedup') return speedup === null ? { text: '…', value: '' } : { text: formatSpeedup(speedup), value: speedup };
    if (key === 'pagesToMove') return { text: costText(r.p), value: r.p.pagesToMove };
    const m = policyMetrics(r.p).find((x) => x.key === key)!;
    return { text: m.text, value: m.value };
  };
  const first = columns.find((c) => c.result)?.result;
  // The PNG/SVG export draws this table (the figure a review needs: the numbers, ranked, with why)
  // above the columns' graphs; the note says what the numbers are, as the view's banners do.
  const basis = analysis.headline === 'steady-state' ? 'steady state' : 'window-by-window replay';
  const note = [
    `Speedup: the first column’s predicted time ÷ the column’s. Predicted by the policy engine (${basis}, ${formatTimeUs(windowMs * 1000)} windows) on ${analysis.machine.name}.`,
    analysis.estimate ? 'ESTIMATED from page placement only: no memory-access samples (accesses assumed uniform).' : '',
    analysis.accessSource === 'hinting-faults' ? 'Access samples are NUMA hinting faults: rates are relative.' : '',
    analysis.synthetic ? 'Synthetic trace: a demonstration, not a measurement.' : '',
  ]
    .filter(Boolean)
    .join(' ');
  const badge = first ? (key: string) => predictionBadge(first.a, key).status : () => null;
  return (
    <div className="table-scroll compare-table-wrap">
      <table
        className="data compare-table"
        data-testid="compare-table"
        data-export="compare-table"
        data-export-title={`Compare: metrics across columns, fastest first (speedup against ${columns[0]?.title ?? 'the first column'})`}
        data-export-note={note}
      >
        <caption>
          Columns side by side, fastest first (speedup against the first column, <strong>{columns[0]?.title}</strong>). Shown:{' '}
          <strong data-testid="compare-headline" data-value={headline}>
            {HEADLINE_LABELS[headline]}
          </strong>{' '}
          <button type="button" className="link-button" data-testid="compare-headline-switch" onClick={() => setHeadline(headline === 'next-launch' ? 'applied-now' : 'next-launch')}>
            show {HEADLINE_LABELS[headline === 'next-launch' ? 'applied-now' : 'next-launch']}
          </button>
          {workNotes.map((n) => (
            <span key={n} className="compare-work-note" data-testid="compare-work-note">
              <br />
              {n}
            </span>
          ))}
        </caption>
        <thead>
          <tr>
            <th scope="col">metric</th>
            {order.map((i) => (
              <th
                key={columns[i]!.key}
                scope="col"
                data-testid="compare-table-col"
                data-spec={columns[i]!.spec}
                data-speedup={speedups[i] ?? ''}
                data-export-text={`${columns[i]!.title}${i === 0 ? ' (baseline)' : ''}`}
              >
                {i === 0 ? <span className="ns-badge-inline">baseline</span> : null} {columns[i]!.title}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {TABLE_ROWS.map((row) => (
            <tr key={row.key} data-testid={`compare-row-${row.key}`}>
              <th scope="row" data-export-text={exportLabel(row.key, row.label, row.key !== 'pagesToMove' && row.key !== 'predictedSpeedup' ? badge(row.key) : null)}>
                <div className="metric-th">
                  <MetricLabel metricKey={row.key} label={row.label} />
                  {first && row.key !== 'pagesToMove' && row.key !== 'predictedSpeedup' ? <Badge {...predictionBadge(first.a, row.key)} /> : null}
                </div>
              </th>
              {order.map((i) => {
                const c = cell(columns[i]!, row.key, speedups[i]!);
                return (
                  <td key={columns[i]!.key} data-spec={columns[i]!.spec} data-value={c.value}>
                    {c.text}
                  </td>
                );
              })}
            </tr>
          ))}
          <tr data-testid="compare-row-why">
            <th scope="row">Why</th>
            {order.map((i) => {
              const r = columns[i]!.result;
              return (
                <td key={columns[i]!.key} data-spec={columns[i]!.spec} data-testid="compare-why" className="compare-why" title={r?.p?.why?.text ?? undefined}>
                  {r?.b ? whyLine(r.b, r.p, { isBaseline: i === 0, windowMs, speedup: speedups[i] }) : '…'}
                </td>
              );
            })}
          </tr>
        </tbody>
        {/* Where the time goes: each prediction taken apart (the engine's predictionWhy, as the CLI prints it). */}
        {headline === 'next-launch' && (
          <tbody data-testid="compare-decomposition">
            <tr className="compare-section">
              <th scope="rowgroup" colSpan={order.length + 1}>
                Where the time goes: predicted time = compute + waiting for memory; memory latency = idle + queueing
              </th>
            </tr>
            {DECOMPOSITION_ROWS.map((row) => (
              <tr key={row.key} data-testid={`compare-part-${row.key}`}>
                <th scope="row" className="compare-part-label">
                  {row.label}
                </th>
                {order.map((i) => {
                  const r = columns[i]!.result;
                  const c = r ? decompositionRows(r.p).find((x) => x.key === row.key) : undefined;
                  return (
                    <td key={columns[i]!.key} data-spec={columns[i]!.spec} data-value={c?.value ?? ''}>
                      {r ? (c?.text ?? '—') : '…'}
                    </td>
                  );
                })}
              </tr>
            ))}
          </tbody>
        )}
      </table>
    </div>
  );
}
