/**
 * Machine descriptions from outside the trace: JSON (a `TraceMachine`, or a manifest holding one)
 * and hwloc XML (`lstopo --of xml`, v1 or v2 format, with its NUMA distances). Pure string
 * parsing (no DOM, no Node APIs), so it runs in a browser Worker too.
 */
import type { TraceMachine } from '../trace/types.js';
import { DEFAULT_LOCAL_LATENCY_NS } from './model.js';

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
    return { machine: m, note: `machine calibrated by numascope bench (${m.calibration?.date ?? 'date unknown'})` };
  } catch (e) {
    return { machine: manifest.machine, note: `embedded calibration not used: ${(e as Error).message}` };
  }
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
  return out;
}

// ---------------------------------------------------------------------------------------------
// hwloc XML

interface XmlObject {
  attrs: Record<string, string>;
}

function attributesOf(tag: string): Record<string, string> {
  const attrs: Record<string, string> = {};
  const re = /([A-Za-z_:][\w:.-]*)\s*=\s*"([^"]*)"/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(tag)) !== null) attrs[m[1]!] = m[2]!;
  return attrs;
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
  if (!/<topology[\s>]/.test(xml)) throw new MachineLoadError(`${name} is not an hwloc topology: no <topology> element (make one with \`lstopo --of xml FILE\`)`);
  const objects: XmlObject[] = [];
  const objRe = /<object\s[^>]*type="NUMANode"[^>]*>/g;
  let m: RegExpExecArray | null;
  while ((m = objRe.exec(xml)) !== null) objects.push({ attrs: attributesOf(m[0]) });
  if (objects.length === 0) throw new MachineLoadError(`${name} has no NUMANode objects`);

  const nodes = objects
    .map((o) => {
      const id = Number(o.attrs['os_index']);
      if (!Number.isInteger(id)) throw new MachineLoadError(`${name}: a NUMANode has no integer os_index`);
      const mem = o.attrs['local_memory'];
      return {
        id,
        cpus: o.attrs['cpuset'] ? parseHwlocCpuset(o.attrs['cpuset']) : [],
        memoryBytes: mem !== undefined ? Number(mem) : null,
        memoryBandwidthGBps: null,
      };
    })
    .sort((a, b) => a.id - b.id);
  const ids = nodes.map((node) => node.id);
  const n = nodes.length;

  const distances = hwlocDistances(xml, ids, name);
  const cpuModel = /<info\s+name="CPUModel"\s+value="([^"]*)"/.exec(xml)?.[1] ?? null;
  const provenance: Record<string, string> = {
    nodes: `measured:hwloc NUMANode objects in ${name}`,
    cpus: `measured:hwloc NUMANode cpusets in ${name}`,
    memoryBytes: `measured:hwloc local_memory in ${name}`,
    memoryBandwidthGBps: 'unavailable:hwloc XML carries no memory bandwidth',
    links: 'unavailable:hwloc XML carries no interconnect links',
    latenciesNs: `unavailable:hwloc XML carries relative distances only; the model estimates latency from them (local ${DEFAULT_LOCAL_LATENCY_NS} ns × SLIT / 10)`,
  };
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
    latenciesNs: null,
    links: [],
    routes: null,
    provenance,
  };
}

function hwlocDistances(xml: string, ids: number[], name: string): number[][] | null {
  const n = ids.length;
  const pos = new Map(ids.map((id, i) => [id, i]));
  // hwloc 2: <distances2 type="NUMANode" nbobjs=".." kind=".." name="NUMALatency" indexing="os">
  const d2Re = /<distances2\s([^>]*)>([\s\S]*?)<\/distances2>/g;
  let m: RegExpExecArray | null;
  while ((m = d2Re.exec(xml)) !== null) {
    const attrs = attributesOf(m[1]!);
    if (attrs['type'] !== 'NUMANode') continue;
    if (attrs['name'] && attrs['name'] !== 'NUMALatency') continue;
    const count = Number(attrs['nbobjs']);
    const body = m[2]!;
    const numbers = (tag: string) =>
      [...body.matchAll(new RegExp(`<${tag}[^>]*>([^<]*)</${tag}>`, 'g'))].flatMap((x) => x[1]!.trim().split(/\s+/).filter(Boolean).map(Number));
    const indexes = numbers('indexes');
    const values = numbers('u64values');
    if (indexes.length !== count || values.length !== count * count) {
      throw new MachineLoadError(`${name}: NUMALatency distances announce ${count} objects but hold ${indexes.length} indexes and ${values.length} values`);
    }
    if (attrs['indexing'] && attrs['indexing'] !== 'os') throw new MachineLoadError(`${name}: distances indexing "${attrs['indexing']}" is not supported (only "os")`);
    return toMatrix(indexes, (i, j) => values[i * count + j]!, pos, n, name);
  }
  // hwloc 1: <distances nbobjs="N" relative_depth=".." latency_base=".."> <latency value="1.6"/> ...
  const d1Re = /<distances\s([^>]*)>([\s\S]*?)<\/distances>/g;
  while ((m = d1Re.exec(xml)) !== null) {
    const attrs = attributesOf(m[1]!);
    const count = Number(attrs['nbobjs']);
    const values = [...m[2]!.matchAll(/<latency\s+value="([^"]*)"/g)].map((x) => Number(x[1]));
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
