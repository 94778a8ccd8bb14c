/**
 * Machine descriptions from outside the trace: JSON (a `TraceMachine`, or a manifest holding one)
 * and hwloc XML (`lstopo --of xml`, v1 or v2 format, with its NUMA distances), read with a real
 * XML parser (fast-xml-parser: nesting, entities and CDATA as XML has them). No DOM, no Node APIs,
 * so it runs in a browser Worker too.
 */
import { XMLParser } from 'fast-xml-parser';
import type { TraceMachine } from '../trace/types.js';
import { DEFAULT_LOCAL_LATENCY_NS } from './model.js';
import { MAX_CLOCK_GHZ, MIN_CLOCK_GHZ } from '../trace/limits.js';

export class MachineLoadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MachineLoadError';
  }
}

/** A machine from JSON text: a TraceMachine object, or a trace manifest with a `machine`. */
export function machineFromJson(text: string, name = 'machine.json'): TraceMachine {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new MachineLoadError(`${name} is not valid JSON: ${(e as Error).message}`);
  }
  const obj = value as Record<string, unknown> | null;
  const machine = (obj && typeof obj === 'object' && 'machine' in obj ? obj['machine'] : obj) as TraceMachine | null;
  if (!machine || typeof machine !== 'object' || !Array.isArray(machine.nodes)) {
    throw new MachineLoadError(`${name} does not describe a machine: expected an object with "nodes" (the trace manifest's machine format, docs/trace-format.md)`);
  }
  const filled: TraceMachine = {
    name: machine.name ?? name,
    source: machine.source ?? `json:${name}`,
    kernel: machine.kernel ?? null,
    cpuModel: machine.cpuModel ?? null,
    ...(machine.cpuClockGHz !== undefined ? { cpuClockGHz: machine.cpuClockGHz } : {}),
    pageSizeBytes: machine.pageSizeBytes ?? 4096,
    nodes: machine.nodes.map((n) => ({
      id: n.id,
      cpus: n.cpus ?? [],
      memoryBytes: n.memoryBytes ?? null,
      memoryBandwidthGBps: n.memoryBandwidthGBps ?? null,
      ...(n.memoryTier !== undefined && n.memoryTier !== null ? { memoryTier: n.memoryTier } : {}),
      ...(n.memoryKind ? { memoryKind: n.memoryKind } : {}),
    })),
    distances: machine.distances ?? [],
    latenciesNs: machine.latenciesNs ?? null,
    links: machine.links ?? [],
    routes: machine.routes ?? null,
    provenance: machine.provenance ?? {},
  };
  const cal = machine.calibration;
  if (cal !== undefined) {
    if (!cal || typeof cal !== 'object' || !Array.isArray(cal.sustainedGBps) || cal.sustainedGBps.length !== machine.nodes.length) {
      throw new MachineLoadError(`${name}: calibration must be a numascope bench calibration with sustainedGBps per node (${machine.nodes.length} values)`);
    }
    if (cal.sustainedGBps.some((v) => v !== null && !(typeof v === 'number' && Number.isFinite(v) && v > 0))) {
      throw new MachineLoadError(`${name}: calibration.sustainedGBps must hold positive numbers or null`);
    }
    filled.calibration = cal;
  }
  // Reuse the manifest validator for the machine part (it names the offending field).
  const problems = machineProblems(filled);
  if (problems.length > 0) throw new MachineLoadError(`${name}: ${problems.join('; ')}`);
  return filled;
}

/**
 * The machine a trace was recorded on, for the engine: its embedded `numascope bench` calibration
 * when there is one that describes the same nodes, else the recorded (sysfs) machine. A
 * calibration that does not load is skipped, with the reason in `note`.
 */
export function recordedMachine(manifest: { machine: TraceMachine; calibration?: TraceMachine }): { machine: TraceMachine; note: string | null } {
  const embedded = manifest.calibration;
  if (!embedded) return { machine: manifest.machine, note: null };
  try {
    const m = machineFromJson(JSON.stringify(embedded), 'the embedded calibration');
    const ids = (x: TraceMachine) => x.nodes.map((n) => n.id).join(',');
    if (ids(m) !== ids(manifest.machine)) return { machine: manifest.machine, note: `embedded calibration not used: its nodes (${ids(m)}) differ from the recorded machine's (${ids(manifest.machine)})` };
    return { machine: withRecordedClock(m, manifest.machine), note: `machine calibrated by numascope bench (${m.calibration?.date ?? 'date unknown'})` };
  } catch (e) {
    return { machine: manifest.machine, note: `embedded calibration not used: ${(e as Error).message}` };
  }
}

/**
 * `machine` (a description of the machine a trace was recorded on: its embedded calibration, or
 * a machine file with the recorded nodes) with the recording's cpu clock and cpu model where it
 * records none itself: the trace's PMU latencies are in the recording cpu's cycles, so they are
 * converted with the recording's clock whichever description of that machine is modelled.
 */
export function withRecordedClock(machine: TraceMachine, recorded: TraceMachine): TraceMachine {
  const clock = typeof machine.cpuClockGHz === 'number' ? null : recorded.cpuClockGHz;
  const model = machine.cpuModel ? null : recorded.cpuModel;
  if (typeof clock !== 'number' && !model) return machine;
  const source = recorded.provenance['cpuClockGHz'];
  return {
    ...machine,
    ...(model ? { cpuModel: model } : {}),
    ...(typeof clock === 'number' ? { cpuClockGHz: clock } : {}),
    provenance: { ...machine.provenance, ...(typeof clock === 'number' && source ? { cpuClockGHz: `${source} (the recording machine's, from the trace)` } : {}) },
  };
}

function machineProblems(m: TraceMachine): string[] {
  const out: string[] = [];
  const n = m.nodes.length;
  if (n === 0) out.push('machine has no nodes');
  m.nodes.forEach((node, i) => {
    if (!Number.isInteger(node.id) || node.id < 0) out.push(`nodes[${i}].id must be a non-negative integer, got ${JSON.stringify(node.id)}`);
    if (!Array.isArray(node.cpus) || node.cpus.some((c) => !Number.isInteger(c) || c < 0)) out.push(`nodes[${i}].cpus must be non-negative integers`);
  });
  if (m.distances.length > 0 && (m.distances.length !== n || m.distances.some((r) => r.length !== n))) {
    out.push(`distances must be ${n}×${n} (one row and column per node), got ${m.distances.length} rows`);
  }
  const clock = m.cpuClockGHz;
  if (clock !== undefined && clock !== null && !(typeof clock === 'number' && clock >= MIN_CLOCK_GHZ && clock <= MAX_CLOCK_GHZ)) {
    out.push(`cpuClockGHz must be a cpu clock in GHz between ${MIN_CLOCK_GHZ} and ${MAX_CLOCK_GHZ}, or null, got ${JSON.stringify(clock)}`);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// hwloc XML

/** One XML element: its name, attributes (entities decoded), child elements and text. */
interface XmlElement {
  name: string;
  attrs: Record<string, string>;
  children: XmlElement[];
  text: string;
}

/** Larger than any lstopo file (a 1,000-node machine's is a few MB); a bound on what is parsed. */
const MAX_XML_BYTES = 64 * 1024 * 1024;

/** The document's root elements, in order. Internal DTD entities are refused (no entity expansion). */
function parseXml(xml: string, name: string): XmlElement[] {
  if (xml.length > MAX_XML_BYTES) throw new MachineLoadError(`${name} is ${xml.length} bytes, more than the ${MAX_XML_BYTES} an hwloc topology needs`);
  if (/<!ENTITY/i.test(xml)) throw new MachineLoadError(`${name} declares XML entities (<!ENTITY>): lstopo never writes them, and they are not expanded here`);
  let raw: unknown;
  try {
    raw = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', preserveOrder: true, processEntities: true, parseAttributeValue: false, parseTagValue: false, trimValues: false }).parse(xml, true);
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    throw new MachineLoadError(`${name} is not well-formed XML: ${why.split('\n')[0]}`);
  }
  const convert = (nodes: unknown): XmlElement[] => {
    const out: XmlElement[] = [];
    for (const node of Array.isArray(nodes) ? nodes : []) {
      const entry = node as Record<string, unknown>;
      const key = Object.keys(entry).find((k) => k !== ':@' && k !== '#text');
      if (key === undefined || key.startsWith('?') || key.startsWith('!')) continue;
      const kids = entry[key] as unknown[];
      const attrs: Record<string, string> = {};
      for (const [k, v] of Object.entries((entry[':@'] as Record<string, unknown> | undefined) ?? {})) attrs[k] = String(v);
      const text = (Array.isArray(kids) ? kids : []).map((k) => ((k as Record<string, unknown>)['#text'] !== undefined ? String((k as Record<string, unknown>)['#text']) : '')).join('');
      out.push({ name: key, attrs, children: convert(kids), text });
    }
    return out;
  };
  return convert(raw);
}

/** Every element named `tag` below `roots`, in document order. */
function descendants(roots: readonly XmlElement[], tag: string): XmlElement[] {
  const out: XmlElement[] = [];
  const walk = (els: readonly XmlElement[]) => {
    for (const el of els) {
      if (el.name === tag) out.push(el);
      walk(el.children);
    }
  };
  walk(roots);
  return out;
}

/** Parses an hwloc bitmap string ("0xffffffff,0x0000000f", words most significant first) to set bits. */
export function parseHwlocCpuset(text: string): number[] {
  const words = text.trim().split(',');
  const cpus: number[] = [];
  for (let w = 0; w < words.length; w++) {
    const word = words[words.length - 1 - w]!.trim().replace(/^0x/i, '');
    if (word === '') continue;
    const value = Number.parseInt(word, 16);
    if (Number.isNaN(value)) throw new MachineLoadError(`bad cpuset word "${words[words.length - 1 - w]}" in "${text}"`);
    for (let bit = 0; bit < 32; bit++) if ((value >>> bit) & 1) cpus.push(w * 32 + bit);
  }
  return cpus.sort((a, b) => a - b);
}

/**
 * A machine from hwloc XML. Nodes, their cpus (PU os indexes of the node's cpuset) and memory come
 * from the `NUMANode` objects; the SLIT from the `NUMALatency` distances matrix (hwloc 2
 * `<distances2>`, or hwloc 1 `<distances>` with `<latency value>`; hwloc 1 stores them normalised
 * to 1.0 = local, multiplied back by 10 here). Bandwidths and links are not in the file: they stay
 * `null` and machineModel() estimates them by its documented rules.
 */
export function machineFromHwlocXml(xml: string, name = 'topology.xml'): TraceMachine {
  const doc = parseXml(xml, name);
  const topology = doc.find((el) => el.name === 'topology');
  if (!topology) throw new MachineLoadError(`${name} is not an hwloc topology: no <topology> element (make one with \`lstopo --of xml FILE\`)`);
  const objects = descendants([topology], 'object')
    .filter((o) => o.attrs['type'] === 'NUMANode')
    .map((o) => {
      // hwloc ≥ 2.10 puts the node's tier in <info name="MemoryTier" value="N"/> inside the object.
      const tier = o.children.find((c) => c.name === 'info' && c.attrs['name'] === 'MemoryTier')?.attrs['value'];
      return { attrs: tier !== undefined && /^\d+$/.test(tier) ? { ...o.attrs, __tier: tier } : o.attrs };
    });
  if (objects.length === 0) throw new MachineLoadError(`${name} has no NUMANode objects`);

  const parsed = objects.map((o) => {
    const id = Number(o.attrs['os_index']);
    if (!Number.isInteger(id)) throw new MachineLoadError(`${name}: a NUMANode has no integer os_index`);
    const mem = o.attrs['local_memory'];
    return {
      id,
      gp: o.attrs['gp_index'] ?? null,
      subtype: o.attrs['subtype'] ?? null,
      tier: o.attrs['__tier'] !== undefined ? Number(o.attrs['__tier']) : null,
      cpuset: o.attrs['cpuset'] ?? '',
      cpus: o.attrs['cpuset'] ? parseHwlocCpuset(o.attrs['cpuset']) : [],
      memoryBytes: mem !== undefined ? Number(mem) : null,
    };
  });
  // hwloc attaches every memory of a locality to the same cpuset (DDR and HBM of a tile, a CXL
  // node beside its socket's DRAM); Linux shows one of them with the cpus and the others without.
  // The cpus go to the DRAM node (subtype DRAM or none), lowest os_index first; the others are
  // memory-only.
  const owner = new Map<string, number>();
  const isDram = (x: (typeof parsed)[number]) => x.subtype === null || /^dram$/i.test(x.subtype);
  for (const x of [...parsed].sort((a, b) => Number(isDram(b)) - Number(isDram(a)) || a.id - b.id)) {
    if (x.cpus.length > 0 && !owner.has(x.cpuset)) owner.set(x.cpuset, x.id);
  }
  const memattrs = hwlocMemoryAttributes(topology, parsed, name);
  const nodes = parsed
    .map((x) => ({
      id: x.id,
      cpus: owner.get(x.cpuset) === x.id ? x.cpus : [],
      memoryBytes: x.memoryBytes,
      memoryBandwidthGBps: memattrs.bandwidthGBps.get(x.id) ?? null,
      ...(x.tier !== null ? { memoryTier: x.tier } : {}),
      ...(x.subtype ? { memoryKind: x.subtype.toLowerCase() } : {}),
    }))
    .sort((a, b) => a.id - b.id);
  const ids = nodes.map((node) => node.id);
  const n = nodes.length;

  const distances = hwlocDistances(topology, ids, name);
  const cpuModel = descendants([topology], 'info').find((i) => i.attrs['name'] === 'CPUModel')?.attrs['value'] ?? null;
  const bwKnown = nodes.every((node) => node.memoryBandwidthGBps !== null);
  const latencies = memattrs.latencyNs.size > 0 && distances ? latencyMatrix(nodes, distances, memattrs.latencyNs) : null;
  const provenance: Record<string, string> = {
    nodes: `measured:hwloc NUMANode objects in ${name}`,
    cpus: `measured:hwloc NUMANode cpusets in ${name}${nodes.some((node) => node.cpus.length === 0) ? '; where several NUMANodes share a cpuset, the cpus are given to the DRAM one and the others are memory-only (as Linux shows them)' : ''}`,
    memoryBytes: `measured:hwloc local_memory in ${name}`,
    memoryBandwidthGBps: bwKnown
      ? `documented:hwloc memory attribute ${memattrs.bandwidthName} (firmware HMAT, from the node's local initiators) in ${name}`
      : memattrs.bandwidthGBps.size > 0
        ? `estimated:hwloc memory attribute ${memattrs.bandwidthName} for some nodes in ${name}; the others by rule M1b`
        : 'unavailable:hwloc XML carries no memory bandwidth (no Bandwidth memory attribute)',
    links: 'unavailable:hwloc XML carries no interconnect links',
    latenciesNs: latencies
      ? `estimated:hwloc memory attribute ${memattrs.latencyName} (firmware HMAT) for each node's local initiators in ${name}; other pairs scaled by the SLIT ratio`
      : `unavailable:hwloc XML carries relative distances only; the model estimates latency from them (local ${DEFAULT_LOCAL_LATENCY_NS} ns × SLIT / 10)`,
  };
  if (nodes.every((node) => 'memoryTier' in node)) provenance['memoryTier'] = `documented:hwloc MemoryTier info of each NUMANode in ${name}`;
  if (distances) provenance['distances'] = `measured:hwloc NUMALatency distances (ACPI SLIT as the OS reported it) in ${name}`;
  else provenance['distances'] = `unavailable:${name} has no NUMA distances`;
  return {
    name: name.replace(/\.xml$/i, ''),
    source: `hwloc:${name}`,
    kernel: null,
    cpuModel,
    pageSizeBytes: 4096,
    nodes,
    distances: distances ?? (n === 1 ? [[10]] : []),
    latenciesNs: latencies,
    links: [],
    routes: null,
    provenance,
  };
}

/**
 * hwloc memory attributes (`<memattr name="Bandwidth|ReadBandwidth|Latency|ReadLatency">` with
 * `<memattr_value target_obj_gp_index=.. value=.. initiator_cpuset=..>`; hwloc ≥ 2.3, from the
 * firmware's HMAT): bandwidth in MB/s and latency in ns per target node. A node's figure is its
 * best over the initiators (the local one); latencies also keep which cpus they were measured from.
 */
function hwlocMemoryAttributes(
  topology: XmlElement,
  nodes: ReadonlyArray<{ id: number; gp: string | null }>,
  name: string,
): { bandwidthGBps: Map<number, number>; bandwidthName: string; latencyNs: Map<number, { ns: number; cpus: number[] }>; latencyName: string } {
  const byGp = new Map(nodes.filter((x) => x.gp !== null).map((x) => [x.gp!, x.id]));
  const memattrs = descendants([topology], 'memattr');
  const attrValues = (wanted: string) => {
    const m = memattrs.find((a) => a.attrs['name'] === wanted);
    return m ? m.children.filter((c) => c.name === 'memattr_value').map((c) => c.attrs) : null;
  };
  const bandwidthGBps = new Map<number, number>();
  const latencyNs = new Map<number, { ns: number; cpus: number[] }>();
  let bandwidthName = 'Bandwidth';
  let latencyName = 'Latency';
  for (const wanted of ['Bandwidth', 'ReadBandwidth']) {
    const values = attrValues(wanted);
    if (!values || bandwidthGBps.size > 0) continue;
    bandwidthName = wanted;
    for (const v of values) {
      const node = v['target_obj_gp_index'] !== undefined ? byGp.get(v['target_obj_gp_index']) : undefined;
      const value = Number(v['value']);
      if (node === undefined || !(value > 0)) continue;
      bandwidthGBps.set(node, Math.max(bandwidthGBps.get(node) ?? 0, value / 1000));
    }
  }
  for (const wanted of ['Latency', 'ReadLatency']) {
    const values = attrValues(wanted);
    if (!values || latencyNs.size > 0) continue;
    latencyName = wanted;
    for (const v of values) {
      const node = v['target_obj_gp_index'] !== undefined ? byGp.get(v['target_obj_gp_index']) : undefined;
      const value = Number(v['value']);
      if (node === undefined || !(value > 0)) continue;
      const prev = latencyNs.get(node);
      if (!prev || value < prev.ns) latencyNs.set(node, { ns: value, cpus: v['initiator_cpuset'] ? parseHwlocCpuset(v['initiator_cpuset']) : [] });
    }
  }
  if (bandwidthGBps.size === 0 && latencyNs.size === 0 && memattrs.length > 0 && byGp.size === 0) {
    throw new MachineLoadError(`${name}: memory attributes name their NUMANodes by gp_index, but the NUMANode objects have none`);
  }
  return { bandwidthGBps, bandwidthName, latencyNs, latencyName };
}

/**
 * A full latency matrix from each memory node's latency from its nearest initiator (HMAT, hwloc or
 * sysfs access0): lat[c][m] = L_m × SLIT[c][m] / SLIT[i][m], i the nearest node with cpus (the
 * initiator the figure is from). Null when some node has no figure.
 */
function latencyMatrix(nodes: ReadonlyArray<{ id: number; cpus: number[] }>, distances: number[][], local: ReadonlyMap<number, { ns: number }>): number[][] | null {
  const n = nodes.length;
  if (nodes.some((node) => !local.has(node.id))) return null;
  const withCpus = nodes.map((node, i) => (node.cpus.length > 0 ? i : -1)).filter((i) => i >= 0);
  if (withCpus.length === 0) return null;
  return Array.from({ length: n }, (_, c) =>
    Array.from({ length: n }, (_, m) => {
      const base = local.get(nodes[m]!.id)!.ns;
      const nearest = Math.min(...withCpus.map((i) => distances[i]![m]!));
      return nearest > 0 ? (base * distances[c]![m]!) / nearest : base;
    }),
  );
}

// ---------------------------------------------------------------------------------------------
// Linux sysfs

/**
 * A machine from a copy of the kernel's sysfs (a map of path → file text, paths as under /sys, with
 * or without the leading `/sys/`): `devices/system/node/nodeN/{cpulist,meminfo,distance}`, the
 * HMAT figures of each node's nearest initiators `devices/system/node/nodeN/access0/initiators/
 * {read,write}_{bandwidth,latency}` (MB/s, ns; Linux 5.2+, firmware with an ACPI HMAT), and the
 * memory tiers `devices/virtual/memory_tiering/memory_tierK/nodelist` (Linux 6.1+; a lower K is a
 * faster tier). Nodes with memory and an empty cpulist are memory-only (CXL, HBM in flat mode).
 * Pure: the caller reads the files (the CLI from a directory, a test from a fixture).
 */
export function machineFromSysfs(files: ReadonlyMap<string, string> | Record<string, string>, name = 'sysfs'): TraceMachine {
  const map = new Map<string, string>();
  for (const [k, v] of files instanceof Map ? files : Object.entries(files)) map.set(k.replace(/^\/?(sys\/)?/, ''), v);
  const nodeIds = [...new Set([...map.keys()].map((k) => /^devices\/system\/node\/node(\d+)\//.exec(k)?.[1]).filter((x): x is string => x !== undefined).map(Number))].sort((a, b) => a - b);
  if (nodeIds.length === 0) throw new MachineLoadError(`${name}: no devices/system/node/nodeN/ files (copy /sys/devices/system/node and /sys/devices/virtual/memory_tiering)`);
  const file = (node: number, rest: string) => map.get(`devices/system/node/node${node}/${rest}`);
  const n = nodeIds.length;
  const hmat = new Map<number, { ns: number }>();
  let bwCount = 0;
  const nodes = nodeIds.map((id) => {
    const cpulist = file(id, 'cpulist');
    const cpus = cpulist !== undefined ? parseCpuList(cpulist, `${name}: node${id}/cpulist`) : [];
    const memTotal = /MemTotal:\s*(\d+)\s*kB/.exec(file(id, 'meminfo') ?? '');
    const readBw = Number(file(id, 'access0/initiators/read_bandwidth'));
    const readLat = Number(file(id, 'access0/initiators/read_latency'));
    if (readBw > 0) bwCount++;
    if (readLat > 0) hmat.set(id, { ns: readLat });
    return { id, cpus, memoryBytes: memTotal ? Number(memTotal[1]) * 1024 : null, memoryBandwidthGBps: readBw > 0 ? readBw / 1000 : null };
  });
  // SLIT: each node's distance file lists its distances to the online nodes in id order.
  let distances: number[][] = [];
  const rows = nodeIds.map((id) => (file(id, 'distance') ?? '').trim().split(/\s+/).filter(Boolean).map(Number));
  if (rows.every((r) => r.length === n && r.every((v) => Number.isFinite(v) && v > 0))) distances = rows;
  // Memory tiers: ranked by their id (the kernel's tier id grows with abstract distance).
  const tiers = [...map.keys()]
    .map((k) => /^devices\/virtual\/memory_tiering\/memory_tier(\d+)\/nodelist$/.exec(k))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ tier: Number(m[1]), nodes: parseCpuList(map.get(m[0])!, `${name}: ${m[0]}`) }))
    .sort((a, b) => a.tier - b.tier);
  const rank = new Map<number, number>();
  tiers.forEach((t, r) => t.nodes.forEach((node) => rank.set(node, r)));
  const withTiers = nodes.map((node) => (rank.has(node.id) ? { ...node, memoryTier: rank.get(node.id)! } : node));
  const latencies = distances.length === n ? latencyMatrix(nodes, distances, hmat) : null;
  const provenance: Record<string, string> = {
    nodes: `measured:devices/system/node in ${name}`,
    cpus: `measured:nodeN/cpulist in ${name}${nodes.some((x) => x.cpus.length === 0) ? ' (nodes with an empty cpulist are memory-only)' : ''}`,
    memoryBytes: `measured:nodeN/meminfo MemTotal in ${name}`,
    memoryBandwidthGBps:
      bwCount === n
        ? `documented:firmware HMAT figures in sysfs, nodeN/access0/initiators/read_bandwidth (from the node's nearest initiators) in ${name}`
        : bwCount > 0
          ? `estimated:HMAT read_bandwidth for ${bwCount} of ${n} nodes in ${name}; the others by rule M1b`
          : `unavailable:no HMAT access0 figures in ${name} (firmware without an ACPI HMAT, or a kernel before 5.2)`,
    latenciesNs: latencies
      ? `estimated:HMAT nodeN/access0/initiators/read_latency for each node's nearest initiators in ${name}; other pairs scaled by the SLIT ratio`
      : `unavailable:no complete HMAT latencies in ${name}; the model estimates latency from the SLIT`,
    distances: distances.length === n ? `measured:nodeN/distance (ACPI SLIT) in ${name}` : `unavailable:no complete nodeN/distance in ${name}`,
    links: 'unavailable:sysfs carries no interconnect links',
  };
  if (tiers.length > 0 && rank.size === n) provenance['memoryTier'] = `measured:devices/virtual/memory_tiering/memory_tier*/nodelist in ${name}, ranked by tier id`;
  return {
    name,
    source: `sysfs:${name}`,
    kernel: null,
    cpuModel: null,
    pageSizeBytes: 4096,
    nodes: rank.size === n ? withTiers : nodes,
    distances,
    latenciesNs: latencies,
    links: [],
    routes: null,
    provenance,
  };
}

/** "0-3,8,10-11" → [0,1,2,3,8,10,11] (the kernel's list format). Empty text: []. */
export function parseCpuList(text: string, what: string): number[] {
  const out: number[] = [];
  const t = text.trim();
  if (t === '') return out;
  for (const part of t.split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) throw new MachineLoadError(`${what}: "${part}" is not a number or a range a-b`);
    const a = Number(m[1]);
    const b = m[2] !== undefined ? Number(m[2]) : a;
    if (b < a || b - a > 1 << 16) throw new MachineLoadError(`${what}: range ${part} is reversed or too long`);
    for (let x = a; x <= b; x++) out.push(x);
  }
  return out;
}

function hwlocDistances(topology: XmlElement, ids: number[], name: string): number[][] | null {
  const n = ids.length;
  const pos = new Map(ids.map((id, i) => [id, i]));
  const numbers = (el: XmlElement, tag: string) =>
    el.children.filter((c) => c.name === tag).flatMap((c) => c.text.trim().split(/\s+/).filter(Boolean).map(Number));
  // hwloc 2: <distances2 type="NUMANode" nbobjs=".." kind=".." name="NUMALatency" indexing="os">
  for (const d of descendants([topology], 'distances2')) {
    const attrs = d.attrs;
    if (attrs['type'] !== 'NUMANode') continue;
    if (attrs['name'] && attrs['name'] !== 'NUMALatency') continue;
    const count = Number(attrs['nbobjs']);
    const indexes = numbers(d, 'indexes');
    const values = numbers(d, 'u64values');
    if (indexes.length !== count || values.length !== count * count) {
      throw new MachineLoadError(`${name}: NUMALatency distances announce ${count} objects but hold ${indexes.length} indexes and ${values.length} values`);
    }
    if (attrs['indexing'] && attrs['indexing'] !== 'os') throw new MachineLoadError(`${name}: distances indexing "${attrs['indexing']}" is not supported (only "os")`);
    return toMatrix(indexes, (i, j) => values[i * count + j]!, pos, n, name);
  }
  // hwloc 1: <distances nbobjs="N" relative_depth=".." latency_base=".."> <latency value="1.6"/> ...
  for (const d of descendants([topology], 'distances')) {
    const count = Number(d.attrs['nbobjs']);
    const values = d.children.filter((c) => c.name === 'latency').map((c) => Number(c.attrs['value']));
    if (count !== n || values.length !== n * n) continue;
    return toMatrix(ids, (i, j) => Math.round(values[i * n + j]! * 10), pos, n, name);
  }
  return null;
}

function toMatrix(indexes: number[], cell: (i: number, j: number) => number, pos: Map<number, number>, n: number, name: string): number[][] {
  const out = Array.from({ length: n }, () => new Array<number>(n).fill(0));
  for (let i = 0; i < indexes.length; i++) {
    for (let j = 0; j < indexes.length; j++) {
      const a = pos.get(indexes[i]!);
      const b = pos.get(indexes[j]!);
      if (a === undefined || b === undefined) throw new MachineLoadError(`${name}: distances name node ${indexes[a === undefined ? i : j]}, which has no NUMANode object`);
      out[a]![b] = cell(i, j);
    }
  }
  return out;
}

/** Picks the loader by content: XML (hwloc) or JSON. */
export function machineFromText(text: string, name: string): TraceMachine {
  const head = text.trimStart();
  if (head.startsWith('<')) return machineFromHwlocXml(text, name);
  if (head.startsWith('{')) return machineFromJson(text, name);
  throw new MachineLoadError(`${name} is neither hwloc XML nor JSON (it starts with ${JSON.stringify(head.slice(0, 20))})`);
}
