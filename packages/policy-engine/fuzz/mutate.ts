/**
 * The seeded mutator: input `index` of run `seed` is a base trace of the corpus with one to three
 * mutations applied, every choice drawn from a PRNG seeded by (seed, index) alone, so any input
 * can be made again on its own (`npm run fuzz:trace -- --seed S --only I`).
 *
 * Mutations act at three levels:
 * - the file's bytes: bit flips, byte sets, truncation, chunk duplication and removal, bytes
 *   added at either end, edits of ZIP header fields (sizes, CRCs, counts, offsets, methods);
 * - the entries, re-packed with correct CRCs so that the damage reaches the parsers behind the
 *   CRC check: bytes and 32/64-bit integers written inside an Arrow entry (its flatbuffer
 *   metadata lies at both ends), out-of-range values in reference and dictionary-code columns,
 *   entries dropped, duplicated, renamed (`..`, absolute), deflated, or given lying sizes;
 * - manifest.json: huge and odd numbers, wrong types, dropped keys, deep nesting, long arrays and
 *   strings, node and cpu id edits, duplicate keys, and its raw text.
 */
import { tableFromIPC, type Data } from 'apache-arrow';
import { TABLE_SCHEMAS } from '../src/trace/schema.js';
import { TABLE_NAMES, type TableName } from '../src/trace/types.js';
import type { CorpusEntry } from './corpus.js';
import { buildZip, CENTRAL_FIELDS, END_FIELDS, entriesOf, headerOffsets, LOCAL_FIELDS, readField, writeField, type RawEntry } from './zip-edit.js';

export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0;
  }
  /** mulberry32 */
  next(): number {
    this.s = (this.s + 0x6d2b79f5) >>> 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(a: readonly T[]): T {
    return a[this.int(a.length)]!;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

/** The PRNG seed of input `index` of run `seed`. */
export function inputSeed(seed: number, index: number): number {
  let h = Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(index + 1, 0xc2b2ae35);
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  return h >>> 0;
}

export interface FuzzInput {
  bytes: Uint8Array;
  base: string;
  /** What was done, e.g. `arrow-ref samples.thread row 12 = 70`. */
  mutations: string[];
}

const SPECIAL_U32 = [0, 1, 0x7f, 0x80, 0xff, 0xffff, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff];
const SPECIAL_NUMBERS = [1e308, -1e308, 2 ** 53 + 2, 2 ** 31, 2 ** 32, -1, -(2 ** 31), 1e21, 0, 0.5, -0, 2 ** 63];

type Mutation = (bytes: Uint8Array, r: Rng) => { bytes: Uint8Array; note: string };

// ---- the file's bytes -----------------------------------------------------------------------

const bitFlips: Mutation = (b, r) => {
  const out = b.slice();
  const n = 1 + r.int(16);
  for (let k = 0; k < n; k++) out[r.int(out.length)]! ^= 1 << r.int(8);
  return { bytes: out, note: `bit-flips ×${n}` };
};

const byteSets: Mutation = (b, r) => {
  const out = b.slice();
  const n = 1 + r.int(8);
  for (let k = 0; k < n; k++) out[r.int(out.length)] = r.pick([0, 0xff, 0x7f, 0x80, r.int(256)]);
  return { bytes: out, note: `byte-sets ×${n}` };
};

const truncate: Mutation = (b, r) => {
  const at = r.chance(0.5) ? r.int(b.length) : b.length - 1 - r.int(Math.min(b.length, 200));
  return { bytes: b.slice(0, Math.max(0, at)), note: `truncate at ${at}` };
};

const chunkDuplicate: Mutation = (b, r) => {
  const len = 1 + r.int(Math.min(4096, b.length));
  const from = r.int(Math.max(1, b.length - len));
  const to = r.int(b.length);
  const out = new Uint8Array(b.length + len);
  out.set(b.subarray(0, to));
  out.set(b.subarray(from, from + len), to);
  out.set(b.subarray(to), to + len);
  return { bytes: out, note: `chunk-duplicate ${from}+${len} at ${to}` };
};

const chunkRemove: Mutation = (b, r) => {
  const len = 1 + r.int(Math.min(4096, b.length));
  const from = r.int(Math.max(1, b.length - len));
  const out = new Uint8Array(b.length - len);
  out.set(b.subarray(0, from));
  out.set(b.subarray(from + len), from);
  return { bytes: out, note: `chunk-remove ${from}+${len}` };
};

const addBytes: Mutation = (b, r) => {
  const extra = new Uint8Array(1 + r.int(512)).map(() => r.int(256));
  const front = r.chance(0.3);
  const out = new Uint8Array(b.length + extra.length);
  out.set(front ? extra : b);
  out.set(front ? b : extra, front ? extra.length : b.length);
  return { bytes: out, note: `add ${extra.length} bytes at the ${front ? 'start' : 'end'}` };
};

const zipField: Mutation = (b, r) => {
  const h = headerOffsets(b);
  const kinds = (['local', 'central', 'end'] as const).filter((k) => h[k].length > 0);
  if (kinds.length === 0) return bitFlips(b, r);
  const kind = r.pick(kinds);
  const at = r.pick(h[kind]);
  const [off, width, name] = r.pick(kind === 'local' ? LOCAL_FIELDS : kind === 'central' ? CENTRAL_FIELDS : END_FIELDS);
  if (at + off + width > b.length) return bitFlips(b, r);
  const out = b.slice();
  const old = readField(out, at + off, width);
  const choice = r.int(4);
  const value =
    choice === 0 ? r.pick(SPECIAL_U32) : choice === 1 ? old + r.pick([-1, 1, -8, 8, 4096]) : choice === 2 ? old * r.pick([2, 64, 1024, 65536]) : r.int(2 ** (8 * width));
  writeField(out, at + off, width, value >>> 0);
  return { bytes: out, note: `zip ${kind} header at ${at}: ${name} ${old} → ${(value >>> 0) % 2 ** (8 * width)}` };
};

// ---- the entries, re-packed with correct CRCs -------------------------------------------------

function arrowEntries(entries: RawEntry[]): RawEntry[] {
  return entries.filter((e) => e.name.endsWith('.arrow'));
}

/** Flatbuffer metadata sits at both ends of an Arrow file: aim there more often than at the body. */
function arrowPosition(len: number, r: Rng): number {
  const where = r.int(3);
  if (where === 0) return r.int(Math.min(len, 512));
  if (where === 1) return Math.max(0, len - 1 - r.int(Math.min(len, 1024)));
  return r.int(len);
}

function arrowBytes(entries: RawEntry[], r: Rng): string {
  const arrow = arrowEntries(entries);
  if (arrow.length === 0) return 'arrow-bytes (no Arrow entry left)';
  const e = r.pick(arrow);
  e.touched = true;
  const data = e.data.slice();
  const n = 1 + r.int(6);
  for (let k = 0; k < n; k++) {
    const at = arrowPosition(data.length, r);
    if (r.chance(0.5)) data[at]! ^= 1 << r.int(8);
    else data[at] = r.pick([0, 0xff, 0x7f, 0x80, r.int(256)]);
  }
  e.data = data;
  return `arrow-bytes ${e.name} ×${n}`;
}

function arrowInt(entries: RawEntry[], r: Rng): string {
  const arrow = arrowEntries(entries);
  if (arrow.length === 0) return 'arrow-int (no Arrow entry left)';
  const e = r.pick(arrow);
  e.touched = true;
  const data = e.data.slice();
  const at = arrowPosition(data.length, r) & ~3;
  const wide = r.chance(0.3);
  const v = r.pick(SPECIAL_U32);
  if (at + (wide ? 8 : 4) > data.length) return arrowBytes(entries, r);
  writeField(data, at, 4, v);
  if (wide) writeField(data, at + 4, 4, r.pick([0, 0x7fffffff, 0xffffffff, 1]));
  e.data = data;
  return `arrow-int ${e.name} at ${at} = ${v}${wide ? ' (64-bit)' : ''}`;
}

/** A value outside what a reference or dictionary-code column allows, written into the file in place. */
function arrowReference(entries: RawEntry[], r: Rng): string {
  const candidates: Array<{ table: TableName; column: string; dictionary: boolean; ref?: string }> = [];
  for (const table of TABLE_NAMES) {
    for (const spec of TABLE_SCHEMAS[table]) {
      if (spec.ref || spec.type.startsWith('dictionary')) candidates.push({ table, column: spec.name, dictionary: spec.type.startsWith('dictionary'), ref: spec.ref });
    }
  }
  const c = r.pick(candidates);
  const e = entries.find((x) => x.name === `${c.table}.arrow`);
  if (!e || e.touched) return arrowBytes(entries, r);
  const copy = e.data.slice();
  const table = tableFromIPC(copy);
  const rows = table.numRows;
  const vector = table.getChild(c.column);
  if (!vector || rows === 0) return arrowBytes(entries, r);
  const row = r.int(rows);
  let at = row;
  let data: Data | undefined;
  for (const d of vector.data) {
    if (at < d.length) {
      data = d;
      break;
    }
    at -= d.length;
  }
  const values = data?.values as Int8Array | Int16Array | Int32Array | Uint32Array | undefined;
  if (!values || values.buffer !== copy.buffer) return arrowBytes(entries, r);
  const rowsOf = (t: string) => {
    const x = entries.find((y) => y.name === `${t}.arrow`);
    return x && !x.touched ? tableFromIPC(x.data.slice()).numRows : 65536;
  };
  let bad: number;
  if (c.dictionary) bad = r.pick([data!.dictionary?.length ?? 0, 127, -1, -128, 100]);
  else if (c.ref === 'node') bad = r.pick([99, -2, 127, -128, 8, 64]);
  else if (c.ref === 'cpu') bad = r.pick([9999, -2, 32767, 4096, 256]);
  else bad = r.pick([rowsOf(c.ref!), rowsOf(c.ref!) + 1, -2, 2 ** 31 - 1, 65536]);
  values[at] = bad;
  e.data = copy;
  e.touched = true;
  return `arrow-ref ${c.table}.${c.column} row ${row} = ${values[at]}`;
}

function entryEdit(entries: RawEntry[], r: Rng): string {
  if (entries.length === 0) return 'entry-edit (no entry left)';
  const e = r.pick(entries);
  switch (r.int(7)) {
    case 0:
      entries.splice(entries.indexOf(e), 1);
      return `entry-remove ${e.name}`;
    case 1:
      entries.push({ ...e });
      return `entry-duplicate ${e.name}`;
    case 2: {
      const name = r.pick(['../evil.arrow', '/etc/passwd', 'C:\\x.arrow', 'a/../../b.arrow', '', 'samples.arrow', 'manifest.json', 'x.arrow']);
      const old = e.name;
      e.name = name;
      return `entry-rename ${old} → ${JSON.stringify(name)}`;
    }
    case 3:
      e.method = 8;
      return `entry-deflate ${e.name}`;
    case 4: {
      e.method = 8;
      e.uncompressedSize = r.pick([0xffffffff - 1, 2 ** 31, e.data.length * 2000, e.data.length + 1, Math.max(0, e.data.length - 1)]);
      return `entry-deflate ${e.name} declaring ${e.uncompressedSize} bytes`;
    }
    case 5: {
      const n = r.pick([300, 1000, 65534]);
      for (let k = 0; k < n; k++) entries.push({ name: `pad-${k}.bin`, data: new Uint8Array(0), method: 0 });
      return `entry-count +${n}`;
    }
    default: {
      e.crc = r.int(2 ** 32);
      return `entry-crc ${e.name}`;
    }
  }
}

// ---- manifest.json ---------------------------------------------------------------------------

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Path = Array<string | number>;

function paths(v: Json, path: Path = [], out: Path[] = []): Path[] {
  if (out.length > 4000) return out;
  out.push(path);
  if (Array.isArray(v)) v.slice(0, 64).forEach((x, i) => paths(x, [...path, i], out));
  else if (v && typeof v === 'object') for (const k of Object.keys(v)) paths(v[k]!, [...path, k], out);
  return out;
}

function setAt(root: Json, path: Path, value: Json | undefined): Json {
  if (path.length === 0) return value === undefined ? null : value;
  let parent = root as Record<string | number, Json>;
  for (const k of path.slice(0, -1)) parent = parent[k] as Record<string | number, Json>;
  const last = path[path.length - 1]!;
  if (value === undefined) {
    if (Array.isArray(parent)) parent.splice(last as number, 1);
    else delete parent[last];
  } else parent[last] = value;
  return root;
}

function getAt(root: Json, path: Path): Json {
  let v = root;
  for (const k of path) v = (v as Record<string | number, Json>)[k]!;
  return v;
}

function nested(depth: number): string {
  return '['.repeat(depth) + ']'.repeat(depth);
}

function manifestEdit(entries: RawEntry[], r: Rng): string {
  const e = entries.find((x) => x.name === 'manifest.json');
  if (!e || e.touched) return entryEdit(entries, r);
  e.touched = true;
  const retry = () => {
    e.touched = false;
    return manifestEdit(entries, r);
  };
  let m = JSON.parse(new TextDecoder().decode(e.data)) as Json;
  const all = paths(m);
  const path = r.pick(all);
  const where = path.join('.') || '(root)';
  let note: string;
  let text: string | null = null;
  const machine = (m as { machine?: { nodes?: Array<{ id: number; cpus: number[] }> } }).machine;
  switch (r.int(12)) {
    case 0: {
      const v = r.pick(SPECIAL_NUMBERS);
      m = setAt(m, path, v);
      note = `${where} = ${v}`;
      break;
    }
    case 1: {
      const v = r.pick<Json>(['', 'x', [], {}, true, null, [1, 2], { a: 1 }, -1]);
      m = setAt(m, path, v);
      note = `${where} = ${JSON.stringify(v)}`;
      break;
    }
    case 2:
      m = setAt(m, path, undefined);
      note = `delete ${where}`;
      break;
    case 3: {
      const depth = r.pick([70, 1000, 100000]);
      const marker = '"__NEST__"';
      m = setAt(m, path, '__NEST__');
      text = JSON.stringify(m).replace(marker, nested(depth));
      note = `${where} = nesting ${depth} deep`;
      break;
    }
    case 4: {
      // Long lists, of the right or a wrong type: a validator that reports every bad item can be
      // made to spend gigabytes on its report.
      const n = r.pick([1000, 100000, 2000000]);
      const v = getAt(m, path);
      const item = r.pick<Json>([Array.isArray(v) && v.length > 0 ? v[0]! : 1, 1.5, 'x', {}, null]);
      m = setAt(m, path, Array.from({ length: n }, () => item));
      note = `${where} = array of ${n} × ${JSON.stringify(item)}`;
      break;
    }
    case 5: {
      const n = r.pick([4096, 1 << 20, 3 << 20]);
      m = setAt(m, path, 'x'.repeat(n));
      note = `${where} = string of ${n}`;
      break;
    }
    case 6: {
      if (!machine?.nodes?.length) return retry();
      const i = r.int(machine.nodes.length);
      const v = r.pick([-1, 5, 99, 127, 128, 1023, 1024, 2 ** 31, machine.nodes[(i + 1) % machine.nodes.length]!.id]);
      machine.nodes[i]!.id = v;
      note = `machine.nodes[${i}].id = ${v}`;
      break;
    }
    case 7: {
      if (!machine?.nodes?.length) return retry();
      const i = r.int(machine.nodes.length);
      const v = r.pick([-1, 32767, 32768, 65535, 2 ** 31, machine.nodes[0]!.cpus[0] ?? 0]);
      machine.nodes[i]!.cpus.push(v);
      note = `machine.nodes[${i}].cpus += ${v}`;
      break;
    }
    case 8: {
      if (!machine?.nodes?.length) return retry();
      const n = r.pick([300, 2000]);
      const base = machine.nodes[0]!;
      machine.nodes = Array.from({ length: n }, (_, i) => ({ ...base, id: i, cpus: [] }));
      note = `machine.nodes × ${n}`;
      break;
    }
    case 9: {
      const capture = (m as { capture?: Record<string, Json> }).capture;
      if (!capture) return retry();
      const v = r.pick([1e15, 2 ** 32 + 1, 1e308, -5]);
      capture.durationUs = v;
      note = `capture.durationUs = ${v}`;
      break;
    }
    case 10:
      text = JSON.stringify(m).replace(/^\{/, r.pick(['{"format":"x",', '{"version":1,"version":2,', '{"__proto__":{"polluted":1},']));
      note = 'duplicate or odd key';
      break;
    default: {
      const bytes = new TextEncoder().encode(JSON.stringify(m));
      const n = 1 + r.int(4);
      for (let k = 0; k < n; k++) bytes[r.int(bytes.length)] = r.pick([0x22, 0x7b, 0x5d, 0x30, 0x2d, 0x65, 0xff, r.int(128)]);
      e.data = bytes;
      return `manifest-text ×${n}`;
    }
  }
  e.data = new TextEncoder().encode(text ?? JSON.stringify(m));
  return `manifest ${note}`;
}

// ---- driver ----------------------------------------------------------------------------------

type EntryMutation = (entries: RawEntry[], r: Rng) => string;

/** [weight, mutation]: about half the inputs get past the CRC check (entry-level mutations). */
const MUTATIONS: Array<[number, Mutation | { entries: EntryMutation }]> = [
  [6, bitFlips],
  [4, byteSets],
  [3, truncate],
  [2, chunkDuplicate],
  [2, chunkRemove],
  [1, addBytes],
  [6, zipField],
  [6, { entries: arrowBytes }],
  [6, { entries: arrowInt }],
  [8, { entries: arrowReference }],
  [5, { entries: entryEdit }],
  [12, { entries: manifestEdit }],
];
const TOTAL_WEIGHT = MUTATIONS.reduce((n, [w]) => n + w, 0);

function pickMutation(r: Rng): Mutation | { entries: EntryMutation } {
  let x = r.int(TOTAL_WEIGHT);
  for (const [w, m] of MUTATIONS) {
    if (x < w) return m;
    x -= w;
  }
  return bitFlips;
}

/**
 * Input `index` of run `seed` (see the module comment). Entry-level mutations run first, on the
 * entries of the (valid) base trace, then the file is packed and byte-level mutations follow: the
 * mutator itself never parses a damaged ZIP.
 */
export function makeInput(corpus: readonly CorpusEntry[], seed: number, index: number): FuzzInput {
  const r = new Rng(inputSeed(seed, index));
  const base = r.pick(corpus);
  const n = r.chance(0.7) ? 1 : r.chance(0.6) ? 2 : 3;
  const chosen = Array.from({ length: n }, () => pickMutation(r));
  const mutations: string[] = [];
  let bytes = base.bytes;
  const entryLevel = chosen.filter((m): m is { entries: EntryMutation } => typeof m !== 'function');
  if (entryLevel.length > 0) {
    const entries = entriesOf(base.bytes);
    for (const m of entryLevel) {
      if (entries.length === 0) break;
      mutations.push(m.entries(entries, r));
    }
    bytes = buildZip(entries);
  }
  for (const m of chosen) {
    if (typeof m !== 'function' || bytes.length === 0) continue;
    const out = m(bytes, r);
    bytes = out.bytes;
    mutations.push(out.note);
  }
  return { bytes, base: base.name, mutations };
}
