/**
 * Live mode: record a process on the machine running `numascope serve`, watch its measured page
 * faults and page placement per window, then open the finished trace in the normal views.
 */
import { useEffect, useMemo, useRef, useState, useSyncExternalStore } from 'react';
import type { FormEvent, ReactNode } from 'react';
import { CapabilityList, formatBytes, formatCount, formatDurationUs, nodeColor } from '@numascope/viz';
import { beginWork } from '../idle';
import type { AppState } from '../idle';
import { endReason, recordingOf } from './machine';
import type { LiveState } from './machine';
import { RECORD_LIMITS } from '@numascope/protocol';
import type { LiveWindow, NodeCount, ProcessInfo, Recording as RecordingInfo } from '@numascope/protocol';
import { LiveApi } from './client';
import { pageToken } from './token';
import { splitArgv } from './argv';
import type { LiveSession } from './session';
import { liveLoop, liveSession } from './store';
import { ApplyPanel } from './ApplyPanel';
import { LoopPanel } from './LoopPanel';
import { VirtualTable } from '../views/VirtualRows';
import './live.css';

const n = (v: number) => v.toLocaleString('en-US');

export function liveAppState(s: LiveState): AppState {
  switch (s.phase.kind) {
    case 'connecting':
      return 'loading';
    case 'unauthorized':
    case 'unreachable':
    case 'gone':
    case 'failed':
      return 'error';
    case 'no-token':
      return 'empty';
    default:
      return 'ready';
  }
}

/** The loop in the address bar: `?loop=ID`, the recording it started from. */
export function loopParam(): string | null {
  const v = new URLSearchParams(window.location.search).get('loop');
  return v && /^[A-Za-z0-9_-]{1,64}$/.test(v) ? v : null;
}

function useLive(session: LiveSession): LiveState {
  return useSyncExternalStore(
    (fn) => session.subscribe(fn),
    () => session.state,
  );
}

export function LiveView({ onState }: { onState: (s: AppState) => void }) {
  const session = useMemo(() => liveSession(), []);
  const loop = useMemo(() => liveLoop(), []);
  const state = useLive(session);
  const appState = liveAppState(state);
  useEffect(() => onState(appState), [appState, onState]);
  useEffect(() => {
    if (state.phase.kind === 'connecting') void session.connect();
    // Once per session, on mount: the phase it reads is the session's first; a later
    // 'connecting' (a reconnect) is the session's own doing, not this effect's.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [session]);
  // The loop kept with the server: the one in the address bar (?loop=ID), else the one saved last.
  useEffect(() => {
    if (loop) void loop.restore(loopParam());
  }, [loop]);
  useEffect(() => {
    document.body.dataset.live = state.phase.kind;
    document.body.dataset.liveSeq = String(state.latest?.seq ?? -1);
  }, [state.phase.kind, state.latest]);
  useEffect(
    () => () => {
      delete document.body.dataset.live;
      delete document.body.dataset.liveSeq;
    },
    [],
  );

  const p = state.phase;
  return (
    <div className="live" data-testid="live" data-phase={p.kind}>
      <h1>Live recording</h1>
      {p.kind === 'no-token' && <NotConnected />}
      {p.kind === 'connecting' && <p className="ns-muted">Connecting to numascope serve…</p>}
      {p.kind === 'unauthorized' && (
        <Alert testId="live-unauthorized" title={`The server refused this page's token (HTTP ${p.status}).`}>
          <p>
            The token is wrong or stale: each start of <code>numascope serve</code> makes a new one. Restart numascope serve and use its new
            URL.
          </p>
          <p className="ns-muted">Server: {p.message}</p>
        </Alert>
      )}
      {p.kind === 'unreachable' && (
        <Alert testId="live-unreachable" title="numascope serve does not answer.">
          <p>{p.message}</p>
          <button type="button" onClick={() => void session.connect()}>
            Try again
          </button>
        </Alert>
      )}
      {state.probe && p.kind !== 'unauthorized' && p.kind !== 'unreachable' && <Machine state={state} />}
      {(p.kind === 'ready' || p.kind === 'starting') && <StartForm state={state} session={session} />}
      {recordingOf(p) && (p.kind === 'running' || p.kind === 'stopping' || p.kind === 'downloading' || p.kind === 'ended' || p.kind === 'gone' || p.kind === 'failed') && (
        <Recording state={state} session={session} />
      )}
      {session.client instanceof LiveApi && p.kind !== 'unauthorized' && p.kind !== 'unreachable' && p.kind !== 'connecting' && (
        <RecentRecordings api={session.client} phase={p.kind} />
      )}
      {loop && <LoopPanel loop={loop} busy={p.kind === 'starting' || p.kind === 'running' || p.kind === 'stopping' || p.kind === 'downloading'} />}
      {state.probe && session.client && p.kind !== 'unauthorized' && p.kind !== 'unreachable' && (
        <ApplyPanel
          api={session.client}
          processes={state.processes ?? []}
          recordedPid={recordedPid(state)}
          onRefresh={() => void session.refreshProcesses()}
        />
      )}
      {p.kind === 'failed' && !recordingOf(p) && (
        <Alert testId="live-failed" title="The recording failed.">
          <p>{p.error.message}</p>
        </Alert>
      )}
    </div>
  );
}

/**
 * This server's recordings (`GET /api/recordings`), newest first: each finished one has a link,
 * `?token=…&recording=ID`, that opens its trace in the views and survives a reload. Re-read when
 * a recording of this page changes phase (started, ended).
 */
export function RecentRecordings({ api, phase }: { api: LiveApi; phase: string }) {
  const [list, setList] = useState<RecordingInfo[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [again, setAgain] = useState(0);
  // The idle signal waits for the list (the home page shows it beside the samples).
  const [pending, setPending] = useState<(() => void) | null>(null);
  useEffect(() => {
    let live = true;
    const done = beginWork();
    setPending(() => done);
    api.recordings().then(
      (r) => {
        if (!live) return;
        setList(r.slice().reverse());
        setError(null);
      },
      (e: Error) => live && setError(e.message),
    ).finally(() => live && setPending(null));
    return () => {
      live = false;
      done();
    };
  }, [api, phase, again]);
  // Ends the work once its answer is committed (or the component is gone).
  useEffect(() => {
    if (pending === null) return;
    return pending;
  }, [pending]);
  const token = pageToken() ?? '';
  return (
    <section className="panel" aria-labelledby="live-recent-heading" data-testid="live-recent">
      <h2 id="live-recent-heading">Recordings on this server</h2>
      <p className="ns-muted hint">
        Kept by <code>numascope serve</code> until it stops. A recording's link opens its trace (reload-safe; the link holds this session's
        token, so keep it to yourself).{' '}
        <button type="button" onClick={() => setAgain((x) => x + 1)}>
          Refresh
        </button>
      </p>
      {error && (
        <p className="live__error" role="alert">
          The list of recordings could not be read: {error}
        </p>
      )}
      {list && list.length === 0 && <p className="ns-muted">None yet.</p>}
      {list && list.length > 0 && (
        <ul className="live__recent">
          {list.map((r) => (
            <li key={r.id} data-testid="live-recent-item" data-id={r.id} data-status={r.status}>
              {r.status === 'finished' ? (
                <a href={`?token=${encodeURIComponent(token)}&recording=${encodeURIComponent(r.id)}`} data-testid="live-recent-open">
                  {r.id}
                </a>
              ) : (
                <code>{r.id}</code>
              )}{' '}
              · {new Date(r.startedAtUnixMs).toLocaleString('en-US')} · {r.target.command ? r.target.command.join(' ') : `pid ${r.target.pid}`} ·{' '}
              {r.status === 'finished' && r.summary
                ? `${formatDurationUs(r.summary.durationUs)}, ${formatBytes(r.summary.sizeBytes)}`
                : r.status === 'failed'
                  ? `failed: ${r.error?.message ?? 'no reason given'}`
                  : 'recording…'}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function Alert({ testId, title, children }: { testId: string; title: string; children?: ReactNode }) {
  return (
    <div className="live__alert" role="alert" data-testid={testId}>
      <p className="live__alert-title">{title}</p>
      {children}
    </div>
  );
}

function NotConnected() {
  return (
    <div className="live__alert live__alert--info" data-testid="live-not-connected">
      <p className="live__alert-title">Not connected to a numascope server.</p>
      <p>
        Live mode records a process on the machine you want to profile. On that machine, run <code>numascope serve</code> and open the URL
        it prints, e.g. <code>http://127.0.0.1:8737/?token=…</code> (the token is new at each start). Over SSH, forward the port first:{' '}
        <code>ssh -L 8737:127.0.0.1:8737 HOST</code>, then open the printed URL here.
      </p>
      <p className="ns-muted">
        Without a server you can still open recorded traces (<code>numascope record</code>) and the samples.
      </p>
    </div>
  );
}

function Machine({ state }: { state: LiveState }) {
  const nodes = state.topology?.nodes ?? [];
  return (
    <section className="panel" aria-labelledby="live-machine-heading">
      <h2 id="live-machine-heading">This machine{state.topology?.name ? `: ${state.topology.name}` : ''}</h2>
      <p data-testid="live-machine">
        {formatCount(nodes.length, 'NUMA node')}, {formatCount(nodes.reduce((a, x) => a + (x.cpus?.length ?? 0), 0), 'cpu')}
      </p>
      <h3>What a recording here can measure</h3>
      <p className="ns-muted hint">From the server's capability probe. Hover or focus a badge for how the metric is obtained, or why it is unavailable.</p>
      <div data-testid="live-capabilities">
        <CapabilityList capabilities={state.probe?.capabilities ?? []} />
      </div>
    </section>
  );
}

/** The machine's automatic NUMA balancing as the probe read it: 'on', 'off', or null (not read). */
function balancingState(state: LiveState): string | null {
  return state.probe?.placement?.find((f) => f.id === 'numa-balancing')?.state ?? null;
}

/** `--numa-balancing on` is offered where it is off and there are two nodes or more to balance between. */
export function balancingOffered(state: LiveState): boolean {
  return (state.topology?.nodes.length ?? 0) >= 2 && balancingState(state) === 'off';
}

/**
 * What can show memory accesses live on this machine, said once: the source in use, or why
 * there is none and what would give one. PMU samples (IBS, PEBS) are counted live when the
 * recording has them, and then hinting faults are not; uncore counters give bandwidth, not accesses.
 */
export function accessesNote(state: LiveState, w: LiveWindow | null): { shown: boolean; text: string } {
  const nodes = state.topology?.nodes.length ?? 0;
  if (w?.accessSource === 'pmu-samples') {
    return {
      shown: true,
      text: 'Accesses per node: PMU memory samples (AMD IBS / Intel PEBS), counted live. Local or remote by the sample’s data source (local DRAM, remote DRAM or cache), else by the node of the cpu against the node of the page; samples served by the cpu’s own caches are not counted. These are samples of accesses, one per sampling period, not every access; hinting faults are not added to them.',
    };
  }
  if (w?.accessSource === 'hinting-faults') {
    return {
      shown: true,
      text: 'Accesses per node: NUMA hinting faults (automatic NUMA balancing samples a share of each page’s accesses by unmapping it for a moment). Local: from a cpu of the node the memory is on; remote: from another node. These are samples of accesses, not every access.',
    };
  }
  const pmu = state.probe?.sources.filter((x) => /ibs|pebs|pmu|mem/i.test(x.id)) ?? [];
  const pmuWhy =
    pmu.length > 0 && pmu.every((x) => !x.available)
      ? ` No PMU memory sampling here: ${pmu[0]!.reason}.`
      : pmu.some((x) => x.available)
        ? ' This machine has PMU memory sampling: a recording that uses it counts its samples as accesses live.'
        : '';
  if (nodes === 1) {
    return {
      shown: false,
      text: `No local/remote accesses live: this machine has one NUMA node, so every access is local and automatic NUMA balancing has nothing to sample.${pmuWhy} On a machine with two nodes or more, switch automatic NUMA balancing on for the recording (the Start form offers it where it is off) to see local and remote accesses per node.`,
    };
  }
  const bal = balancingState(state);
  const fix =
    bal === 'off'
      ? 'Tick "Switch automatic NUMA balancing on" in the Start form (numascope record --numa-balancing on, root) to see them from its hinting faults.'
      : bal === 'on'
        ? 'Automatic NUMA balancing is on, but no hinting fault was classified yet: they come once its scanner has passed over the pages (seconds), and only with the page_fault_user tracepoint (root or perf_event_paranoid ≤ 1).'
        : 'Automatic NUMA balancing could not be read here (/proc/sys/kernel/numa_balancing).';
  return { shown: false, text: `No local/remote accesses live yet.${pmuWhy} ${fix}` };
}

function StartForm({ state, session }: { state: LiveState; session: LiveSession }) {
  const [mode, setMode] = useState<'command' | 'pid'>('command');
  const [filter, setFilter] = useState('');
  const [showKernel, setShowKernel] = useState(false);
  const [pid, setPid] = useState<number | null>(null);
  const [command, setCommand] = useState('');
  const [duration, setDuration] = useState('');
  const [allocSites, setAllocSites] = useState(true);
  const offerBalancing = balancingOffered(state);
  const [balancing, setBalancing] = useState(false);
  const [formError, setFormError] = useState<string | null>(null);
  const busy = state.phase.kind === 'starting';
  const shown = useMemo(() => filterProcesses(state.processes ?? [], filter, { kernelThreads: showKernel }), [state.processes, filter, showKernel]);
  const kernelCount = useMemo(() => (state.processes ?? []).filter(isKernelThread).length, [state.processes]);
  // A search that leaves one process you can attach to chooses it (Start then records it).
  const chosen = chosenPid(pid, shown);

  function submit(e: FormEvent) {
    e.preventDefault();
    setFormError(null);
    const d = duration.trim() === '' ? undefined : Number(duration);
    if (d !== undefined && !(d > 0 && d <= RECORD_LIMITS.maxDurationS)) {
      return setFormError(`The duration must be a number of seconds above 0 (at most ${RECORD_LIMITS.maxDurationS}, 30 days), or empty.`);
    }
    if (mode === 'pid') {
      if (chosen === null) return setFormError('Pick a process from the list.');
      void session.start({ pid: chosen, durationS: d ?? 10, ...(offerBalancing && balancing ? { numaBalancing: 'on' as const } : {}) });
    } else {
      let argv: string[];
      try {
        argv = splitArgv(command);
      } catch (err) {
        return setFormError((err as Error).message);
      }
      if (argv.length === 0) return setFormError('Type the command to launch, e.g. ./app --size 4G.');
      // allocSites is sent only when switched off: the collector's default is on.
      void session.start({
        command: argv,
        ...(d === undefined ? {} : { durationS: d }),
        ...(allocSites ? {} : { allocSites: false }),
        ...(offerBalancing && balancing ? { numaBalancing: 'on' as const } : {}),
      });
    }
  }

  return (
    <section className="panel" aria-labelledby="live-start-heading">
      <h2 id="live-start-heading">Start a recording</h2>
      <form onSubmit={submit} className="live__form" data-testid="live-form">
        {offerBalancing && (
          <label
            className="live__balancing"
            title="numascope record --numa-balancing on: /proc/sys/kernel/numa_balancing is set to 1 for the recording and restored afterwards (needs root). The kernel then samples accesses with NUMA hinting faults, which Live shows per node as local and remote, and it may migrate pages and threads."
          >
            <input type="checkbox" checked={balancing} onChange={(e) => setBalancing(e.target.checked)} data-testid="live-numa-balancing" /> Switch
            automatic NUMA balancing on for this recording (it is off): its hinting faults show local and remote accesses per node live
          </label>
        )}
        <fieldset className="live__mode">
          <legend>What to record</legend>
          <label>
            <input type="radio" name="live-mode" checked={mode === 'command'} onChange={() => setMode('command')} data-testid="live-mode-command" />{' '}
            Launch a command
          </label>
          <label>
            <input type="radio" name="live-mode" checked={mode === 'pid'} onChange={() => setMode('pid')} data-testid="live-mode-pid" /> Attach
            to a running process
          </label>
        </fieldset>
        {mode === 'command' ? (
          <div className="live__field">
            <label htmlFor="live-command">Command (argv; quotes group words; run as the server's user, program found through its PATH)</label>
            <input
              id="live-command"
              data-testid="live-command"
              value={command}
              onChange={(e) => setCommand(e.target.value)}
              placeholder="./app --size 4G"
              spellCheck={false}
              autoComplete="off"
            />
            <label title="Preloads the allocation-site shim into the command (LD_PRELOAD): every allocation of at least 64 KiB and a sample of smaller ones, with its call stack, so that pages and issues name the code that allocated them. Off: numascope record --no-alloc-sites.">
              <input type="checkbox" checked={allocSites} onChange={(e) => setAllocSites(e.target.checked)} data-testid="live-alloc-sites" /> Record
              allocation sites (which code allocated each object)
            </label>
          </div>
        ) : (
          <div className="live__field">
            <label htmlFor="live-filter">Search processes (name, pid or command)</label>
            <div className="live__row">
              <input id="live-filter" data-testid="live-filter" value={filter} onChange={(e) => setFilter(e.target.value)} autoComplete="off" />
              <button type="button" onClick={() => void session.refreshProcesses()}>
                Refresh
              </button>
            </div>
            <label title="Kernel threads (kthreadd's children: no command line, no memory of their own) cannot be recorded">
              <input type="checkbox" checked={showKernel} onChange={(e) => setShowKernel(e.target.checked)} data-testid="live-show-kernel" /> Show
              kernel threads ({n(kernelCount)})
            </label>
            <label htmlFor="live-process">
              Process ({n(shown.length)} of {n(state.processes?.length ?? 0)}; ↑/↓ to choose)
            </label>
            <select
              id="live-process"
              data-testid="live-process"
              size={10}
              value={chosen === null ? '' : String(chosen)}
              onChange={(e) => setPid(e.target.value ? Number(e.target.value) : null)}
            >
              {shown.map((pr) => (
                <option key={pr.pid} value={pr.pid} disabled={!pr.own} title={pr.own ? undefined : 'another user: attaching needs root'}>
                  {pr.pid} {pr.name} · {formatCount(pr.threads, 'thread')}
                  {pr.rssBytes !== null ? ` · ${formatBytes(pr.rssBytes)}` : ''}
                  {pr.command.length ? ` — ${pr.command.join(' ')}` : ''}
                  {pr.own ? '' : ' (other user)'}
                </option>
              ))}
            </select>
          </div>
        )}
        <div className="live__field live__field--short">
          <label htmlFor="live-duration">Duration, seconds {mode === 'pid' ? '(default 10)' : '(empty: until the command exits or you stop)'}</label>
          <input id="live-duration" data-testid="live-duration" inputMode="decimal" value={duration} onChange={(e) => setDuration(e.target.value)} />
        </div>
        <button type="submit" className="primary" disabled={busy} data-testid="live-start">
          {busy ? 'Starting…' : 'Start recording'}
        </button>
        {formError && (
          <p className="live__error" role="alert" data-testid="live-form-error">
            {formError}
          </p>
        )}
        {state.startError && (
          <p className="live__error" role="alert" data-testid="live-start-error">
            The server refused to start it ({state.startError.code}): {state.startError.message}
          </p>
        )}
      </form>
    </section>
  );
}

/**
 * A kernel thread (a child of kthreadd): `/api/processes` gives it no command line and no RSS (it
 * has no memory map of its own), so there is nothing to record. The API has no parent pid, so
 * this is the test; a zombie looks the same, and cannot be recorded either.
 */
export function isKernelThread(p: ProcessInfo): boolean {
  return p.rssBytes === null && p.command.length === 0;
}

/**
 * The process Start records: the one picked, while it is still listed; else the only process in
 * the list that can be attached to (a search narrowed to one); else none.
 */
export function chosenPid(picked: number | null, shown: readonly ProcessInfo[]): number | null {
  if (picked !== null && shown.some((p) => p.pid === picked)) return picked;
  const own = shown.filter((p) => p.own);
  return own.length === 1 ? own[0]!.pid : null;
}

/** The processes matching `filter` (pid exactly, or part of the name or command, any case); kernel threads only when asked for. */
export function filterProcesses(list: ProcessInfo[], filter: string, options: { kernelThreads?: boolean } = {}): ProcessInfo[] {
  const f = filter.trim().toLowerCase();
  const kept = options.kernelThreads ? list : list.filter((p) => !isKernelThread(p));
  if (!f) return kept;
  return kept.filter((p) => String(p.pid) === f || p.name.toLowerCase().includes(f) || p.command.join(' ').toLowerCase().includes(f));
}

function Recording({ state, session }: { state: LiveState; session: LiveSession }) {
  const p = state.phase;
  const rec = recordingOf(p)!;
  const w = state.latest;
  const nodeIds = (state.topology?.nodes ?? []).map((x) => x.id);
  const target = rec.target.command ? rec.target.command.join(' ') : `pid ${rec.target.pid}`;
  return (
    <section className="panel" aria-labelledby="live-rec-heading" data-testid="live-recording" data-recording={rec.id}>
      <h2 id="live-rec-heading">
        Recording <code>{rec.id}</code>: {target}
        {w?.pid ? ` (pid ${w.pid})` : ''}
      </h2>
      <div className="live__status" aria-live="polite" data-testid="live-status">
        {p.kind === 'running' && <span className="live__dot" aria-hidden="true" />}
        {p.kind === 'running' && 'Recording…'}
        {p.kind === 'stopping' && 'Stopping: the server writes the trace…'}
        {p.kind === 'downloading' && `${endReason(p.end)} Downloading the trace…`}
        {p.kind === 'ended' &&
          (liveLoop()?.isAfter(rec.id)
            ? `${endReason(p.end)} This is the loop's second recording: it fills in “after” in the table below (its trace opens from there).`
            : `${endReason(p.end)} The trace is open in the views.`)}
        {p.kind === 'failed' && `The recording failed (${p.error.code}): ${p.error.message}`}
        {p.kind === 'gone' && 'Server gone: the live connection closed unexpectedly.'}
        {p.kind === 'running' && (
          <button type="button" className="primary" onClick={() => void session.stop()} data-testid="live-stop">
            Stop
          </button>
        )}
        {(p.kind === 'ended' || p.kind === 'failed' || p.kind === 'gone') && (
          <button type="button" onClick={() => session.reset()} data-testid="live-new">
            New recording
          </button>
        )}
      </div>
      {p.kind === 'gone' && (
        <Alert testId="live-gone" title="Server gone.">
          <p>{p.message}</p>
        </Alert>
      )}
      {p.kind === 'failed' && (
        <Alert testId="live-failed" title={`The recording failed: ${p.error.code}`}>
          <p>{p.error.message}</p>
        </Alert>
      )}
      {p.kind === 'ended' && (
        <ApplyNote pid={p.end.summary?.pid ?? w?.pid ?? null} exited={p.end.summary?.stopReason === 'process-exit'} leftRunning={p.end.summary?.leftRunning ?? false} />
      )}
      <p className="ns-muted hint" data-testid="live-honesty">
        Measured: page faults (sampled: every fault while a thread faults less than the sampling rate, sampled above it, so counts are
        samples; by the node of the faulted page, asked with move_pages) and page placement (4 KiB pages by their current node: every
        resident page once the placement scan has run, about once a second and at the stop, plus the pages faults showed in between).
        Thread cpu/node: where each thread last ran (/proc). Nothing here is estimated.
      </p>
      <AccessesNote state={state} w={w} />
      <BandwidthNote w={w} />
      {w ? <LiveNumbers w={w} windows={state.windows} nodeIds={nodeIds} /> : <p className="ns-muted">Waiting for the first window…</p>}
    </section>
  );
}

/** What shows accesses live here, or why nothing does and what would: one line, once per recording. */
function AccessesNote({ state, w }: { state: LiveState; w: LiveWindow | null }) {
  const note = accessesNote(state, w);
  return (
    <p className={note.shown ? 'ns-muted hint' : 'notice'} data-testid="live-accesses-note" data-shown={note.shown}>
      {note.text}
    </p>
  );
}

/**
 * Where the per-node bandwidth column comes from, or why there is none: one line. The uncore
 * counters count the whole machine's memory-controller traffic, not only the recorded process.
 */
export function bandwidthNote(w: LiveWindow | null): { shown: boolean; text: string } {
  if (w?.bandwidthSource === 'uncore') {
    return {
      shown: true,
      text: 'Bandwidth per node: memory-controller bytes read and written per second in the last window, measured by the uncore counters (CAS counts × 64 bytes, scaled where the kernel multiplexed them): the whole machine’s traffic, not only this process’s. A socket split into several nodes is counted per socket and shown for none of them.',
    };
  }
  return {
    shown: false,
    text: 'No bandwidth per node live: this recording reads no memory-controller uncore counters (none on this machine, not permitted — system-wide counting needs CAP_PERFMON, CAP_SYS_ADMIN or perf_event_paranoid ≤ 0 — or turned off with --no-uncore).',
  };
}

function BandwidthNote({ w }: { w: LiveWindow | null }) {
  const note = bandwidthNote(w);
  return (
    <p className={note.shown ? 'ns-muted hint' : 'ns-muted'} data-testid="live-bandwidth-note" data-shown={note.shown}>
      {note.text}
    </p>
  );
}

/** Bytes per second, binary units ("1.50 GiB/s"); "–" when not counted apart. */
export function formatRate(bytesPerS: number | null): string {
  return bytesPerS === null ? '–' : `${formatBytes(bytesPerS)}/s`;
}

/** A node's memory-controller traffic in the last window: read / write (or both together), per second. */
function BandwidthCells({ w, node, testKey }: { w: LiveWindow; node: number; testKey: string }) {
  const b = w.bandwidth.find((x) => x.node === node);
  return (
    <td
      data-testid={`live-node-${testKey}-bandwidth`}
      data-read={b?.readBytesPerS ?? ''}
      data-write={b?.writeBytesPerS ?? ''}
      data-total={b?.bytesPerS ?? ''}
    >
      {!b ? '–' : b.readBytesPerS === null && b.writeBytesPerS === null ? `${formatRate(b.bytesPerS)} (read + write)` : `${formatRate(b.readBytesPerS)} / ${formatRate(b.writeBytesPerS)}`}
    </td>
  );
}

function ApplyNote({ pid, exited, leftRunning }: { pid: number | null; exited: boolean; leftRunning: boolean }) {
  return (
    <p className="ns-muted hint" data-testid="live-apply-note">
      {exited
        ? `This process has exited: a plan can only be applied to a running process.`
        : !leftRunning
          ? `This process was terminated at the stop (killOnStop): a plan can only be applied to a running process.`
          : `pid ${pid ?? 'PID'} is still running (numascope left it running). Use “Record → recommend → apply → record again” below, or load a plan for it in “Apply a plan” (or run numascope apply PLAN -p ${pid ?? 'PID'}).`}
    </p>
  );
}

/** The pid of the current or last recording (the apply panel's default target). */
function recordedPid(s: LiveState): number | null {
  const p = s.phase;
  if ((p.kind === 'ended' || p.kind === 'downloading') && p.end.summary?.pid) return p.end.summary.pid;
  const rec = recordingOf(p);
  return s.latest?.pid ?? rec?.target.pid ?? null;
}

function count(list: NodeCount[], node: number): number {
  return list.find((c) => c.node === node)?.count ?? 0;
}

const signed = (v: number) => (v > 0 ? `+${n(v)}` : v < 0 ? `−${n(-v)}` : '0');

/** A node's sampled accesses to its memory since the start: local / remote, and the local share. */
function AccessCells({ w, node, testKey }: { w: LiveWindow; node: number; testKey: string }) {
  const a = w.totals.accesses.find((x) => x.node === node);
  const total = a ? a.local + a.remote : 0;
  return (
    <>
      <td data-testid={`live-node-${testKey}-accesses`} data-local={a?.local ?? 0} data-remote={a?.remote ?? 0}>
        {a ? `${n(a.local)} / ${n(a.remote)}` : '–'}
      </td>
      <td data-testid={`live-node-${testKey}-local`} data-value={total > 0 ? a!.local / total : ''}>
        {total > 0 ? `${((a!.local / total) * 100).toFixed(1)}%` : '–'}
      </td>
    </>
  );
}

export function LiveNumbers({ w, windows, nodeIds }: { w: LiveWindow; windows: LiveWindow[]; nodeIds: number[] }) {
  const rows = useMemo(() => {
    const ids = new Set<number>(nodeIds);
    for (const c of [...w.totals.faultsByNode, ...w.totals.pagesByNode]) ids.add(c.node);
    return [...ids].sort((a, b) => (a < 0 ? 1 : b < 0 ? -1 : a - b));
  }, [w, nodeIds]);
  const prev = windows.length >= 2 ? windows[windows.length - 2]! : null;
  const pagesChange = (node: number) => count(w.totals.pagesByNode, node) - (prev ? count(prev.totals.pagesByNode, node) : 0);
  const threadsOn = (node: number) => w.threads.filter((t) => t.alive && t.node === node).length;
  const hasAccesses = w.accessSource !== null || w.totals.accesses.length > 0;
  const hasBandwidth = w.bandwidthSource !== null;
  const accessWords = w.accessSource === 'pmu-samples' ? 'PMU samples' : 'hinting faults';
  return (
    <>
      <dl className="live__totals">
        <Stat id="live-elapsed" label="elapsed" value={w.elapsedUs} text={formatDurationUs(w.elapsedUs)} />
        <Stat id="live-faults" label="page-fault samples (a fault each up to the sampling rate, one of many above it)" value={w.totals.faults} />
        <Stat id="live-pages" label="pages resident (scan) or faulted (measured)" value={w.totals.pages} />
        <Stat id="live-pages-moved" label="pages moved since first seen (now on another node; measured)" value={w.totals.pagesMoved} />
        <Stat id="live-threads-seen" label="threads seen" value={w.threadsSeen} />
        <Stat id="live-lost" label="lost samples" value={w.lostSamples} warn={w.lostSamples > 0} />
        <Stat id="live-windows" label="windows" value={w.seq + 1} />
      </dl>
      <FaultChart windows={windows} nodeIds={rows} />
      <div className="live__tables">
        <table className="data" data-testid="live-nodes">
          <caption>Per node, since the start (measured)</caption>
          <thead>
            <tr>
              <th scope="col">node</th>
              <th scope="col">page faults</th>
              <th scope="col">pages (current node)</th>
              <th scope="col">pages, change in the last window</th>
              <th scope="col">faults, last window</th>
              {hasAccesses && (
                <>
                  <th scope="col">accesses to its memory: local / remote ({accessWords}, since the start)</th>
                  <th scope="col">local share</th>
                </>
              )}
              {hasBandwidth && <th scope="col">memory bandwidth, last window: read / write (uncore, whole machine)</th>}
              <th scope="col">threads running there now</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((node) => {
              const key = node < 0 ? 'unknown' : String(node);
              return (
                <tr key={node}>
                  <th scope="row">
                    <span className="live__swatch" style={{ background: nodeColor(node, nodeIds) }} aria-hidden="true" />
                    {node < 0 ? 'unknown' : `node ${node}`}
                  </th>
                  <td data-testid={`live-node-${key}-faults`} data-value={count(w.totals.faultsByNode, node)}>
                    {n(count(w.totals.faultsByNode, node))}
                  </td>
                  <td data-testid={`live-node-${key}-pages`} data-value={count(w.totals.pagesByNode, node)}>
                    {n(count(w.totals.pagesByNode, node))}
                  </td>
                  <td data-testid={`live-node-${key}-pages-change`} data-value={pagesChange(node)}>
                    {signed(pagesChange(node))}
                  </td>
                  <td>{n(count(w.faultsByNode, node))}</td>
                  {hasAccesses && <AccessCells w={w} node={node} testKey={key} />}
                  {hasBandwidth && <BandwidthCells w={w} node={node} testKey={key} />}
                  <td data-testid={`live-node-${key}-threads`} data-value={threadsOn(node)}>
                    {n(threadsOn(node))}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
        {/* Every thread (a virtualised list past 300 rows): no cap. */}
        <VirtualTable
          rows={w.threads}
          columns={5}
          testId="live-threads"
          head={
            <>
              <caption>Threads now ({n(w.threads.length)})</caption>
              <thead>
                <tr>
                  <th scope="col">tid</th>
                  <th scope="col" className="text">
                    name
                  </th>
                  <th scope="col">cpu</th>
                  <th scope="col">node</th>
                  <th scope="col">faults, last window</th>
                </tr>
              </thead>
            </>
          }
          row={(t) => (
            <tr key={t.tid} data-testid={`live-thread-${t.tid}`} className={t.alive ? undefined : 'ns-muted'}>
              <th scope="row">{t.tid}</th>
              <td className="text">
                {t.name}
                {t.alive ? '' : ' (exited)'}
              </td>
              <td>{t.cpu >= 0 ? t.cpu : '–'}</td>
              <td>{t.node >= 0 ? t.node : '–'}</td>
              <td>{n(t.faults)}</td>
            </tr>
          )}
        />
      </div>
    </>
  );
}

function Stat({ id, label, value, text, warn }: { id: string; label: string; value: number; text?: string; warn?: boolean }) {
  return (
    <div className={warn ? 'live__stat live__stat--warn' : 'live__stat'}>
      <dt>{label}</dt>
      <dd data-testid={id} data-value={value}>
        {text ?? n(value)}
      </dd>
    </div>
  );
}

const CHART_W = 720;
const CHART_H = 140;

/** Page faults per window, stacked by the node of the faulted page; the last 240 windows (one minute). */
function FaultChart({ windows, nodeIds }: { windows: LiveWindow[]; nodeIds: number[] }) {
  const ref = useRef<SVGSVGElement>(null);
  const max = Math.max(1, ...windows.map((w) => w.faults));
  const slot = CHART_W / 240;
  return (
    <figure className="live__chart">
      <figcaption>Page faults per 250 ms window, by node of the faulted page (measured); last {n(windows.length)} windows, max {n(max)}</figcaption>
      <svg ref={ref} viewBox={`0 0 ${CHART_W} ${CHART_H}`} width="100%" height={CHART_H} role="img" aria-label="Page faults per window by node" data-testid="live-chart">
        <line x1={0} x2={CHART_W} y1={CHART_H - 0.5} y2={CHART_H - 0.5} className="live__axis" />
        {windows.map((w, i) => {
          let y = CHART_H;
          return (
            <g key={w.seq} transform={`translate(${i * slot},0)`}>
              {nodeIds.map((node) => {
                const c = count(w.faultsByNode, node);
                if (c === 0) return null;
                const h = (c / max) * (CHART_H - 4);
                y -= h;
                return <rect key={node} x={0} y={y} width={Math.max(1, slot - 0.5)} height={h} fill={nodeColor(node, nodeIds.filter((x) => x >= 0))} />;
              })}
            </g>
          );
        })}
      </svg>
    </figure>
  );
}
