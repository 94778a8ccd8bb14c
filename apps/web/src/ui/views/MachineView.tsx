import { useEffect, useMemo, useRef, useState } from 'react';
import type { ChangeEvent } from 'react';
import { LatencyCurveChart } from '@numascope/viz';
import { chooseMachine, listPresets } from '@numascope/policy-engine';
import type { TraceSummary } from '@numascope/policy-engine';
import type { BenchRun } from '@numascope/protocol';
import { browserDeps, LiveApi } from '../live/client';
import { DesktopBenchApi, desktopBenchBridge } from '../live/desktop';
import type { BenchClient } from '../live/client';
import { pageToken } from '../live/token';
import { calibrationMatrix, embeddedCalibration, parseCalibrationFile, sideBySide } from '../selectors/machine';
import type { CalibrationEntry, ModelColumn } from '../selectors/machine';

/** How often a running benchmark is polled, ms. */
const POLL_MS = 300;

/**
 * The Machine view: which model the engine replays this trace on and why; calibrated vs preset
 * vs estimated figures side by side with each number's provenance; a calibration's measured
 * matrices and loaded-latency curves; loading a calibration file; and, against `numascope
 * serve`, measuring this machine (`numascope bench --quick`) with progress and cancel.
 */
export function MachineView({ summary, bench }: { summary: TraceSummary; bench?: BenchClient | null }) {
  const manifest = summary.manifest;
  const recorded = manifest.machine;
  const embedded = useMemo(() => embeddedCalibration(manifest), [manifest]);
  const [file, setFile] = useState<CalibrationEntry | null>(null);
  const [fileError, setFileError] = useState<string | null>(null);
  const [measured, setMeasured] = useState<CalibrationEntry | null>(null);
  const presets = useMemo(() => listPresets(), []);
  const [presetId, setPresetId] = useState<string>(() => (presets.find((p) => p.machine.nodes.length === recorded.nodes.length) ?? presets[0]!).id);
  const client = useMemo<BenchClient | null>(() => {
    if (bench !== undefined) return bench;
    const desktop = desktopBenchBridge();
    if (desktop) return new DesktopBenchApi(desktop);
    const token = pageToken();
    return token ? new LiveApi(token, browserDeps()) : null;
  }, [bench]);

  // The calibration shown in detail and in the "calibrated" column: measured now, else a loaded file, else the embedded one.
  const calibrated = measured ?? file ?? embedded;
  const preset = presets.find((p) => p.id === presetId) ?? presets[0]!;
  const columns: ModelColumn[] = [
    ...(calibrated ? [{ key: 'calibrated', label: `calibrated (${calibrated.label})`, kind: 'calibrated' as const, machine: calibrated.machine }] : []),
    { key: 'preset', label: `preset ${preset.id}`, kind: 'preset', machine: preset.machine },
    { key: 'estimated', label: `estimated (recorded machine, ${recorded.source})`, kind: 'estimated', machine: recorded },
  ];
  // `columns` is a new array each render, built only from these three: they are its dependencies.
  const rows = useMemo(() => sideBySide(columns), [calibrated, preset, recorded]); // eslint-disable-line react-hooks/exhaustive-deps
  const used = useMemo(() => chooseMachine(manifest), [manifest]);
  const withFile = useMemo(() => (file ? chooseMachine(manifest, { machine: { machine: file.machine, name: file.label.replace(/^file /, '') } }) : null), [manifest, file]);

  async function onFile(e: ChangeEvent<HTMLInputElement>) {
    const f = e.target.files?.[0];
    e.target.value = '';
    if (!f) return;
    const r = parseCalibrationFile(await f.text(), f.name);
    if (!r.ok) {
      setFileError(r.error);
      return;
    }
    setFileError(null);
    setFile({ origin: 'loaded-file', label: `file ${f.name}`, machine: r.machine, calibration: r.calibration });
  }

  return (
    <div className="machine-view" data-testid="machine-view">
      <section className="panel" aria-labelledby="machine-choice-heading">
        <h2 id="machine-choice-heading">Machine model</h2>
        <p data-testid="machine-choice" data-used={used.used}>
          This trace's views replay on <strong>{used.machine.name}</strong> ({used.used}): {used.reason}.
        </p>
        {used.notes.map((n) => (
          <p key={n} className="ns-muted">
            {n}
          </p>
        ))}
        {withFile && (
          <p data-testid="machine-choice-file" data-used={withFile.used}>
            <code>numascope-analyze --machine {file!.label.replace(/^file /, '')}</code> would use {withFile.used}: {withFile.reason}
            {withFile.notes.length > 0 && ` (${withFile.notes.join('; ')})`}. The views here keep the model above.
          </p>
        )}
        <p className="ns-muted">
          Order (docs/engine.md, "Which machine model"): <code>--target-machine</code>, then the trace's embedded calibration, then{' '}
          <code>--machine</code> of the recorded machine, then the recorded machine.
        </p>
        <div className="machine-actions">
          <label>
            Load a calibration file (<code>numascope bench -o FILE</code>):{' '}
            <input type="file" accept=".json,application/json" data-testid="calibration-file" onChange={(e) => void onFile(e)} />
          </label>
          <label>
            Preset to compare:{' '}
            <select value={presetId} onChange={(e) => setPresetId(e.target.value)} data-testid="machine-preset">
              {presets.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.id} ({p.machine.nodes.length} nodes)
                </option>
              ))}
            </select>
          </label>
        </div>
        {fileError && (
          <p role="alert" className="notice notice--error" data-testid="calibration-error">
            {fileError}
          </p>
        )}
        {file && (
          <p data-testid="calibration-loaded">
            Loaded {file.label}: {file.machine.nodes.length} node{file.machine.nodes.length === 1 ? '' : 's'}, measured {file.calibration.date}
            {file.calibration.partial ? ' (partial run)' : ''}.
          </p>
        )}
        {client ? <MeasurePanel client={client} onResult={setMeasured} traceNodes={recorded.nodes.length} /> : (
          <p className="ns-muted" data-testid="measure-unavailable">
            Measuring this machine needs the desktop app or the web app served by <code>numascope serve</code> (or <code>numascope bench</code> in a terminal).
          </p>
        )}
      </section>

      <section className="panel" aria-labelledby="side-heading">
        <h2 id="side-heading">Calibrated, preset and estimated figures</h2>
        {!calibrated && (
          <p className="ns-muted" data-testid="no-calibration">
            No calibration: the trace embeds none (run <code>numascope bench</code> on the machine before recording), and none is loaded or measured here.
          </p>
        )}
        <div className="table-scroll">
          <table className="data side-by-side" data-testid="side-by-side">
            <thead>
              <tr>
                <th scope="col">figure</th>
                {columns.map((c) => {
                  // The column the analyses use (chooseMachine): the embedded calibration, else the recorded machine.
                  const inUse = (used.used === 'embedded-calibration' && c.key === 'calibrated' && calibrated === embedded) || (used.used === 'recorded' && c.key === 'estimated');
                  return (
                    <th scope="col" key={c.key} data-kind={c.kind} data-column={c.key} data-in-use={inUse ? 'true' : undefined}>
                      {c.label}
                      {inUse ? <span className="ns-muted small"> — what every analysis of this recording uses</span> : null}
                    </th>
                  );
                })}
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.key} data-row={r.key}>
                  <th scope="row">
                    {r.label} ({r.unit})
                  </th>
                  {r.cells.map((c, i) => (
                    <td key={columns[i]!.key} data-column={columns[i]!.key} data-kind={c.kind} title={c.source}>
                      {c.value === null ? '–' : c.value.toFixed(r.unit === 'ns' ? 0 : r.unit === 'GHz' ? 2 : 1)} <span className={`prov prov--${c.kind}`}>{c.kind}</span>
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        <p className="ns-muted">Hover a number for where it comes from (its provenance).</p>
      </section>

      {calibrated && <CalibrationDetails entry={calibrated} />}
    </div>
  );
}

function CalibrationDetails({ entry }: { entry: CalibrationEntry }) {
  const cal = entry.calibration;
  const cpus = entry.machine.nodes.map((n) => n.cpus);
  const matrices = [
    { key: 'triad', title: 'STREAM triad bandwidth', unit: 'GB/s' },
    { key: 'copy', title: 'STREAM copy bandwidth', unit: 'GB/s' },
    { key: 'latency', title: 'Idle latency (pointer chase)', unit: 'ns' },
  ] as const;
  return (
    <section className="panel" aria-labelledby="cal-heading" data-testid="calibration-details" data-origin={entry.origin}>
      <h2 id="cal-heading">Measured: {entry.label}</h2>
      <p>
        <code>{cal.tool} {cal.version}</code>, {cal.date}, {cal.quick ? 'quick' : 'full'} mode, {cal.stepsDone} of {cal.stepsPlanned} steps
        {cal.partial ? <strong data-testid="calibration-partial"> — partial ({cal.stoppedBy ?? 'stopped'})</strong> : ''}; arrays{' '}
        {(cal.arrayBytes / 2 ** 20).toFixed(0)} MiB, chase buffer {(cal.chaseBytes / 2 ** 20).toFixed(0)} MiB; huge pages: {cal.hugePages}
        {cal.virtualMachine ? `; virtual machine: ${cal.virtualMachine}` : ''}. Cells: median (min–max over repetitions); rows cpu nodes, columns memory nodes.
      </p>
      <div className="machine-grid">
        {matrices.map((m) => {
          const rows = calibrationMatrix(cal, m.key, cpus);
          return (
            <table className="data" key={m.key} data-testid={`cal-${m.key}`}>
              <caption>
                {m.title} ({m.unit})
              </caption>
              <thead>
                <tr>
                  <th scope="col">cpu ↓ memory →</th>
                  {cal.nodeIds.map((id) => (
                    <th scope="col" key={id}>
                      node {id}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {rows.map((r) => (
                  <tr key={r.cpuNode}>
                    <th scope="row">node {r.cpuNode}</th>
                    {r.cells.map((c) => (
                      <td key={c.memoryNode} data-value={c.value ?? ''} title={c.value === null ? 'not measured' : `${c.repetitions} repetitions; measured:${cal.tool} ${cal.version} ${cal.date}`}>
                        {c.value === null ? '–' : `${c.value.toFixed(m.unit === 'ns' ? 0 : 1)} (${c.min!.toFixed(m.unit === 'ns' ? 0 : 1)}–${c.max!.toFixed(m.unit === 'ns' ? 0 : 1)})`}
                      </td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          );
        })}
      </div>
      <h3>Loaded latency</h3>
      {cal.loadedLatency.length === 0 ? (
        <p className="ns-muted">No loaded-latency curve was measured{cal.partial ? ' (the run stopped before it)' : ''}.</p>
      ) : (
        <div className="machine-curves" data-testid="loaded-curves">
          {cal.loadedLatency.map((c) => (
            <LatencyCurveChart key={c.memoryNode} memoryNode={c.memoryNode} points={c.points} title={`Memory node ${c.memoryNode} (chase on cpu ${c.chaseCpu})`} testId={`curve-${c.memoryNode}`} />
          ))}
        </div>
      )}
      {cal.notes.length > 0 && (
        <ul data-testid="calibration-notes">
          {cal.notes.map((n) => (
            <li key={n}>{n}</li>
          ))}
        </ul>
      )}
    </section>
  );
}

/** "Measure this machine": `numascope bench --quick` through the server or the desktop app, polled, with cancel. */
function MeasurePanel({ client, onResult, traceNodes }: { client: BenchClient; onResult: (e: CalibrationEntry) => void; traceNodes: number }) {
  const [run, setRun] = useState<BenchRun | null>(null);
  const [error, setError] = useState<string | null>(null);
  const alive = useRef(true);
  useEffect(() => {
    alive.current = true;
    return () => {
      alive.current = false;
    };
  }, []);
  const running = run?.status === 'running';

  async function start() {
    setError(null);
    try {
      let r = await client.startBench({ quick: true });
      setRun(r);
      while (r.status === 'running') {
        await new Promise((res) => setTimeout(res, POLL_MS));
        if (!alive.current) return;
        r = await client.benchStatus(r.id);
        setRun(r);
      }
      if (r.status === 'failed') setError(`${r.error?.code}: ${r.error?.message}`);
      else if (r.result) {
        const parsed = parseCalibrationFile(JSON.stringify(r.result.machine), 'the measurement');
        if (parsed.ok) onResult({ origin: 'measured-now', label: 'measured now on this machine', machine: parsed.machine, calibration: parsed.calibration });
        else setError(parsed.error);
      }
    } catch (e) {
      if (alive.current) setError((e as Error).message);
    }
  }

  async function cancel() {
    if (!run) return;
    try {
      setRun(await client.stopBench(run.id));
    } catch (e) {
      setError((e as Error).message);
    }
  }

  const p = run?.progress;
  const result = run?.result;
  const cal = result?.machine.calibration;
  return (
    <div className="measure" data-testid="measure" data-status={run?.status ?? 'idle'}>
      <button type="button" onClick={() => void start()} disabled={running} data-testid="measure-start">
        Measure this machine (numascope bench --quick)
      </button>{' '}
      {running && (
        <button type="button" onClick={() => void cancel()} disabled={run?.stopRequested} data-testid="measure-cancel">
          {run?.stopRequested ? 'Stopping…' : 'Cancel'}
        </button>
      )}
      {p && running && (
        <p data-testid="measure-progress" data-step={p.step} data-steps={p.steps} aria-live="polite">
          <progress max={p.steps} value={p.step - 1} /> step {p.step} of {p.steps} · {p.elapsedS.toFixed(1)} s elapsed
          {p.remainingS !== null ? ` · about ${Math.ceil(p.remainingS)} s left` : ''} · {p.what}
        </p>
      )}
      {running && !p && <p aria-live="polite">Starting…</p>}
      {cal && run?.status === 'finished' && (
        <p data-testid="measure-done" data-partial={cal.partial}>
          {cal.partial ? `Stopped: ${cal.stepsDone} of ${cal.stepsPlanned} steps measured (${cal.stoppedBy ?? 'stopped'}); shown below, not stored.` : `Measured ${cal.stepsDone} steps.`}{' '}
          {result.storedAs ? `Stored as this machine's calibration: ${result.storedAs}.` : result.storeNote ? `${result.storeNote}.` : ''}
          {result.machine.nodes.length !== traceNodes && ` This machine has ${result.machine.nodes.length} node(s); the trace's machine has ${traceNodes}.`}
        </p>
      )}
      {error && (
        <p role="alert" className="notice notice--error" data-testid="measure-error">
          {error}
        </p>
      )}
    </div>
  );
}
