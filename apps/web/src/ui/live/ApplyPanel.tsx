/**
 * "Apply a plan" in Live mode: pick the process, load a plan (from the Recommendations view or a
 * JSON file), dry run, apply, compare planned with achieved, roll back. Every call goes to
 * `numascope serve` with the page's token (LiveApi); the server runs the same checks as
 * `numascope apply` (docs/apply.md) and refuses before changing anything.
 */
import { useEffect, useMemo, useRef, useState } from 'react';
import type { ChangeEvent } from 'react';
import { formatCount } from '@numascope/viz';
import { beginWork } from '../idle';
import { ApiError } from './client';
import type { LiveClient } from './client';
import {
  cpuList,
  nodesOf,
  notMovedReasons,
  onPendingPlan,
  parsePlanText,
  PlanFileError,
  rangePages,
  statusText,
  takePendingPlan,
} from './apply';
import type { LoadedPlan } from './apply';
import type { ApplyReport, ErrorBody, PageStats, ProcessInfo, RunReport, SystemWeightsReport } from '@numascope/protocol';

const n = (v: number) => v.toLocaleString('en-US');

type Launch =
  | { kind: 'idle' }
  | { kind: 'running'; startedAt: number; pid: number | null }
  | { kind: 'done'; report: RunReport; ms: number }
  | { kind: 'error'; error: ErrorBody; ms: number };

type Call =
  | { kind: 'idle' }
  | { kind: 'running'; startedAt: number }
  | { kind: 'done'; report: ApplyReport; ms: number }
  | { kind: 'error'; error: ErrorBody; ms: number };

function asError(e: unknown): ErrorBody {
  if (e instanceof ApiError) return { code: e.code, message: e.message };
  return { code: 'internal', message: e instanceof Error ? e.message : String(e) };
}

/** What each refusal means for the user, beyond the server's message. */
const HINTS: Record<string, string> = {
  'pid-mismatch': 'The plan was made for another process: pick the process in target.pid, or make a plan for this one.',
  'no-process': 'The process does not exist (any more).',
  'pid-reused': 'The pid now belongs to another process than the one the plan was made for (its start time differs).',
  'wrong-machine': 'The plan was made on another machine (its NUMA node ids or distances differ from this one).',
  'thread-not-in-process': 'A thread in the plan is no longer part of the process.',
  permission: 'numascope serve may not change this process: run it as the process’s user, or grant it CAP_SYS_NICE and CAP_SYS_PTRACE (docs/apply.md).',
  'invalid-plan': 'The plan does not follow docs/plan-format.md; the message names the field.',
  'plan-too-large': 'The plan has more ranges, pages or threads than numascope applies at once: split it (the message names the limit).',
  'invalid-record': 'The rollback record is not one numascope wrote; the message names the field.',
  'record-too-large': 'The rollback record is larger than the server accepts: roll it back with `numascope rollback` on the command line.',
  'foreign-thread': 'A thread in the plan or record belongs to another process; nothing was changed.',
  'range-not-mapped': 'No page of a range in the plan is mapped in the process any more (it freed or remapped that memory): record again and make a new plan.',
  'duplicate-key': 'The request names a key twice in one object; the message says which.',
  'run-refused':
    'The plan cannot be launched here (another machine or program, a program the allocation shim cannot be preloaded into, weights the kernel lacks): the message says which.',
  'too-many-runs': 'Four programs launched with a plan are still running on this server: wait for one to exit.',
  'kernel-unsupported':
    'This kernel lacks a feature the plan needs (the message names the version: weighted-interleave system weights need Linux 6.9); weighted-interleave page ranges alone still apply.',
};

export function ApplyPanel({
  api,
  processes,
  recordedPid,
  onRefresh,
}: {
  api: LiveClient;
  processes: ProcessInfo[];
  recordedPid: number | null;
  onRefresh: () => void;
}) {
  const [initial] = useState<LoadedPlan | null>(() => takePendingPlan());
  const [loaded, setLoaded] = useState<LoadedPlan | null>(initial);
  const [fileError, setFileError] = useState<string | null>(null);
  // Default target: the recorded process, else the plan's own target.pid.
  const [pid, setPid] = useState<number | null>(() => recordedPid ?? initial?.plan.target.pid ?? null);
  const [dry, setDry] = useState<Call>({ kind: 'idle' });
  const [run, setRun] = useState<Call>({ kind: 'idle' });
  const [rollback, setRollback] = useState<Call>({ kind: 'idle' });
  const [launch, setLaunch] = useState<Launch>({ kind: 'idle' });
  const [now, setNow] = useState(() => Date.now());
  // Off by default and for every newly loaded plan: the system weights are global.
  // (Reset where a plan is chosen, not in an effect on `loaded`: an effect could run after the
  // user's first tick and undo it.)
  const [sysWeights, setSysWeights] = useState(false);
  const ref = useRef<HTMLElement>(null);

  // A plan handed over from the Recommendations view while this panel is on screen.
  useEffect(
    () =>
      onPendingPlan(() => {
        const p = takePendingPlan();
        if (p) choosePlan(p);
      }),
    // Subscribed once: choosePlan only calls state setters, which React keeps stable, so the
    // first render's closure does what every later one would.
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [],
  );
  useEffect(() => {
    if (loaded?.from === 'recommendations') ref.current?.scrollIntoView?.({ block: 'start' });
  }, [loaded]);
  useEffect(() => {
    if (pid === null && recordedPid !== null) setPid(recordedPid);
  }, [recordedPid, pid]);

  const busy = dry.kind === 'running' || run.kind === 'running' || rollback.kind === 'running' || launch.kind === 'running';
  useEffect(() => {
    if (!busy) return;
    const t = setInterval(() => setNow(Date.now()), 100);
    return () => clearInterval(t);
  }, [busy]);

  function reset() {
    setLaunch({ kind: 'idle' });
    setDry({ kind: 'idle' });
    setRun({ kind: 'idle' });
    setRollback({ kind: 'idle' });
  }

  function choosePlan(p: LoadedPlan) {
    setLoaded(p);
    setSysWeights(false);
    setFileError(null);
    reset();
    // Without a recorded process, default to the plan's own target.
    setPid((cur) => cur ?? p.plan.target.pid);
  }

  async function onFile(e: ChangeEvent<HTMLInputElement>) {
    const file = e.target.files?.[0];
    e.target.value = '';
    if (!file) return;
    const done = beginWork();
    try {
      const plan = parsePlanText(await file.text());
      choosePlan({ plan, name: file.name, from: 'file' });
    } catch (err) {
      setFileError(`${file.name}: ${err instanceof PlanFileError ? err.message : String(err)}`);
    } finally {
      done();
    }
  }

  async function call(set: (c: Call) => void, fn: () => Promise<ApplyReport>) {
    const startedAt = Date.now();
    setNow(startedAt);
    set({ kind: 'running', startedAt });
    const done = beginWork();
    try {
      const report = await fn();
      set({ kind: 'done', report, ms: Date.now() - startedAt });
    } catch (e) {
      set({ kind: 'error', error: asError(e), ms: Date.now() - startedAt });
    } finally {
      done();
    }
  }

  const options = useMemo(() => {
    const own = processes.filter((p) => p.own);
    if (pid !== null && !own.some((p) => p.pid === pid)) return { own, missing: pid };
    return { own, missing: null };
  }, [processes, pid]);

  const plan = loaded?.plan ?? null;
  const applied = run.kind === 'done' ? run.report : null;
  const canDry = plan !== null && pid !== null && !busy && applied === null;
  const canApply = canDry && dry.kind === 'done';
  const objects = plan?.objects ?? [];
  const canLaunch = plan !== null && objects.length > 0 && api.runPlan !== undefined && !busy;
  const launchTitle = launchTitleOf(api.runPlan !== undefined, objects.length, plan?.target.command ?? null);

  async function onLaunch() {
    const startedAt = Date.now();
    setNow(startedAt);
    setLaunch({ kind: 'running', startedAt, pid: null });
    const done = beginWork();
    try {
      const report = await api.runPlan!({ plan: plan!, ...setWeights }, (p) => setLaunch({ kind: 'running', startedAt, pid: p }));
      setLaunch({ kind: 'done', report, ms: Date.now() - startedAt });
    } catch (e) {
      setLaunch({ kind: 'error', error: asError(e), ms: Date.now() - startedAt });
    } finally {
      done();
    }
  }
  const weightsText = plan?.systemWeights ? Object.entries(plan.systemWeights.weights).map(([n, w]) => `N${n}=${w}`).join(' ') : '';
  const setWeights = plan?.systemWeights && sysWeights ? { setSystemWeights: true } : {};

  return (
    <section className="panel apply" aria-labelledby="apply-heading" data-testid="apply-panel" ref={ref}>
      <h2 id="apply-heading">Apply a plan</h2>
      <p className="ns-muted hint">
        Moves page ranges between NUMA nodes and pins threads, on this machine, as <code>numascope apply</code> does (docs/apply.md). The server
        checks the plan, the process (pid and start time), the machine and the permissions before anything changes. Dry run first.
      </p>
      <div className="apply__grid">
        <TargetPicker
          pid={pid}
          options={options}
          recordedPid={recordedPid}
          planPid={plan?.target.pid ?? null}
          onPick={(next) => {
            setPid(next);
            reset();
          }}
          onRefresh={onRefresh}
        />
        <div className="live__field">
          <label htmlFor="apply-file">Plan</label>
          <input id="apply-file" type="file" accept=".json,application/json" data-testid="apply-plan-file" onChange={(e) => void onFile(e)} />
          <span className="ns-muted small">A plan JSON (docs/plan-format.md), or “Apply through live mode” in a trace’s Recommendations view.</span>
        </div>
      </div>
      {fileError && (
        <p className="live__error" role="alert" data-testid="apply-file-error">
          {fileError}
        </p>
      )}
      {plan && <PlanSummary loaded={loaded!} pid={pid} />}
      {plan?.systemWeights && (
        <label className="live__field" data-testid="apply-system-weights">
          <input
            type="checkbox"
            checked={sysWeights}
            disabled={busy || applied !== null}
            onChange={(e) => {
              setSysWeights(e.target.checked);
              setDry({ kind: 'idle' });
            }}
          />{' '}
          Also set the system weights ({weightsText}): global, every process&rsquo;s weighted-interleave allocations use them until rollback restores the previous ones
          (a launch with the plan: until the program exits) (Linux 6.9+).
        </label>
      )}
      <div className="live__status">
        <button type="button" disabled={!canDry} onClick={() => void call(setDry, () => api.apply({ plan: plan!, pid: pid!, dryRun: true, ...setWeights }))} data-testid="apply-dry-run">
          Dry run
        </button>
        <button
          type="button"
          className="primary"
          disabled={!canApply}
          title={dry.kind === 'done' ? undefined : 'Dry run first'}
          onClick={() => {
            setRollback({ kind: 'idle' });
            void call(setRun, () => api.apply({ plan: plan!, pid: pid!, ...setWeights }));
          }}
          data-testid="apply-run"
        >
          Apply
        </button>
        <button type="button" disabled={!canLaunch} title={launchTitle} onClick={() => void onLaunch()} data-testid="apply-launch">
          Launch with this plan
        </button>
        {applied?.rollback && (
          <button
            type="button"
            disabled={busy || rollback.kind === 'done'}
            onClick={() => void call(setRollback, () => api.rollback(applied.rollback!))}
            data-testid="apply-rollback"
          >
            Rollback
          </button>
        )}
        <Progress dry={dry} run={run} rollback={rollback} launch={launch} now={now} />
      </div>
      <CallResult call={dry} testId="apply-dry" title="Dry run" />
      <CallResult call={run} testId="apply-result" title="Apply" />
      <CallResult call={rollback} testId="apply-rollback-result" title="Rollback" />
      <LaunchResult launch={launch} nodeIds={plan?.target.machine?.nodeIds ?? null} />
    </section>
  );
}

/** The process the plan is applied to: the user's own processes, the recorded and the plan's target marked. */
function TargetPicker({
  pid,
  options,
  recordedPid,
  planPid,
  onPick,
  onRefresh,
}: {
  pid: number | null;
  options: { own: readonly ProcessInfo[]; missing: number | null };
  recordedPid: number | null;
  planPid: number | null;
  onPick: (pid: number | null) => void;
  onRefresh: () => void;
}) {
  return (
    <div className="live__field">
      <label htmlFor="apply-pid">Target process</label>
      <div className="live__row">
        <select
          id="apply-pid"
          data-testid="apply-pid"
          value={pid === null ? '' : String(pid)}
          onChange={(e) => onPick(e.target.value ? Number(e.target.value) : null)}
        >
          <option value="">choose a process…</option>
          {options.missing !== null && <option value={options.missing}>{options.missing} (not in the list: refresh)</option>}
          {options.own.map((p) => (
            <option key={p.pid} value={p.pid}>
              {p.pid} {p.name}
              {p.pid === recordedPid ? ' (recorded)' : ''}
              {planPid !== null && p.pid === planPid ? ' (plan target)' : ''}
              {p.command.length ? ` — ${p.command.join(' ').slice(0, 80)}` : ''}
            </option>
          ))}
        </select>
        <button type="button" onClick={onRefresh}>
          Refresh
        </button>
      </div>
    </div>
  );
}

/** What is running, and for how long (the panel's clock ticks `now`). */
function Progress({ dry, run, rollback, launch, now }: { dry: Call; run: Call; rollback: Call; launch: Launch; now: number }) {
  return (
    <span aria-live="polite" data-testid="apply-progress">
      {dry.kind === 'running' && `Dry run… ${secs(now - dry.startedAt)}`}
      {run.kind === 'running' && `Applying… ${secs(now - run.startedAt)}`}
      {rollback.kind === 'running' && `Rolling back… ${secs(now - rollback.startedAt)}`}
      {launch.kind === 'running' && `Launched${launch.pid !== null ? ` pid ${launch.pid}` : ''}, running… ${secs(now - launch.startedAt)}`}
    </span>
  );
}

/** The Launch button's title: why it is off, or what it starts. */
function launchTitleOf(canRun: boolean, objectEntries: number, command: readonly string[] | null): string {
  if (!canRun) return 'This session cannot launch programs';
  if (objectEntries === 0) return 'The plan has no object entries (allocation sites) to place at launch';
  return `Starts ${command?.join(' ') ?? 'the plan’s command'} with the plan’s object entries placed from the first allocation (numascope run --plan)`;
}

function secs(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function PlanSummary({ loaded, pid }: { loaded: LoadedPlan; pid: number | null }) {
  const p = loaded.plan;
  const ranges = p.pageRanges ?? [];
  const threads = p.threads ?? [];
  const pages = ranges.reduce((a, r) => a + rangePages(r), 0);
  return (
    <div className="apply__plan" data-testid="apply-plan" data-pid={p.target.pid}>
      <p>
        <strong>{loaded.name}</strong> ({loaded.from === 'file' ? 'file' : 'from the Recommendations view'}): for pid {p.target.pid}
        {p.target.command?.length ? ` (${p.target.command.join(' ')})` : ''}, {formatCount(ranges.length, 'page range')} ({formatCount(pages, 'page')}),{' '}
        {formatCount(threads.length, 'thread')} to pin{p.source?.policy ? `, policy ${p.source.policy}` : ''}
        {p.objects?.length ? `; ${formatCount(p.objects.length, 'object entry', 'object entries')} (allocation sites) for a launch with the plan` : ''}.
      </p>
      {p.source?.summary && <p className="ns-muted small">{p.source.summary}</p>}
      {pid !== null && pid !== p.target.pid && (
        <p className="ns-muted small" data-testid="apply-pid-warning">
          The plan names pid {p.target.pid}, not {pid}: the server will refuse it (pid-mismatch).
        </p>
      )}
    </div>
  );
}

/** What a launch with the plan did: per object entry the allocations matched and bytes placed, the threads pinned. */
function LaunchResult({ launch, nodeIds }: { launch: Launch; nodeIds: number[] | null }) {
  if (launch.kind === 'idle' || launch.kind === 'running') return null;
  if (launch.kind === 'error') {
    const hint = HINTS[launch.error.code];
    return (
      <div className="live__alert" role="alert" data-testid="apply-launch-error" data-code={launch.error.code}>
        <p className="live__alert-title">
          Launch refused: <code>{launch.error.code}</code>
        </p>
        <p>{launch.error.message}</p>
        {hint && <p className="ns-muted">{hint}</p>}
      </div>
    );
  }
  const r = launch.report;
  const exit = r.exitCode !== null ? `exit code ${r.exitCode}` : r.signal !== null ? `killed by signal ${r.signal}` : 'exit status unknown';
  const oneNode = nodeIds !== null && nodeIds.length === 1;
  return (
    <div className="apply__report" data-testid="apply-launch-result" data-exit-code={r.exitCode ?? ''}>
      <h3>Launch with the plan: {exit}</h3>
      <p>
        <code>{r.command.join(' ')}</code> ran as pid <span data-testid="apply-launch-pid">{r.pid ?? '–'}</span> with the plan applied from its first allocation{' '}
        <span className="ns-muted small">
          ({formatCount(r.processes, 'process', 'processes')}, {n(Math.round(r.elapsedMs))} ms, round trip {n(launch.ms)} ms)
        </span>
      </p>
      {oneNode && (
        <p className="ns-muted" data-testid="apply-launch-one-node">
          This machine has one NUMA node: every placement the plan asks for is node {nodeIds![0]}, where the pages would be anyway, so the launch shows that the
          plan&rsquo;s allocation sites matched and its threads were pinned, not a change of placement.
        </p>
      )}
      {r.objects.length > 0 && (
        <table className="data" data-testid="apply-launch-objects">
          <caption>Object entries (allocation sites)</caption>
          <thead>
            <tr>
              <th scope="col" className="text">
                site
              </th>
              <th scope="col" className="text">
                policy
              </th>
              <th scope="col">allocations matched</th>
              <th scope="col">bytes placed</th>
              <th scope="col" className="text">
                per node (planned by the policy)
              </th>
            </tr>
          </thead>
          <tbody>
            {r.objects.map((o) => (
              <tr key={o.index} data-testid={`apply-launch-object-${o.index}`} data-matches={o.matches}>
                <td className="text">{o.site ?? `objects[${o.index}]`}</td>
                <td className="text">
                  {o.policy} → {o.nodes.map((id) => `node ${id}`).join(', ')}
                </td>
                <td>{n(o.matches)}</td>
                <td>{n(o.bytes)}</td>
                <td className="text">
                  {Object.entries(o.bytesPerNode)
                    .map(([id, b]) => `node ${id}: ${n(b)}`)
                    .join(', ') || '–'}
                  {Object.keys(o.failures).length ? ` (mbind failed: ${Object.entries(o.failures).map(([k, v]) => `${k} ${v}`).join(', ')})` : ''}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {r.unmatchedObjects.length > 0 && (
        <p data-testid="apply-launch-unmatched">Never matched: {r.unmatchedObjects.map((i) => `objects[${i}]`).join(', ')} (no allocation from that site and size).</p>
      )}
      {r.threads.length > 0 && (
        <ul data-testid="apply-launch-threads">
          {r.threads.map((t) => (
            <li key={t.index} data-pinned={t.pinned.filter((p) => p.error === null).length}>
              thread {t.name ?? ''}
              {t.order !== null ? ` (creation order ${t.order})` : ''} → {t.toNodes.map((id) => `node ${id}`).join(', ')}:{' '}
              {t.pinned.length ? t.pinned.map((p) => `tid ${p.tid}${p.error ? ` failed: ${p.error}` : ' pinned'}`).join(', ') : 'no such thread'}
            </li>
          ))}
        </ul>
      )}
      {r.warnings.length > 0 && (
        <ul className="apply__warnings" data-testid="apply-launch-warnings">
          {r.warnings.map((w, i) => (
            <li key={i}>{w}</li>
          ))}
        </ul>
      )}
      {r.fallback && (
        <p className="ns-muted small">
          Whole-process equivalent (coarser): <code>{r.fallback}</code>
        </p>
      )}
    </div>
  );
}

function CallResult({ call, testId, title }: { call: Call; testId: string; title: string }) {
  if (call.kind === 'idle' || call.kind === 'running') return null;
  if (call.kind === 'error') {
    const hint = HINTS[call.error.code];
    return (
      <div className="live__alert" role="alert" data-testid={`${testId}-error`} data-code={call.error.code}>
        <p className="live__alert-title">
          {title} refused: <code>{call.error.code}</code>
        </p>
        <p>{call.error.message}</p>
        {hint && <p className="ns-muted">{hint}</p>}
      </div>
    );
  }
  return <Report report={call.report} testId={testId} title={title} ms={call.ms} />;
}

const nodeCounts = (pages: Record<string, number>) =>
  Object.entries(pages)
    .sort((a, b) => Number(a[0]) - Number(b[0]))
    .map(([node, count]) => `node ${node} ${n(count)}`)
    .join(', ') || 'none';

/** The system-wide weighted-interleave weights an apply wrote (or a rollback restored): before, asked, read back. */
function SystemWeightsTable({ report: w, testId }: { report: SystemWeightsReport; testId: string }) {
  const nodes = [...new Set([...Object.keys(w.before.weights), ...Object.keys(w.planned), ...Object.keys(w.after?.weights ?? {})])].sort((a, b) => Number(a) - Number(b));
  const auto = (v: boolean | null) => (v === null ? 'no auto file (before Linux 6.16)' : v ? 'auto (the kernel computes them)' : 'manual');
  return (
    <table className="data" data-testid={`${testId}-system-weights`} data-matched={String(w.matched)}>
      <caption>
        System-wide weighted-interleave weights ({w.operation === 'restore' ? 'restored' : w.after ? 'written' : 'dry run: not written'}; global: every
        process&rsquo;s weighted-interleave allocations use them) — {w.matched ? 'read back as asked' : w.after ? 'NOT as asked' : 'nothing written'}
      </caption>
      <thead>
        <tr>
          <th scope="col">node</th>
          <th scope="col">before</th>
          <th scope="col">{w.operation === 'restore' ? 'snapshot' : 'planned'}</th>
          <th scope="col">after</th>
        </tr>
      </thead>
      <tbody>
        {nodes.map((id) => (
          <tr key={id} data-testid={`${testId}-system-weight-${id}`}>
            <th scope="row">{id}</th>
            <td>{w.before.weights[id] ?? '–'}</td>
            <td>{w.planned[id] ?? '–'}</td>
            <td>{w.after ? (w.after.weights[id] ?? '–') : '–'}</td>
          </tr>
        ))}
        <tr>
          <th scope="row">mode</th>
          <td>{auto(w.before.auto)}</td>
          <td />
          <td>{w.after ? auto(w.after.auto) : '–'}</td>
        </tr>
      </tbody>
    </table>
  );
}

/** An apply or rollback report as the panel shows it (exported for tests). */
export function Report({ report: r, testId, title, ms }: { report: ApplyReport; testId: string; title: string; ms: number }) {
  const dry = r.dryRun;
  return (
    <div className="apply__report" data-testid={testId} data-status={r.status}>
      <h3>
        {title}: <span data-testid={`${testId}-status`}>{r.status}</span>
      </h3>
      <p>
        {statusText(r)} {r.message && <span data-testid={`${testId}-message`}>{r.message}</span>}{' '}
        <span className="ns-muted small">
          (pid {r.pid}, server {r.elapsedMs.toFixed(1)} ms, round trip {n(ms)} ms{r.jobs ? `, ${r.jobs} move_pages threads` : ''})
        </span>
      </p>
      {r.warnings.length > 0 && (
        <ul className="apply__warnings" data-testid={`${testId}-warnings`}>
          {r.warnings.map((w, i) => (
            <li key={i}>{w}</li>
          ))}
        </ul>
      )}
      <PagesTable stats={r.pages} dry={dry} testId={testId} expected={r.expected?.pagesPerNodeAfter ?? null} />
      {r.ranges.length > 0 && (
        <table className="data" data-testid={`${testId}-ranges`}>
          <caption>Page ranges</caption>
          <thead>
            <tr>
              <th scope="col" className="text">
                range
              </th>
              <th scope="col" className="text">
                action
              </th>
              <th scope="col">pages</th>
              <th scope="col">to move</th>
              <th scope="col">already in place</th>
              {!dry && <th scope="col">moved</th>}
              {!dry && <th scope="col">on target after</th>}
            </tr>
          </thead>
          <tbody>
            {r.ranges.map((x, i) => (
              <tr key={i}>
                <td className="text">
                  <code>
                    {String(x.start)}–{String(x.end)}
                  </code>
                </td>
                <td className="text">
                  {x.action} → {x.toNodes.map((id, k) => (x.weights ? `node ${id} ×${x.weights[k]}` : `node ${id}`)).join(', ')}
                  {x.thpPages ? ` (${n(x.thpPages)} in huge pages)` : ''}
                  {x.weightCheck && (
                    <span className="apply__weight-check" data-testid={`${testId}-weight-check-${i}`} data-ok={String(x.weightCheck.ok)}>
                      {' '}
                      — weights {x.weightCheck.ok ? 'verified' : 'NOT met'}: found {nodeCounts(x.weightCheck.found)}, expected {nodeCounts(x.weightCheck.expected)} (±
                      {n(x.weightCheck.cycles)} pages per node, one per weight cycle)
                    </span>
                  )}
                </td>
                <td>{n(x.pages)}</td>
                <td>{n(x.toMove)}</td>
                <td>{n(x.alreadyInPlace)}</td>
                {!dry && <td>{n(x.moved)}</td>}
                {!dry && <td>{x.onTargetAfter ?? '–'}</td>}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {r.systemWeights && <SystemWeightsTable report={r.systemWeights} testId={testId} />}
      {r.threads.length > 0 && (
        <table className="data" data-testid={`${testId}-threads`}>
          <caption>Threads {dry ? 'to pin' : r.operation === 'rollback' ? 'restored' : 'pinned'}</caption>
          <thead>
            <tr>
              <th scope="col">tid</th>
              <th scope="col" className="text">
                {r.operation === 'rollback' ? 'cpus restored' : 'to nodes → cpus'}
              </th>
              <th scope="col" className="text">
                affinity before
              </th>
              {!dry && (
                <th scope="col" className="text">
                  read back
                </th>
              )}
              {!dry && (
                <th scope="col" className="text">
                  result
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {r.threads.map((t) => (
              <tr key={t.tid} data-testid={`${testId}-thread-${t.tid}`} data-pinned={String(t.pinned)} data-cpus={cpuList(t.cpus)}>
                <th scope="row">{t.tid}</th>
                <td className="text">
                  {t.toNodes.length ? `${t.toNodes.map((id) => `node ${id}`).join(', ')} → ` : ''}cpus {cpuList(t.cpus)}
                </td>
                <td className="text">{cpuList(t.previousCpus)}</td>
                {!dry && <td className="text">{cpuList(t.readBack)}</td>}
                {!dry && <td className="text">{t.error ? `failed: ${t.error}` : t.pinned ? (r.operation === 'rollback' ? 'restored' : 'pinned') : 'not pinned'}</td>}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

function PagesTable({ stats: s, dry, testId, expected }: { stats: PageStats; dry: boolean; testId: string; expected: Record<string, number> | null }) {
  const nodes = nodesOf(s.before, s.plannedAfter, s.after, expected);
  const reasons = notMovedReasons(s.notMoved);
  return (
    <>
      <dl className="live__totals" data-testid={`${testId}-pages`}>
        <Num id={`${testId}-to-move`} label={dry ? 'pages to move' : 'pages planned to move'} value={s.toMove} />
        <Num id={`${testId}-in-place`} label="already in place" value={s.alreadyInPlace} />
        <Num id={`${testId}-not-present`} label="not present" value={s.notPresentBefore} />
        {!dry && <Num id={`${testId}-moved`} label="moved" value={s.moved} />}
        {!dry && <Num id={`${testId}-not-moved`} label="not moved" value={reasons.reduce((a, [, v]) => a + v, 0)} />}
        {!dry && <Num id={`${testId}-not-attempted`} label="not attempted (budget)" value={s.notAttempted} />}
        {!dry && s.onTargetAfter != null && <Num id={`${testId}-on-target`} label="on their planned node after" value={s.onTargetAfter} />}
      </dl>
      {!dry && reasons.length > 0 && (
        <p data-testid={`${testId}-reasons`}>
          Not moved, by reason: {reasons.map(([k, v]) => `${k} ${n(v)}`).join(', ')} (docs/apply.md explains each).
        </p>
      )}
      {nodes.length > 0 && (
        <table className="data" data-testid={`${testId}-nodes`}>
          <caption>Pages per node{dry ? ': now and as planned' : ': before, planned, achieved'}</caption>
          <thead>
            <tr>
              <th scope="col">node</th>
              <th scope="col">before</th>
              <th scope="col">planned after</th>
              {!dry && <th scope="col">after (verified)</th>}
            </tr>
          </thead>
          <tbody>
            {nodes.map((id) => (
              <tr key={id} data-testid={`${testId}-node-${id}`}>
                <th scope="row">node {id}</th>
                <td>{n(s.before[id] ?? 0)}</td>
                <td data-value={s.plannedAfter[id] ?? 0}>{n(s.plannedAfter[id] ?? 0)}</td>
                {!dry && <td data-value={s.after?.[id] ?? 0}>{s.after ? n(s.after[id] ?? 0) : '–'}</td>}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

function Num({ id, label, value }: { id: string; label: string; value: number }) {
  return (
    <div className="live__stat">
      <dt>{label}</dt>
      <dd data-testid={id} data-value={value}>
        {n(value)}
      </dd>
    </div>
  );
}
