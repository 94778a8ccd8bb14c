/**
 * The simulator's machine model (model/contract.ts `MachineModel`) built from a `TraceMachine`
 * (a preset, a trace's recorded machine, JSON or hwloc XML). Every number keeps its source; a
 * number the description lacks is filled by one of the documented rules below and marked
 * `estimated:<rule>` (docs/engine.md, "Machine model"). Nothing is filled silently.
 *
 * Route direction: a TraceMachine route `"i->j"` lists the links data crosses going from node i
 * to node j. An access by a cpu on node c to memory on node m moves its data m → c, so
 * `MachineModel.routes[c·n + m] = trace.routes["m->c"]`.
 */
import type { LinkIndex, LoadedLatencyPoint, MachineModel, NodeIndex, Sourced } from '../model/contract.js';
import type { MachineLink, Provenance, TraceMachine } from '../trace/types.js';
import { routeKey, shortestPathRoutes } from './presets.js';

const GB = 1e9;
/** Bounds on what a calibration's loaded-latency curves may hold (a hostile file allocates no more). */
const MAX_CURVES = 1024;
const MAX_CURVE_POINTS = 64;

/** Rule M1: memory bandwidth per node when none is recorded: 2 DDR4-3200 channels × 8 B. */
export const DEFAULT_MC_BANDWIDTH_GBPS = 51.2;
/** Rule L1: local idle latency when none is recorded, ns (typical server DRAM). */
export const DEFAULT_LOCAL_LATENCY_NS = 100;
/** Rule K1: an estimated link carries this share of the smaller of its two nodes' MC bandwidths. */
export const ESTIMATED_LINK_SHARE = 0.5;

export class MachineModelError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MachineModelError';
  }
}

function provenanceOf(machine: TraceMachine, key: string, fallback: Provenance): Provenance {
  return machine.provenance[key] ?? fallback;
}

/** Builds the simulator's model of `machine`, filling missing numbers by the documented rules. */
export function machineModel(machine: TraceMachine): MachineModel {
  const n = machine.nodes.length;
  if (n === 0) throw new MachineModelError(`machine "${machine.name}" has no nodes`);
  const nodeIds = machine.nodes.map((node) => node.id);
  const indexOfId = new Map<number, NodeIndex>();
  nodeIds.forEach((id, index) => {
    if (indexOfId.has(id)) throw new MachineModelError(`machine "${machine.name}" lists node id ${id} twice`);
    indexOfId.set(id, index);
  });
  const nodeIndex = (id: number, what: string): NodeIndex => {
    const index = indexOfId.get(id);
    if (index === undefined) throw new MachineModelError(`${what} names node id ${id}, which machine "${machine.name}" does not have (nodes: ${nodeIds.join(', ')})`);
    return index;
  };

  // cpus
  let maxCpu = -1;
  for (const node of machine.nodes) for (const cpu of node.cpus) maxCpu = Math.max(maxCpu, cpu);
  const cpuNode = new Int16Array(maxCpu + 1).fill(-1);
  machine.nodes.forEach((node, index) => {
    for (const cpu of node.cpus) cpuNode[cpu] = index;
  });
  const nodeCpus = machine.nodes.map((node) => [...node.cpus]);

  // memory-controller bandwidth (rule M1, or the median of the recorded nodes' values)
  const recordedBw = machine.nodes.map((node) => node.memoryBandwidthGBps).filter((v): v is number => v !== null && v > 0);
  const medianBw = recordedBw.length > 0 ? [...recordedBw].sort((a, b) => a - b)[Math.floor(recordedBw.length / 2)]! : null;
  const mcBw = new Float64Array(n);
  let bwEstimated = false;
  machine.nodes.forEach((node, i) => {
    const v = node.memoryBandwidthGBps;
    if (v !== null && v > 0) mcBw[i] = v * GB;
    else {
      bwEstimated = true;
      mcBw[i] = (medianBw ?? DEFAULT_MC_BANDWIDTH_GBPS) * GB;
    }
  });
  const bwSource = !bwEstimated
    ? provenanceOf(machine, 'memoryBandwidthGBps', 'unavailable:the machine description does not say where its bandwidths came from')
    : recordedBw.length > 0
      ? `estimated:M1b nodes without a recorded bandwidth get the median of the recorded ones (${medianBw} GB/s); recorded values: ${provenanceOf(machine, 'memoryBandwidthGBps', 'source not given')}`
      : `estimated:M1 no memory bandwidth recorded; ${DEFAULT_MC_BANDWIDTH_GBPS} GB/s per node assumed (2 DDR4-3200 channels × 8 B); calibrate with \`numascope bench\``;

  const memoryBytes = new Float64Array(n);
  machine.nodes.forEach((node, i) => (memoryBytes[i] = node.memoryBytes ?? NaN));
  const memSource = provenanceOf(
    machine,
    'memoryBytes',
    machine.nodes.every((node) => node.memoryBytes !== null) ? 'unavailable:source not given' : 'unavailable:memory size not recorded',
  );

  // distances (SLIT): 10 local / 20 remote when missing (rule D1)
  const distances = new Float64Array(n * n);
  const slitComplete = machine.distances.length === n && machine.distances.every((row) => row.length === n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) distances[i * n + j] = slitComplete ? machine.distances[i]![j]! : i === j ? 10 : 20;
  }

  // idle latency (recorded, or rule L1: local latency × SLIT / 10)
  const idle = new Float64Array(n * n);
  const latencies = machine.latenciesNs;
  const latComplete = latencies !== null && latencies.length === n && latencies.every((row) => row.length === n && row.every((v) => v > 0));
  let localNs = DEFAULT_LOCAL_LATENCY_NS;
  if (latencies && !latComplete) {
    const diag = latencies.map((row, i) => row[i]).filter((v): v is number => typeof v === 'number' && v > 0);
    if (diag.length > 0) localNs = diag.reduce((a, b) => a + b, 0) / diag.length;
  }
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) idle[i * n + j] = latComplete ? latencies[i]![j]! : (localNs * distances[i * n + j]!) / 10;
  }
  const latSource = latComplete
    ? provenanceOf(machine, 'latenciesNs', 'unavailable:source not given')
    : `estimated:L1 idle latency = ${localNs} ns local × SLIT distance / 10${slitComplete ? '' : ' (SLIT missing: 10 local, 20 remote assumed)'}`;

  // links (recorded, capacity rule K1 where null; or K2: one direct link per ordered pair)
  let linkSource: Provenance;
  let traceLinks: MachineLink[] = machine.links;
  const links: MachineModel['links'] = [];
  if (n > 1 && traceLinks.length === 0) {
    traceLinks = [];
    for (const a of nodeIds) for (const b of nodeIds) if (a !== b) traceLinks.push({ from: a, to: b, capacityGBps: null });
    linkSource = `estimated:K2 no links recorded; one direct link per ordered node pair, capacity ${ESTIMATED_LINK_SHARE} × the smaller MC bandwidth of its two nodes`;
  } else {
    const nullCaps = traceLinks.some((l) => l.capacityGBps === null || !(l.capacityGBps > 0));
    linkSource = nullCaps
      ? `estimated:K1 links without a capacity get ${ESTIMATED_LINK_SHARE} × the smaller MC bandwidth of their two nodes; others: ${provenanceOf(machine, 'links', 'source not given')}`
      : provenanceOf(machine, 'links', 'unavailable:source not given');
  }
  for (const l of traceLinks) {
    const from = nodeIndex(l.from, 'a link');
    const to = nodeIndex(l.to, 'a link');
    const cap = l.capacityGBps !== null && l.capacityGBps > 0 ? l.capacityGBps * GB : ESTIMATED_LINK_SHARE * Math.min(mcBw[from]!, mcBw[to]!);
    links.push({ from, to, capacityBytesPerS: cap });
  }

  // routes (recorded, or fewest hops over the links)
  let traceRoutes = machine.routes;
  let routeSource: Provenance;
  if (traceRoutes && machine.links.length > 0) {
    routeSource = provenanceOf(machine, 'routes', 'unavailable:source not given');
  } else {
    traceRoutes = n > 1 ? shortestPathRoutes(nodeIds, traceLinks) : {};
    routeSource = 'estimated:R1 fewest hops over the links, ties through lower-numbered nodes';
  }
  const routes: LinkIndex[][] = [];
  for (let c = 0; c < n; c++) {
    for (let m = 0; m < n; m++) {
      if (c === m) {
        routes.push([]);
        continue;
      }
      const key = routeKey(nodeIds[m]!, nodeIds[c]!);
      const route = traceRoutes[key];
      if (!route) throw new MachineModelError(`machine "${machine.name}" has no route ${key}`);
      let at = m;
      for (const li of route) {
        const link = links[li];
        if (!link) throw new MachineModelError(`route ${key} of machine "${machine.name}" names link ${li}, but there are ${links.length} links`);
        if (link.from !== at) throw new MachineModelError(`route ${key} of machine "${machine.name}" is not a path: link ${li} starts at node index ${link.from}, expected ${at}`);
        at = link.to;
      }
      if (at !== c) throw new MachineModelError(`route ${key} of machine "${machine.name}" ends at node index ${at}, not ${c}`);
      routes.push([...route]);
    }
  }

  // measured sustained capacity (a numascope bench calibration)
  let sustainedBytesPerS: MachineModel['sustainedBytesPerS'];
  const cal = machine.calibration;
  if (cal && cal.sustainedGBps.length === n && cal.sustainedGBps.some((v) => v !== null && v > 0)) {
    sustainedBytesPerS = {
      value: Float64Array.from(cal.sustainedGBps, (v) => (v !== null && v > 0 ? v * GB : NaN)),
      source: `measured:${cal.tool} ${cal.version} ${cal.date} sustained STREAM triad capacity per memory node${cal.partial ? ' (partial run)' : ''}`,
    };
  }

  // measured loaded-latency curves (the same calibration), per memory node index
  let loadedLatency: MachineModel['loadedLatency'];
  if (cal && Array.isArray(cal['loadedLatency'])) {
    const curves: Array<LoadedLatencyPoint[] | null> = Array.from({ length: n }, () => null);
    for (const curve of (cal['loadedLatency'] as unknown[]).slice(0, MAX_CURVES)) {
      if (typeof curve !== 'object' || curve === null) continue;
      const { memoryNode, points } = curve as { memoryNode?: unknown; points?: unknown };
      const m = typeof memoryNode === 'number' ? nodeIds.indexOf(memoryNode) : -1;
      if (m < 0 || !Array.isArray(points)) continue;
      const good: LoadedLatencyPoint[] = [];
      for (const pt of points.slice(0, MAX_CURVE_POINTS)) {
        const { deliveredGBps, latencyNs } = (pt ?? {}) as { deliveredGBps?: unknown; latencyNs?: unknown };
        if (typeof deliveredGBps === 'number' && typeof latencyNs === 'number' && Number.isFinite(deliveredGBps) && Number.isFinite(latencyNs) && deliveredGBps >= 0 && latencyNs > 0) {
          good.push({ deliveredBytesPerS: deliveredGBps * GB, latencyNs });
        }
      }
      if (good.length > 0) curves[m] = [...(curves[m] ?? []), ...good];
    }
    if (curves.some((c) => c !== null)) {
      loadedLatency = { value: curves, source: `measured:${cal.tool} ${cal.version} ${cal.date} loaded-latency curves (chase latency against the load threads' delivered bandwidth)${cal.partial ? ' (partial run)' : ''}` };
    }
  }

  const tiers = tiersOf(machine, mcBw);

  // the recorded cpu clock (TraceMachine.cpuClockGHz; validate.ts bounds it in a trace)
  const rawClock = machine.cpuClockGHz;
  const clockSource = machine.provenance['cpuClockGHz'];
  let clockGHz: MachineModel['clockGHz'];
  if (typeof rawClock === 'number' && Number.isFinite(rawClock) && rawClock > 0) {
    clockGHz = { value: rawClock, source: clockSource ?? 'unavailable:the machine description gives a cpu clock without saying where it came from' };
  } else if (clockSource !== undefined) {
    clockGHz = { value: null, source: clockSource };
  }

  return {
    name: machine.name,
    source: machine.source,
    nodeCount: n,
    memoryTier: tiers,
    memoryKind: machine.nodes.map((node) => node.memoryKind ?? null),
    cpuModel: machine.cpuModel ?? null,
    ...(clockGHz ? { clockGHz } : {}),
    ...(sustainedBytesPerS ? { sustainedBytesPerS } : {}),
    ...(loadedLatency ? { loadedLatency } : {}),
    nodeIds,
    cpuNode,
    nodeCpus,
    mcBandwidthBytesPerS: { value: mcBw, source: bwSource },
    memoryBytes: { value: memoryBytes, source: memSource },
    idleLatencyNs: { value: idle, source: latSource },
    distances,
    links,
    linkSource,
    routes,
    routeSource,
  };
}

/**
 * Memory tiers: the description's `memoryTier` per node when every node has one; else rule T1: a
 * node with cpus is tier 0, and so is a memory-only node whose memory bandwidth is at least the
 * smallest of the cpu nodes'; a memory-only node with less (CXL, far memory) is tier 1. The kernel
 * ranks tiers by abstract distance (latency and bandwidth from HMAT); T1 is the bandwidth half of
 * that, for descriptions without tiers.
 */
function tiersOf(machine: TraceMachine, mcBw: Float64Array): Sourced<Int16Array> {
  const n = machine.nodes.length;
  const given = machine.nodes.map((node) => node.memoryTier);
  if (given.every((t): t is number => typeof t === 'number' && Number.isInteger(t) && t >= 0)) {
    return { value: Int16Array.from(given), source: provenanceOf(machine, 'memoryTier', 'unavailable:the description gives tiers without saying where they came from') };
  }
  const cpuBw: number[] = [];
  machine.nodes.forEach((node, i) => {
    if (node.cpus.length > 0) cpuBw.push(mcBw[i]!);
  });
  const floor = cpuBw.length > 0 ? Math.min(...cpuBw) : 0;
  const value = new Int16Array(n);
  machine.nodes.forEach((node, i) => (value[i] = node.cpus.length === 0 && mcBw[i]! < floor ? 1 : 0));
  return {
    value,
    source:
      'estimated:T1 no memory tiers in the description: nodes with cpus, and memory-only nodes with at least their memory bandwidth, are tier 0; memory-only nodes with less are tier 1',
  };
}

/** The model's tiers (rule T1 for a hand-built model without them). */
export function machineTiers(model: MachineModel): Int16Array {
  if (model.memoryTier) return model.memoryTier.value;
  const cpuBw: number[] = [];
  for (let i = 0; i < model.nodeCount; i++) if (model.nodeCpus[i]!.length > 0) cpuBw.push(model.mcBandwidthBytesPerS.value[i]!);
  const floor = cpuBw.length > 0 ? Math.min(...cpuBw) : 0;
  return Int16Array.from({ length: model.nodeCount }, (_, i) => (model.nodeCpus[i]!.length === 0 && model.mcBandwidthBytesPerS.value[i]! < floor ? 1 : 0));
}

/** Whether a node has no cpus (a memory-only node: CXL, HBM in flat mode, far memory). */
export function isCpuless(model: MachineModel, node: NodeIndex): boolean {
  return model.nodeCpus[node]!.length === 0;
}

/** Node index of a cpu id, or -1. */
export function nodeOfCpu(model: MachineModel, cpu: number): NodeIndex {
  return cpu >= 0 && cpu < model.cpuNode.length ? model.cpuNode[cpu]! : -1;
}

/** The model as a `TraceMachine` again (for retargeted traces, JSON export). */
export function traceMachineOf(model: MachineModel): TraceMachine {
  const n = model.nodeCount;
  const id = (i: number) => model.nodeIds[i]!;
  const routes: Record<string, number[]> = {};
  for (let c = 0; c < n; c++) for (let m = 0; m < n; m++) if (c !== m) routes[routeKey(id(m), id(c))] = [...model.routes[c * n + m]!];
  return {
    name: model.name,
    source: model.source,
    kernel: null,
    cpuModel: model.cpuModel ?? null,
    ...(model.clockGHz ? { cpuClockGHz: model.clockGHz.value } : {}),
    pageSizeBytes: 4096,
    nodes: model.nodeIds.map((nodeId, i) => ({
      id: nodeId,
      cpus: [...model.nodeCpus[i]!],
      memoryBytes: Number.isNaN(model.memoryBytes.value[i]!) ? null : model.memoryBytes.value[i]!,
      memoryBandwidthGBps: model.mcBandwidthBytesPerS.value[i]! / GB,
      ...(model.memoryTier ? { memoryTier: model.memoryTier.value[i]! } : {}),
      ...(model.memoryKind?.[i] ? { memoryKind: model.memoryKind[i]! } : {}),
    })),
    distances: Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => model.distances[i * n + j]!)),
    latenciesNs: Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => model.idleLatencyNs.value[i * n + j]!)),
    links: model.links.map((l) => ({ from: id(l.from), to: id(l.to), capacityGBps: l.capacityBytesPerS / GB })),
    routes,
    provenance: {
      memoryBandwidthGBps: model.mcBandwidthBytesPerS.source,
      memoryBytes: model.memoryBytes.source,
      latenciesNs: model.idleLatencyNs.source,
      links: model.linkSource,
      routes: model.routeSource,
      distances: 'estimated:copied from the machine model',
      ...(model.memoryTier ? { memoryTier: model.memoryTier.source } : {}),
      ...(model.clockGHz ? { cpuClockGHz: model.clockGHz.source } : {}),
    },
  };
}
