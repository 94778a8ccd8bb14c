/**
 * The traces the fuzzer mutates: the sample traces of sample-traces/ (four synthetic, two real
 * recordings: one written by the Rust collector on a 1-node VM, one in the 4-node QEMU guest), each
 * also cut down to a few hundred rows per table (same machine, dictionaries and column layout,
 * ~40 KB, so that a mutation lands on metadata more often and an input runs in milliseconds), and
 * an empty trace. Deterministic: the same files give the same corpus.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Table } from 'apache-arrow';
import { dictionaryColumn, numericColumn, stringColumn } from '../src/trace/columns.js';
import { readTrace } from '../src/trace/reader.js';
import { TABLE_SCHEMAS } from '../src/trace/schema.js';
import { TABLE_NAMES, type TableName, type TraceManifest } from '../src/trace/types.js';
import { emptyColumns, writeTrace, type ColumnValues, type TableColumns, type TraceColumns } from '../src/trace/writer.js';
import { minimalManifest } from '../test/helpers/minimal-trace.js';

export type CorpusKind = 'small' | 'full' | 'mixed';

export interface CorpusEntry {
  name: string;
  bytes: Uint8Array;
}

export const SAMPLE_TRACES_DIR = join(dirname(fileURLToPath(import.meta.url)), '../../../sample-traces');

/** Rows kept per table in a cut trace (samples are kept only where their page is kept). */
const CUT_ROWS: Record<TableName, number> = {
  samples: 600,
  pages: 200,
  threads: Infinity,
  regions: Infinity,
  thread_placements: 120,
  region_placements: 120,
  counters: 120,
  events: 40,
  // Kept whole: allocations point into the other three by row and stack id (samples by stack id too).
  allocations: Infinity,
  stacks: Infinity,
  frames: Infinity,
  modules: Infinity,
};

type Indexable = { length: number; [i: number]: unknown };

function select<T extends Indexable>(values: T, rows: readonly number[]): T {
  if (Array.isArray(values)) return rows.map((r) => values[r]) as unknown as T;
  const Ctor = (values as unknown as { constructor: new (n: number) => T }).constructor;
  const out = new Ctor(rows.length);
  rows.forEach((r, i) => (out[i] = values[r]));
  return out;
}

function tableColumns(name: TableName, table: Table, rows: readonly number[]): TableColumns {
  const out: TableColumns = {};
  for (const spec of TABLE_SCHEMAS[name]) {
    if (spec.optional && !table.getChild(spec.name)) continue; // the file lacks it: so does the cut
    let values: ColumnValues;
    if (spec.type.startsWith('dictionary')) {
      const d = dictionaryColumn(table, spec.name);
      values = Array.from(d.codes, (c) => d.values[c]!);
    } else if (spec.type === 'utf8') values = stringColumn(table, spec.name);
    else values = numericColumn(table, spec.name) as unknown as ColumnValues;
    out[spec.name] = select(values as unknown as Indexable, rows) as unknown as ColumnValues;
  }
  return out;
}

/** The trace cut to CUT_ROWS; every reference still points inside its table. */
export function cutTrace(bytes: Uint8Array): Uint8Array {
  const trace = readTrace(bytes);
  const first = (name: TableName) => Array.from({ length: Math.min(trace.tables[name].numRows, CUT_ROWS[name]) }, (_, i) => i);
  const pageRows = first('pages');
  const page = numericColumn<Int32Array>(trace.tables.samples, 'page');
  const sampleRows: number[] = [];
  for (let i = 0; i < page.length && sampleRows.length < CUT_ROWS.samples; i++) if (page[i]! < pageRows.length) sampleRows.push(i);
  const columns = emptyColumns();
  for (const name of TABLE_NAMES) columns[name] = tableColumns(name, trace.tables[name], name === 'samples' ? sampleRows : first(name));
  const manifest = structuredClone(trace.manifest) as TraceManifest;
  manifest.origin.description = `${manifest.origin.description} (cut for the fuzzer)`;
  return writeTrace(manifest, columns as TraceColumns);
}

export function loadCorpus(kind: CorpusKind): CorpusEntry[] {
  const files = readdirSync(SAMPLE_TRACES_DIR)
    .filter((f) => f.endsWith('.numascope'))
    .sort();
  const out: CorpusEntry[] = [{ name: 'empty', bytes: writeTrace(minimalManifest(), emptyColumns()) }];
  for (const f of files) {
    const bytes = new Uint8Array(readFileSync(join(SAMPLE_TRACES_DIR, f)));
    if (kind !== 'full') out.push({ name: `${f} (cut)`, bytes: cutTrace(bytes) });
    if (kind !== 'small') out.push({ name: f, bytes });
  }
  return out;
}
