/**
 * The live loop on the Live screen (loop.ts): after a recording whose process was left running,
 * recommend → dry run → apply → verify → record the same pid again, with the before/after numbers
 * of the two recordings side by side.
 */
import { useEffect, useState, useSyncExternalStore } from 'react';
import { formatDurationUs } from '@numascope/viz';
import { applyVerdict, dryRunVerdict } from './loop';
import type { LiveLoop, LoopState, Measure, Step } from './loop';
import { RECORD_LIMITS } from '@numascope/protocol';
import { pageToken } from './token';
import type { ApplyReport, ErrorBody, NodeCount } from '@numascope/protocol';

const n = (v: number) => v.toLocaleString('en-US');
const pct = (v: number) => `${(v * 100).toFixed(1)}%`;

function useLoop(loop: LiveLoop): LoopState {
  return useSyncExternalStore(
    (fn) => loop.subscribe(fn),
    () => loop.state,
  );
}

/**
 * While a loop is shown the address bar is the Live screen's with the loop, `?token=T&view=live&loop=ID`
 * (a trace's `recording=`/`trace=` from before the Live button dropped), so a reload or a copied
 * link in this browser comes back to this panel. Replaced, not pushed: Back never lands on a URL
 * that names a trace while Live is shown.
 */
function useLoopInUrl(recording: string | null) {
  useEffect(() => {
    const token = pageToken();
    if (recording === null || !token) return;
    const search = `?token=${encodeURIComponent(token)}&view=live&loop=${encodeURIComponent(recording)}`;
    if (window.location.search === search) return;
    window.history.replaceState(window.history.state, '', `${window.location.pathname}${search}`);
  }, [recording]);
}

/** A link that opens a recording's trace in the views (serve keeps it; the link holds this tab's token); the bare id elsewhere. */
function RecordingLink({ recording, testId }: { recording: string; testId: string }) {
  const token = pageToken();
  if (!token) return <code>{recording}</code>;
  return (
    <a href={`?token=${encodeURIComponent(token)}&recording=${encodeURIComponent(recording)}`} data-testid={testId}>
      {recording}
    </a>
  );
}

/** What the panel says once the loop is saved: where, and what brings it back. */
export function keptText(keeper: string): string {
  return keeper === 'numascope serve'
    ? 'Kept with numascope serve: a reload or a new tab on this server brings this loop back.'
    : `Kept by ${keeper} (a file in its data directory): a window reload or the next start of the app brings this loop back.`;
}

export function LoopPanel({ loop, busy }: { loop: LiveLoop; busy: boolean }) {
  const s = useLoop(loop);
  const [duration, setDuration] = useState('');
  const before = s.before;
  useLoopInUrl(before?.recording ?? null);
  if (!before) {
    return s.restoreError ? <Refusal testId="loop-restore-error" title={`The loop kept by ${loop.keeper} could not be brought back`} error={s.restoreError} /> : null;
  }
  const r = s.recommend;
  const againSecs = duration.trim() === '' ? Math.max(1, Math.round(before.durationUs / 1e6)) : Number(duration);
  const againOk = Number.isFinite(againSecs) && againSecs > 0 && againSecs <= RECORD_LIMITS.maxDurationS;
  const recording = s.again.kind === 'recording';
  return (
    <section className="panel loop" aria-labelledby="loop-heading" data-testid="loop" data-pid={before.pid}>
      <h2 id="loop-heading">Record → recommend → apply → record again: pid {before.pid}</h2>
      <p data-testid="loop-left-running">
        Recording <code>{before.recording}</code> stopped and pid {before.pid} is still running (numascope left it running). Make a plan for it,
        dry run it, apply it, then record the same process again to see the effect.
      </p>
      <p className="ns-muted small" data-testid="loop-kept" data-kept={s.kept.kind} data-restored={s.restoredFrom ?? ''}>
        {s.restoredFrom !== null ? `Brought back from ${loop.keeper} (saved ${s.restoredFrom}). ` : ''}
        {s.kept.kind === 'saved' && keptText(loop.keeper)}
        {s.kept.kind === 'no' &&
          (loop.keeps ? `Not kept by ${loop.keeper} yet: a reload loses this panel until the first save.` : 'Not kept (this backend keeps no loop): a reload loses this panel.')}
        {s.kept.kind === 'error' && `Not kept by ${loop.keeper} (${s.kept.error.code}: ${s.kept.error.message}): a reload loses this panel.`}
      </p>
      <ol className="loop__steps">
        <li>
          <button type="button" onClick={() => void loop.recommend()} disabled={r.kind === 'running' || recording} data-testid="loop-recommend">
            Recommend
          </button>{' '}
          <span className="ns-muted small">the policy engine on this recording (in a Worker)</span>
          {r.kind === 'running' && <span data-testid="loop-recommend-running"> Analysing…</span>}
          {r.kind === 'error' && <Refusal testId="loop-recommend-error" title="No plan" error={r.error} />}
          {r.kind === 'done' && (
            <div data-testid="loop-plan" data-kind={r.value.kind} data-ranges={r.value.ranges} data-threads={r.value.threads}>
              <p>
                <strong>{r.value.title}</strong>
                {r.value.speedup !== null ? ` (predicted ${r.value.speedup.toFixed(2)}×)` : ''}: <span data-testid="loop-plan-pages" data-value={r.value.pages}>{n(r.value.pages)} pages to move</span> (in {n(r.value.ranges)} page ranges),{' '}
                {n(r.value.threads)} threads to pin, for pid {r.value.plan.target.pid}.
              </p>
              {r.value.dropped.length > 0 && (
                <p className="ns-muted" data-testid="loop-dropped" data-count={r.value.dropped.length}>
                  Left out of the plan: {n(r.value.dropped.length)} recorded page ranges that are no longer mapped in pid {before.pid} (freed since the
                  recording; the server refused them as range-not-mapped), e.g. {r.value.dropped.slice(0, 3).join(', ')}.
                </p>
              )}
              {r.value.why && (
                <p className="ns-muted" data-testid="loop-why">
                  No recommendation: {r.value.why} The plan is a placement check instead: its dry run asks the kernel where the recorded pages are now.
                </p>
              )}
            </div>
          )}
        </li>
        <li>
          <button type="button" onClick={() => void loop.dryRun()} disabled={r.kind !== 'done' || s.dry.kind === 'running' || recording} data-testid="loop-dry-run">
            Dry run
          </button>
          <StepResult step={s.dry} testId="loop-dry" verdict={dryRunVerdict} />
        </li>
        <li>
          <button
            type="button"
            className="primary"
            onClick={() => void loop.apply()}
            disabled={s.dry.kind !== 'done' || s.apply.kind === 'running' || s.apply.kind === 'done' || recording}
            title={s.dry.kind === 'done' ? undefined : 'Dry run first'}
            data-testid="loop-apply"
          >
            Apply and verify
          </button>
          <StepResult step={s.apply} testId="loop-apply" verdict={applyVerdict} />
        </li>
        <li>
          <label htmlFor="loop-duration">Record again, seconds </label>
          <input
            id="loop-duration"
            className="loop__duration"
            inputMode="decimal"
            value={duration}
            placeholder={String(againSecs)}
            onChange={(e) => setDuration(e.target.value)}
            data-testid="loop-duration"
          />{' '}
          <button
            type="button"
            onClick={() => void loop.recordAgain(againSecs)}
            disabled={!againOk || recording || busy}
            title={busy ? 'A recording is running' : undefined}
            data-testid="loop-record-again"
          >
            Record pid {before.pid} again
          </button>
          {s.again.kind === 'recording' && <span data-testid="loop-again-running"> Recording the same process (attached)…</span>}
          {s.again.kind === 'error' && <Refusal testId="loop-again-error" title="Could not record again" error={s.again.error} />}
        </li>
      </ol>
      <Compare s={s} />
    </section>
  );
}

function Refusal({ testId, title, error }: { testId: string; title: string; error: ErrorBody }) {
  return (
    <div className="live__alert" role="alert" data-testid={testId} data-code={error.code}>
      <p className="live__alert-title">
        {title}: <code>{error.code}</code>
      </p>
      <p>{error.message}</p>
    </div>
  );
}

function StepResult<T>({ step, testId, verdict }: { step: Step<T>; testId: string; verdict: (v: T) => string }) {
  if (step.kind === 'idle') return null;
  if (step.kind === 'running') return <span data-testid={`${testId}-running`}> …</span>;
  if (step.kind === 'error') return <Refusal testId={`${testId}-refused`} title="Refused" error={step.error} />;
  // The counts the verdict says, for tests that follow one count through plan → dry run → apply.
  const pages = (step.value as { pages?: { toMove: number; moved: number; notAttempted: number; notMoved: { busy: number; notPresent: number; notPermitted: number; hugePage: number; elsewhere: number; other: Record<string, number> } } }).pages;
  const notMoved = pages ? pages.notMoved.busy + pages.notMoved.notPresent + pages.notMoved.notPermitted + pages.notMoved.hugePage + pages.notMoved.elsewhere + Object.values(pages.notMoved.other).reduce((a, b) => a + b, 0) : undefined;
  return (
    <p
      data-testid={`${testId}-verdict`}
      data-status={(step.value as { status?: string }).status}
      data-to-move={pages?.toMove}
      data-moved={pages?.moved}
      data-not-moved={notMoved}
      data-not-attempted={pages?.notAttempted}
    >
      {verdict(step.value)}
    </p>
  );
}

function count(list: NodeCount[], node: number): number {
  return list.find((c) => c.node === node)?.count ?? 0;
}

/** Before and after, side by side: measured pages per node, and the engine's prediction for each recording. */
function Compare({ s }: { s: LoopState }) {
  const b = s.before!;
  const a = s.after;
  const nodes = [...new Set([...s.nodeIds, ...b.pagesByNode.map((c) => c.node), ...(a?.pagesByNode ?? []).map((c) => c.node)])].sort((x, y) =>
    x < 0 ? 1 : y < 0 ? -1 : x - y,
  );
  const pred = (m: Measure | null, f: (p: { localAccessRatio: number; predictedUs: number; memoryLatencyNs: number; estimate: boolean }) => string) =>
    !m ? (
      '–'
    ) : m.prediction.kind === 'done' ? (
      f(m.prediction.value)
    ) : m.prediction.kind === 'running' ? (
      '…'
    ) : m.prediction.kind === 'error' ? (
      <span title={m.prediction.error.message}>no prediction ({m.prediction.error.code}: {m.prediction.error.message})</span>
    ) : (
      'Recommend to analyse'
    );
  const estimate = [b, a].some((m) => m?.prediction.kind === 'done' && m.prediction.value.estimate);
  // Pages of the plan's ranges per node, asked with move_pages: the first dry run (before the
  // apply) and the dry run after the second recording.
  const placed = (step: Step<ApplyReport>, node: number): number | null => (step.kind === 'done' ? (step.value.pages.before[String(node)] ?? 0) : null);
  const placedNodes = nodes.filter((x) => x >= 0);
  return (
    <div className="table-scroll" data-testid="loop-compare-box">
      <table className="data loop__compare" data-testid="loop-compare">
        <caption>
          Before and after, same process (pid {b.pid}){a ? '' : ': record again to fill in “after”'}
        </caption>
        <thead>
          <tr>
            <th scope="col" />
            <th scope="col">
              before (<RecordingLink recording={b.recording} testId="loop-open-before" />)
            </th>
            <th scope="col">
              after{' '}
              {a ? (
                <>
                  (<RecordingLink recording={a.recording} testId="loop-open-after" />)
                </>
              ) : (
                ''
              )}
            </th>
          </tr>
        </thead>
        <tbody>
          {placedNodes.map((node) => {
            const before = placed(s.dry, node);
            const after = placed(s.afterCheck, node);
            return (
              <tr key={`placed-${node}`} data-testid={`loop-placed-${node}`}>
                <th scope="row">plan’s pages on node {node} (move_pages, dry run)</th>
                <td data-value={before ?? ''}>{before === null ? 'dry run to see' : n(before)}</td>
                <td data-value={after ?? ''}>{after === null ? (s.afterCheck.kind === 'running' ? '…' : '–') : n(after)}</td>
              </tr>
            );
          })}
          {nodes.map((node) => {
            const key = node < 0 ? 'unknown' : String(node);
            return (
              <tr key={node} data-testid={`loop-pages-${key}`}>
                <th scope="row">pages in the recording, on {node < 0 ? 'unknown node' : `node ${node}`} (measured: resident pages of the placement scan, or pages first-touched where no scan ran)</th>
                <td data-value={count(b.pagesByNode, node)}>{n(count(b.pagesByNode, node))}</td>
                <td data-value={a ? count(a.pagesByNode, node) : ''}>{a ? n(count(a.pagesByNode, node)) : '–'}</td>
              </tr>
            );
          })}
          <tr data-testid="loop-local">
            <th scope="row">local access ratio (predicted{estimate ? ', placement-only estimate' : ''})</th>
            <td data-value={b.prediction.kind === 'done' ? b.prediction.value.localAccessRatio : ''}>{pred(b, (p) => pct(p.localAccessRatio))}</td>
            <td data-value={a?.prediction.kind === 'done' ? a.prediction.value.localAccessRatio : ''}>{pred(a, (p) => pct(p.localAccessRatio))}</td>
          </tr>
          <tr data-testid="loop-time">
            <th scope="row">predicted time of the recorded work</th>
            <td>{pred(b, (p) => formatDurationUs(p.predictedUs))}</td>
            <td>{pred(a, (p) => formatDurationUs(p.predictedUs))}</td>
          </tr>
          <tr data-testid="loop-per-work">
            <th scope="row">predicted time per unit of work (the recordings differ in length: compare this)</th>
            {[b, a].map((m, k) => {
              const v = m?.prediction.kind === 'done' ? m.prediction.value : null;
              const per = v?.work && v.work.amount > 0 ? (v.predictedUs * 1000) / v.work.amount : null;
              return (
                <td key={k} data-value={per ?? ''}>
                  {!m ? '–' : per === null ? pred(m, () => 'no measure of work (placement-only estimate)') : `${per < 0.01 ? per.toExponential(2) : per.toFixed(2)} ns per ${v!.work!.unit.replace(/s$/, '')}`}
                </td>
              );
            })}
          </tr>
          <tr data-testid="loop-duration-row">
            <th scope="row">recording length</th>
            <td>{formatDurationUs(b.durationUs)}</td>
            <td>{a ? formatDurationUs(a.durationUs) : '–'}</td>
          </tr>
        </tbody>
      </table>
    </div>
  );
}
