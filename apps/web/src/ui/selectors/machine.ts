/**
 * The Machine view's numbers: a calibration file checked and loaded, the engine's choice of
 * model, and calibrated vs preset vs estimated figures side by side with each one's provenance.
 * Pure functions over the engine's loaders and models (no DOM).
 */
import { benchMachine, describeIssue } from '@numascope/protocol';
import type { BenchCalibration } from '@numascope/protocol';
import { machineFromJson, machineModel, recordedMachine, trafficModel } from '@numascope/policy-engine';
import type { MachineModel, TraceMachine, TraceManifest } from '@numascope/policy-engine';

/** Where a calibrated model in the view came from. */
export type CalibrationOrigin = 'measured-now' | 'loaded-file' | 'embedded';

export interface CalibrationEntry {
  origin: CalibrationOrigin;
  /** "measured now on this machine", "file bench.json", "embedded in the trace". */
  label: string;
  machine: TraceMachine;
  calibration: BenchCalibration;
}

export type LoadResult = { ok: true; machine: TraceMachine; calibration: BenchCalibration } | { ok: false; error: string };

/**
 * A calibration file (`numascope bench -o FILE`, or the cache's `machines/<fingerprint>.json`):
 * JSON, the strict bench schema (the collector's own output), then the engine's loader.
 */
export function parseCalibrationFile(text: string, name: string): LoadResult {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { ok: false, error: `${name} is not JSON (${(e as Error).message}). A calibration file is what \`numascope bench -o FILE\` writes.` };
  }
  const r = benchMachine.safeParse(value);
  if (!r.success) {
    const hint = value && typeof value === 'object' && !('calibration' in value) ? ' It has no "calibration": a machine description without measurements (load it with numascope-analyze --machine instead).' : '';
    return { ok: false, error: `${name} is not a numascope bench calibration: ${describeIssue('machine', r.error.issues[0]!)}.${hint} Write one with \`numascope bench -o FILE\`.` };
  }
  try {
    const machine = machineFromJson(text, name);
    return { ok: true, machine, calibration: r.data.calibration };
  } catch (e) {
    return { ok: false, error: (e as Error).message };
  }
}

/** The calibration a trace embeds (manifest `calibration`), when it parses. */
export function embeddedCalibration(manifest: { calibration?: TraceMachine }): CalibrationEntry | null {
  if (!manifest.calibration) return null;
  const r = parseCalibrationFile(JSON.stringify(manifest.calibration), 'the embedded calibration');
  return r.ok ? { origin: 'embedded', label: 'embedded in the trace', machine: r.machine, calibration: r.calibration } : null;
}

/** measured / documented / estimated / unavailable: the first word of a provenance string. */
export type ProvenanceKind = 'measured' | 'documented' | 'estimated' | 'unavailable';

export function provenanceKind(source: string): ProvenanceKind {
  const head = source.split(':', 1)[0]!.trim();
  return head === 'measured' || head === 'documented' || head === 'unavailable' ? head : 'estimated';
}

export interface ModelColumn {
  key: string;
  /** Column head: "calibrated (measured now)", "preset amd-genoa-2s-nps1", "estimated (recorded machine)". */
  label: string;
  kind: 'calibrated' | 'preset' | 'estimated';
  machine: TraceMachine;
}

export interface Cell {
  /** null: the model has no such node or pair. */
  value: number | null;
  source: string;
  kind: ProvenanceKind;
}

export interface SideRow {
  key: string;
  label: string;
  unit: string;
  cells: Cell[];
}

const NONE: Cell = { value: null, source: 'unavailable:this model has no such node', kind: 'unavailable' };
/** Rows per node are shown for at most this many nodes (presets go up to 8). */
export const MAX_ROW_NODES = 8;

function cell(value: number, source: string): Cell {
  return Number.isFinite(value) ? { value, source, kind: provenanceKind(source) } : { value: null, source, kind: 'unavailable' };
}

/**
 * The figures the engine uses from each model, side by side: sustained memory bandwidth per node
 * (the traffic model's capacity), the northbridge capacity per node where a model has one (rule
 * XB0), idle local latency per node, the remote latency range, link
 * capacity range, and the cpu clock PMU latencies are converted with. Node rows are by node
 * index (node ids may differ between models).
 */
export function sideBySide(columns: readonly ModelColumn[]): SideRow[] {
  const models: MachineModel[] = columns.map((c) => machineModel(c.machine));
  const traffic = models.map((m) => trafficModel(m));
  const nodes = Math.min(MAX_ROW_NODES, Math.max(0, ...models.map((m) => m.nodeCount)));
  const rows: SideRow[] = [];
  for (let i = 0; i < nodes; i++) {
    rows.push({
      key: `bw-${i}`,
      label: `memory bandwidth, node index ${i}`,
      unit: 'GB/s',
      cells: models.map((m, k) => (i < m.nodeCount ? cell(traffic[k]!.mcCapacity.value[i]! / 1e9, traffic[k]!.mcCapacity.source) : NONE)),
    });
  }
  // Rule XB0: a machine whose northbridge limits what its cores reach has a crossbar per node.
  if (traffic.some((t) => t.crossbarCapacity)) {
    for (let i = 0; i < nodes; i++) {
      rows.push({
        key: `xb-${i}`,
        label: `northbridge (crossbar) capacity, node index ${i}`,
        unit: 'GB/s',
        cells: models.map((m, k) => {
          const xb = traffic[k]!.crossbarCapacity;
          if (i >= m.nodeCount) return NONE;
          return xb ? cell(xb.value[i]! / 1e9, xb.source) : { value: null, source: 'unavailable:no crossbar limit documented for this machine (rule XB0)', kind: 'unavailable' };
        }),
      });
    }
  }
  for (let i = 0; i < nodes; i++) {
    rows.push({
      key: `lat-${i}`,
      label: `idle latency, node index ${i} local`,
      unit: 'ns',
      cells: models.map((m) => (i < m.nodeCount ? cell(m.idleLatencyNs.value[i * m.nodeCount + i]!, m.idleLatencyNs.source) : NONE)),
    });
  }
  const remote = (m: MachineModel, pick: (a: number, b: number) => number): Cell => {
    let v = Number.NaN;
    for (let i = 0; i < m.nodeCount; i++) for (let j = 0; j < m.nodeCount; j++) if (i !== j && m.nodeCpus[i]!.length > 0) v = Number.isNaN(v) ? m.idleLatencyNs.value[i * m.nodeCount + j]! : pick(v, m.idleLatencyNs.value[i * m.nodeCount + j]!);
    return Number.isNaN(v) ? { value: null, source: 'unavailable:one node: no remote memory', kind: 'unavailable' } : cell(v, m.idleLatencyNs.source);
  };
  rows.push({ key: 'remote-min', label: 'idle latency, nearest remote', unit: 'ns', cells: models.map((m) => remote(m, Math.min)) });
  rows.push({ key: 'remote-max', label: 'idle latency, farthest remote', unit: 'ns', cells: models.map((m) => remote(m, Math.max)) });
  const link = (m: MachineModel): Cell => {
    if (m.links.length === 0) return { value: null, source: m.nodeCount === 1 ? 'unavailable:one node: no interconnect' : m.linkSource, kind: 'unavailable' };
    return cell(Math.min(...m.links.map((l) => l.capacityBytesPerS)) / 1e9, m.linkSource);
  };
  rows.push({ key: 'link-min', label: 'slowest link capacity', unit: 'GB/s', cells: models.map(link) });
  // The clock PMU latencies in cycles are divided by (the recording's, a preset's, or the cpu model string's).
  rows.push({ key: 'clock', label: 'cpu clock', unit: 'GHz', cells: traffic.map((t) => (t.clockGHz.value === null ? { value: null, source: t.clockGHz.source, kind: 'unavailable' } : cell(t.clockGHz.value, t.clockGHz.source))) });
  return rows;
}

/** A (cpu node, memory node) matrix of a calibration, as rows of cells for a table. */
export function calibrationMatrix(
  cal: BenchCalibration,
  pick: 'copy' | 'triad' | 'latency',
  cpuNodes: readonly number[][],
): Array<{ cpuNode: number; cells: Array<{ memoryNode: number; value: number | null; min: number | null; max: number | null; repetitions: number }> }> {
  const m = pick === 'latency' ? cal.latencyNs : cal.bandwidthGBps[pick];
  return cal.nodeIds
    .map((id, c) => ({ id, c }))
    .filter(({ c }) => (cpuNodes[c]?.length ?? 0) > 0)
    .map(({ id, c }) => ({
      cpuNode: id,
      cells: cal.nodeIds.map((mem, j) => {
        const s = m[c]?.[j] ?? null;
        return { memoryNode: mem, value: s?.value ?? null, min: s?.min ?? null, max: s?.max ?? null, repetitions: s?.repetitions ?? 0 };
      }),
    }));
}

/**
 * The node cards' figures: each node with its theoretical peak and the sustained capacity the
 * engine models for the recording's machine (its embedded calibration when it has one), from the
 * same functions the analysis report uses (machineModel, trafficModel), so a node's bandwidth is
 * one number on every screen (the Machine view, the traffic graph's capacities, the CLI's
 * `machine.capacityBytesPerS`).
 */
export function nodeBandwidthFigures(manifest: TraceManifest): Array<TraceManifest['machine']['nodes'][number] & { sustainedGBps: number | null; sustainedSource: string }> {
  let capacity: Float64Array | null = null;
  let source = '';
  try {
    const t = trafficModel(machineModel(recordedMachine(manifest).machine));
    capacity = t.mcCapacity.value;
    source = t.mcCapacity.source;
  } catch (e) {
    source = `unavailable:the machine cannot be modelled: ${e instanceof Error ? e.message : String(e)}`;
  }
  return manifest.machine.nodes.map((n, i) => ({ ...n, sustainedGBps: capacity ? capacity[i]! / 1e9 : null, sustainedSource: source }));
}
