/** Reading generated traces back as plain columns, for the property tests. */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dictionaryColumn, numericColumn, readTrace, stringColumn, type Trace } from '../generator/engine.js';

export const SAMPLE_TRACES_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export function readCommitted(file: string): Trace {
  return readTrace(readFileSync(join(SAMPLE_TRACES_DIR, file)));
}

/** A dictionary column decoded to one string per row. */
export function strings(trace: Trace, table: keyof Trace['tables'], column: string): string[] {
  const { codes, values } = dictionaryColumn(trace.tables[table], column);
  return Array.from(codes, (code) => values[code]!);
}

export function numbers(trace: Trace, table: keyof Trace['tables'], column: string): number[] {
  return Array.from(numericColumn(trace.tables[table], column) as ArrayLike<number | bigint>, Number);
}

export function texts(trace: Trace, table: keyof Trace['tables'], column: string): (string | null)[] {
  return stringColumn(trace.tables[table], column);
}

/** Node id of every cpu of the trace's machine. */
export function nodeOfCpu(trace: Trace): Map<number, number> {
  const map = new Map<number, number>();
  for (const node of trace.manifest.machine.nodes) for (const cpu of node.cpus) map.set(cpu, node.id);
  return map;
}

/** The sample rows that are memory accesses (loads and stores), with what the tests need. */
export interface Access {
  timeUs: number;
  thread: number;
  cpu: number;
  page: number;
  op: string;
  dataSource: string;
  hops: number;
  node: number;
  latencyCycles: number;
  weight: number;
}

export function accesses(trace: Trace): Access[] {
  const op = strings(trace, 'samples', 'op');
  const dataSource = strings(trace, 'samples', 'data_source');
  const [timeUs, thread, cpu, page, hops, node, latency, weight] = ['time_us', 'thread', 'cpu', 'page', 'hops', 'node', 'latency_cycles', 'weight'].map(
    (c) => numbers(trace, 'samples', c),
  ) as number[][];
  const out: Access[] = [];
  for (let i = 0; i < op.length; i++) {
    if (op[i] !== 'load' && op[i] !== 'store') continue;
    out.push({
      timeUs: timeUs![i]!,
      thread: thread![i]!,
      cpu: cpu![i]!,
      page: page![i]!,
      op: op[i]!,
      dataSource: dataSource[i]!,
      hops: hops![i]!,
      node: node![i]!,
      latencyCycles: latency![i]!,
      weight: weight![i]!,
    });
  }
  return out;
}

/** Index of the region allocated at `allocSite`; throws if there is not exactly one. */
export function regionAt(trace: Trace, allocSite: string): number {
  const sites = texts(trace, 'regions', 'alloc_site');
  const matches = sites.flatMap((site, r) => (site === allocSite ? [r] : []));
  if (matches.length !== 1) throw new Error(`expected one region allocated at ${allocSite}, found ${matches.length}`);
  return matches[0]!;
}

/** Count of each value. */
export function tally<T>(values: Iterable<T>): Map<T, number> {
  const counts = new Map<T, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return counts;
}
