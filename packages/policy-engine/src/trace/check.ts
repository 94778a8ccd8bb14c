/**
 * Checks of the decoded tables (docs/robustness.md, "Trace reader"): column types, nulls, string
 * offsets and lengths, dictionary codes, and every reference column (schema.ts `ref`) against the
 * table, machine node or cpu it points at. Vectorised: one tight loop per column over the Arrow
 * chunks' typed arrays (a min/max scan, or a lookup table for node and cpu ids); the offending
 * row is only searched for once a column is known to be bad.
 */
import { DataType, Precision, makeVector, type Data, type Table, type Vector } from 'apache-arrow';
import { numericColumn } from './columns.js';
import { isEquivalentType, toFormatType, withColumns } from './equivalent.js';
import { TraceError } from './errors.js';
import { MAX_TIME_US, type TraceLimits } from './limits.js';
import { TABLE_SCHEMAS, type ColumnSpec, type ColumnType } from './schema.js';
import { CURRENT_TRACE_VERSION, type TableName, type TraceManifest } from './types.js';

/** The format's name for an Arrow type, as used in the schema and in error messages. */
export function describeArrowType(t: DataType): string {
  if (DataType.isInt(t)) return `${t.isSigned ? 'int' : 'uint'}${t.bitWidth}`;
  if (DataType.isFloat(t)) {
    return t.precision === Precision.DOUBLE ? 'float64' : t.precision === Precision.SINGLE ? 'float32' : 'float16';
  }
  if (DataType.isUtf8(t)) return 'utf8';
  if (DataType.isLargeUtf8(t)) return 'large_utf8';
  if (DataType.isUtf8View(t)) return 'utf8_view';
  if (DataType.isDictionary(t)) return `dictionary<${describeArrowType(t.indices)}, ${describeArrowType(t.dictionary)}>`;
  return String(t);
}

type IntArray = Int8Array | Int16Array | Int32Array | Uint8Array | Uint16Array | Uint32Array;

function isIntArray(a: unknown): a is IntArray {
  return a instanceof Int8Array || a instanceof Int16Array || a instanceof Int32Array || a instanceof Uint8Array || a instanceof Uint16Array || a instanceof Uint32Array;
}

/** A chunk's first `length` values, or an error when the chunk is shorter than it says. */
function valuesOf(data: Data, where: string): IntArray {
  const v = data.values as unknown;
  if (!isIntArray(v) || v.length < data.length) {
    throw new TraceError('table-corrupt', `Column ${where} has fewer values than rows. The trace is damaged; fetch it again.`);
  }
  return v.length === data.length ? v : v.subarray(0, data.length);
}

function firstNull(data: Data): number {
  for (let i = 0; i < data.length; i++) if (!data.getValid(i)) return i;
  return -1;
}

/** Checks a utf8 chunk's offsets: non-decreasing, inside the data, no value over the limit. */
function checkStrings(data: Data, where: string, firstRow: number, limits: TraceLimits): void {
  if (data.length === 0) return;
  const offsets = data.valueOffsets as unknown;
  const bytes = data.values as unknown as Uint8Array;
  if (!(offsets instanceof Int32Array) || offsets.length < data.length + 1 || !(bytes instanceof Uint8Array)) {
    throw new TraceError('table-corrupt', `Column ${where} has damaged string offsets. The trace is damaged; fetch it again.`);
  }
  const max = limits.maxStringBytes;
  let prev = offsets[0]!;
  let bad = prev < 0 ? 0 : -1;
  let long = -1;
  for (let i = 1; i <= data.length && bad < 0; i++) {
    const o = offsets[i]!;
    if (o < prev) bad = i - 1;
    else if (o - prev > max && long < 0) long = i - 1;
    prev = o;
  }
  if (bad < 0 && prev > bytes.length) bad = data.length - 1;
  if (bad >= 0) {
    throw new TraceError('table-corrupt', `Column ${where}, row ${firstRow + bad}: the string's offsets point outside the column's ${bytes.length} bytes of text. The trace is damaged; fetch it again.`);
  }
  if (long >= 0) {
    throw new TraceError(
      'table-limits',
      `Column ${where}, row ${firstRow + long}: a string of ${offsets[long + 1]! - offsets[long]!} bytes, more than the ${max} this reader accepts for one value.`,
    );
  }
}

/**
 * Column types, lengths, nulls, strings and dictionary codes of one table (before the manifest is
 * trusted: nothing here looks at other tables).
 */
/**
 * An int64 time column (µs since the capture started, v4) as the numbers the code reads: Uint32
 * when every value is below 2^32, else Float64 (exact: the values are at most MAX_TIME_US). A
 * negative time or one above MAX_TIME_US is refused, naming the row. Reads each value's two
 * 32-bit halves, so 10 M rows cost no BigInt arithmetic.
 */
function timeColumn(vector: Vector, where: string): Vector {
  const n = vector.length;
  let wide = false;
  let row = 0;
  const lowHigh: Uint32Array[] = [];
  for (const data of vector.data) {
    const v = data.values as BigInt64Array;
    const halves = new Uint32Array(v.buffer, v.byteOffset, data.length * 2);
    for (let i = 0; i < data.length; i++) {
      const hi = halves[2 * i + 1]!;
      if (hi !== 0) {
        // 2^53 - 1 has 21 bits in its high half; a negative value has its top bit set.
        if (hi >= 0x200000) {
          const value = v[i]!;
          throw new TraceError(
            'table-corrupt',
            `Column ${where}, row ${row + i}: time ${value} µs is outside 0 to ${MAX_TIME_US} µs. The trace is damaged or was written by another tool.`,
          );
        }
        wide = true;
      }
    }
    lowHigh.push(halves);
    row += data.length;
  }
  const out = wide ? new Float64Array(n) : new Uint32Array(n);
  let k = 0;
  for (const halves of lowHigh) {
    const len = halves.length / 2;
    for (let i = 0; i < len; i++) out[k++] = wide ? halves[2 * i + 1]! * 4294967296 + halves[2 * i]! : halves[2 * i]!;
  }
  return makeVector(out);
}

export function checkTable(name: TableName, table: Table, limits: TraceLimits): Table {
  // Columns another Arrow writer stored in an equivalent layout, converted to the format's type.
  const replaced = new Map<string, Vector>();
  for (const col of TABLE_SCHEMAS[name]) {
    const index = table.schema.fields.findIndex((f) => f.name === col.name);
    const field = table.schema.fields[index];
    if (!field) {
      if (col.optional) continue; // written before the column existed: every value unknown
      throw new TraceError(
        'column-missing',
        `Table "${name}" has no column "${col.name}" (expected ${col.type}). The file does not follow trace format v${CURRENT_TRACE_VERSION}; ` +
          'it may come from a development build of another tool.',
      );
    }
    const actual = describeArrowType(field.type);
    let vector = table.getChildAt(index)!;
    if (col.time && (actual === 'int64' || actual === 'uint32')) {
      // int64 in v4, uint32 in versions 1 to 3 (kept as it is: every value is a valid time).
      checkColumn(name, col, vector, table.numRows, limits);
      if (actual === 'int64') replaced.set(col.name, timeColumn(vector, `"${name}.${col.name}"`));
      continue;
    }
    if (actual !== (col.type as ColumnType) && isEquivalentType(field.type, col.type)) {
      vector = toFormatType(vector, col.type, `"${name}.${col.name}"`);
      replaced.set(col.name, vector);
    } else if (actual !== (col.type as ColumnType)) {
      throw new TraceError(
        'column-type',
        `Column "${name}.${col.name}" has type ${actual}, but trace format v${CURRENT_TRACE_VERSION} requires ${col.type}. ` +
          'The file was written by a program that does not follow the format.',
      );
    }
    checkColumn(name, col, vector, table.numRows, limits);
  }
  return withColumns(table, replaced);
}

function checkColumn(table: TableName, col: ColumnSpec, vector: Vector, rows: number, limits: TraceLimits): void {
  const where = `"${table}.${col.name}"`;
  if (vector.length !== rows) {
    throw new TraceError('table-corrupt', `Column ${where} has ${vector.length} rows, but its table has ${rows}. The trace is damaged; fetch it again.`);
  }
  let row = 0;
  // A dictionary is shared by the batches of a column: check each of its chunks once.
  const checkedDictionaries = new Set<Data>();
  let scan: ((chunk: IntArray) => number) | null = null;
  let scanLength = -1;
  for (const data of vector.data) {
    if (!col.nullable && data.nullCount > 0) {
      throw new TraceError('column-null', `Column ${where}, row ${row + firstNull(data)}: null, but trace format v${CURRENT_TRACE_VERSION} never leaves this column empty. The trace is damaged or was written by another tool.`);
    }
    if (col.type === 'utf8') checkStrings(data, where, row, limits);
    else if (!((data.values as ArrayLike<unknown> | undefined)?.length! >= data.length)) {
      throw new TraceError('table-corrupt', `Column ${where} has fewer values than rows. The trace is damaged; fetch it again.`);
    }
    else if (col.type.startsWith('dictionary')) {
      const dict = data.dictionary;
      // No dictionary with no rows: an empty table written without dictionary batches (valid Arrow).
      if (!dict && data.length === 0) continue;
      if (!dict) throw new TraceError('table-corrupt', `Column ${where} has no dictionary. The trace is damaged; fetch it again.`);
      let dictRow = 0;
      for (const d of dict.data) {
        if (!checkedDictionaries.has(d)) checkStrings(d, `${where} (dictionary)`, dictRow, limits);
        checkedDictionaries.add(d);
        dictRow += d.length;
      }
      const codes = valuesOf(data, where);
      if (!scan || scanLength !== dict.length) {
        scan = scanner(codes, { lo: 0, hi: dict.length - 1 });
        scanLength = dict.length;
      }
      const bad = scan(codes);
      if (bad >= 0) {
        throw new TraceError(
          'index-out-of-range',
          `Column ${where}, row ${row + bad}: dictionary code ${codes[bad]}, but the column's dictionary has ${dict.length} values (codes 0–${dict.length - 1}). ` +
            'The trace is damaged or was written by a program that does not follow the format.',
        );
      }
    } else if (col.ref) valuesOf(data, where);
    row += data.length;
  }
}

// Scan kernels. Each is written for one typed-array class so that V8 keeps it monomorphic (a
// shared loop over several array classes runs 2-3 times slower). A column is scanned once for
// "all good"; the offending row is searched for only when it is not.

/** Position of the first value outside [lo, hi] (lo is 0 or -1), or -1. Four running maxima (ILP). */
function outside32(a: Int32Array, lo: number, hi: number): number {
  const span = hi - lo;
  let w0 = 0;
  let w1 = 0;
  let w2 = 0;
  let w3 = 0;
  const n4 = a.length & ~3;
  for (let i = 0; i < n4; i += 4) {
    const u0 = (a[i]! - lo) >>> 0;
    const u1 = (a[i + 1]! - lo) >>> 0;
    const u2 = (a[i + 2]! - lo) >>> 0;
    const u3 = (a[i + 3]! - lo) >>> 0;
    if (u0 > w0) w0 = u0;
    if (u1 > w1) w1 = u1;
    if (u2 > w2) w2 = u2;
    if (u3 > w3) w3 = u3;
  }
  for (let i = n4; i < a.length; i++) {
    const u = (a[i]! - lo) >>> 0;
    if (u > w0) w0 = u;
  }
  if (Math.max(w0, w1, w2, w3) <= span) return -1;
  for (let i = 0; i < a.length; i++) if (((a[i]! - lo) >>> 0) > span) return i;
  return -1;
}

function outsideU32(a: Uint32Array, hi: number): number {
  let w0 = 0;
  let w1 = 0;
  let w2 = 0;
  let w3 = 0;
  const n4 = a.length & ~3;
  for (let i = 0; i < n4; i += 4) {
    const v0 = a[i]!;
    const v1 = a[i + 1]!;
    const v2 = a[i + 2]!;
    const v3 = a[i + 3]!;
    if (v0 > w0) w0 = v0;
    if (v1 > w1) w1 = v1;
    if (v2 > w2) w2 = v2;
    if (v3 > w3) w3 = v3;
  }
  for (let i = n4; i < a.length; i++) if (a[i]! > w0) w0 = a[i]!;
  if (Math.max(w0, w1, w2, w3) <= hi) return -1;
  for (let i = 0; i < a.length; i++) if (a[i]! > hi) return i;
  return -1;
}

/**
 * All int8 values in [lo, hi] (lo 0 or -1, hi - lo < 128)? Four values per step, as one 32-bit word
 * (SWAR): each byte is shifted by -lo (a carry-free add of 1 per byte when lo is -1), then a byte
 * above the span sets its top bit once (span's complement to 127) is added to its low 7 bits.
 */
function range8(a: Int8Array, lo: number, hi: number): boolean {
  const span = hi - lo;
  const n = a.length;
  let i = 0;
  let acc = 0;
  const head = Math.min(n, (4 - (a.byteOffset & 3)) & 3);
  for (; i < head; i++) if (((a[i]! - lo) & 0xff) > span) return false;
  const words = (n - i) >>> 2;
  if (words > 0) {
    const w = new Int32Array(a.buffer, a.byteOffset + i, words);
    const k = (127 - span) * 0x01010101;
    if (lo === 0) {
      for (let j = 0; j < words; j++) {
        const y = w[j]!;
        acc |= ((y & 0x7f7f7f7f) + k) | y;
      }
    } else {
      for (let j = 0; j < words; j++) {
        const x = w[j]!;
        const y = ((x & 0x7f7f7f7f) + 0x01010101) ^ (x & 0x80808080);
        acc |= ((y & 0x7f7f7f7f) + k) | y;
      }
    }
    i += words * 4;
  }
  for (; i < n; i++) if (((a[i]! - lo) & 0xff) > span) return false;
  return (acc & 0x80808080) === 0;
}

/** All int16 values in [lo, hi] (lo 0 or -1)? Two values per 32-bit word, as range8. */
function range16(a: Int16Array, lo: number, hi: number): boolean {
  const span = hi - lo;
  const n = a.length;
  let i = 0;
  let acc = 0;
  const head = Math.min(n, a.byteOffset & 3 ? 1 : 0);
  for (; i < head; i++) if (((a[i]! - lo) & 0xffff) > span) return false;
  const words = (n - i) >>> 1;
  if (words > 0) {
    const w = new Int32Array(a.buffer, a.byteOffset + i * 2, words);
    const k = (32767 - span) * 0x00010001;
    if (lo === 0) {
      for (let j = 0; j < words; j++) {
        const y = w[j]!;
        acc |= ((y & 0x7fff7fff) + k) | y;
      }
    } else {
      for (let j = 0; j < words; j++) {
        const x = w[j]!;
        const y = ((x & 0x7fff7fff) + 0x00010001) ^ (x & 0x80008000);
        acc |= ((y & 0x7fff7fff) + k) | y;
      }
    }
    i += words * 2;
  }
  for (; i < n; i++) if (((a[i]! - lo) & 0xffff) > span) return false;
  return (acc & 0x80008000) === 0;
}

/** Position of the first value v with ok[v & mask] = 0 (a plain loop, for the error message or an irregular set), or -1. */
function notIn(a: Int8Array | Int16Array, ok: Uint8Array, mask: number): number {
  let all = 1;
  for (let i = 0; i < a.length; i++) all &= ok[a[i]! & mask]!;
  if (all) return -1;
  for (let i = 0; i < a.length; i++) if (!ok[a[i]! & mask]) return i;
  return -1;
}

/** The values a column may hold: [lo, hi] (lo 0 or -1) plus, for an irregular set of ids, a list. */
interface Allowed {
  lo: number;
  hi: number;
  /** When set: exactly these values (and not the range). */
  values?: readonly number[];
}

/** `-1` plus `ids`: a range when the ids are 0..k-1 (the usual case), else the list. */
function idsOrUnknown(ids: readonly number[]): Allowed {
  const sorted = [...new Set(ids)].sort((x, y) => x - y);
  const contiguous = sorted.every((id, i) => id === i);
  return contiguous ? { lo: -1, hi: sorted.length - 1 } : { lo: -1, hi: -1, values: [-1, ...sorted] };
}

/**
 * A scanner for one column: returns, per chunk of values, the position of the first bad one or -1.
 * int8 and int16 columns are scanned four or two values per step when the allowed values are a
 * range, else by a lookup table; int32 and uint32 by a min/max pass.
 */
function scanner(a: IntArray, allowedValues: Allowed): (chunk: IntArray) => number {
  const { lo, values } = allowedValues;
  if (a instanceof Int8Array || a instanceof Int16Array) {
    const bits = a instanceof Int8Array ? 8 : 16;
    const mask = bits === 8 ? 0xff : 0xffff;
    const top = bits === 8 ? 127 : 32767;
    const hi = Math.min(allowedValues.hi, top + lo);
    const ok = new Uint8Array(mask + 1);
    if (values) for (const v of values) ok[v & mask] = 1;
    else for (let v = lo; v <= hi; v++) ok[v & mask] = 1;
    if (values || hi < lo) return (c) => notIn(c as Int8Array | Int16Array, ok, mask);
    const fast = bits === 8 ? (c: IntArray) => range8(c as Int8Array, lo, hi) : (c: IntArray) => range16(c as Int16Array, lo, hi);
    return (c) => (fast(c) ? -1 : notIn(c as Int8Array | Int16Array, ok, mask));
  }
  const hi = allowedValues.hi;
  if (a instanceof Int32Array) return (c) => outside32(c as Int32Array, lo, hi);
  if (a instanceof Uint32Array) return (c) => outsideU32(c as Uint32Array, hi);
  // Not a type the format uses for codes or references (checkTable checked the types): a plain loop.
  return (c) => {
    for (let i = 0; i < c.length; i++) if (c[i]! < lo || c[i]! > hi || (values && !values.includes(c[i]!))) return i;
    return -1;
  };
}

function listIds(ids: readonly number[]): string {
  return ids.length <= 16 ? ids.join(', ') : `${ids.slice(0, 16).join(', ')}, … (${ids.length})`;
}

/**
 * Every reference column against what it points at (schema.ts `ref`), and counters.scope_id for
 * the `node` and `thread` scopes. The manifest must already be validated.
 */
export function checkReferences(manifest: TraceManifest, tables: Record<TableName, Table>): void {
  const nodeIds = manifest.machine.nodes.map((n) => n.id);
  const cpuIds = manifest.machine.nodes.flatMap((n) => n.cpus);
  const nodeAllowed = idsOrUnknown(nodeIds.filter((id) => id <= 127));
  const cpuAllowed = idsOrUnknown(cpuIds);

  for (const table of Object.keys(TABLE_SCHEMAS) as TableName[]) {
    for (const col of TABLE_SCHEMAS[table]) {
      if (!col.ref) continue;
      const vector = tables[table].getChild(col.name);
      if (!vector) continue; // an optional column the file lacks (checkTable let only those through)
      const where = `"${table}.${col.name}"`;
      const signed = col.type.startsWith('int');
      const rows = col.ref === 'node' || col.ref === 'cpu' ? 0 : tables[col.ref].numRows;
      const expected =
        col.ref === 'node'
          ? `a node id of machine "${manifest.machine.name}" (${listIds(nodeIds)}) or -1 (unknown)`
          : col.ref === 'cpu'
            ? `a cpu id of machine "${manifest.machine.name}" (${cpuIds.length} cpus) or -1 (unknown)`
            : `a row of table "${col.ref}" (0–${rows - 1}${rows === 0 ? ': it is empty' : ''})${signed ? ' or -1 (none)' : ''}`;
      let scan: ((chunk: IntArray) => number) | null = null;
      let row = 0;
      for (const data of vector.data) {
        const a = valuesOf(data, where);
        scan ??= scanner(a, col.ref === 'node' ? nodeAllowed : col.ref === 'cpu' ? cpuAllowed : { lo: signed ? -1 : 0, hi: rows - 1 });
        const bad = scan(a);
        if (bad >= 0) {
          throw new TraceError(
            'index-out-of-range',
            `Column ${where}, row ${row + bad}: value ${a[bad]}, but it must be ${expected}. ` +
              'The trace is damaged or was written by a program that does not follow the format.',
          );
        }
        row += data.length;
      }
    }
  }
  checkCounterScopes(manifest, tables, nodeIds);
  checkStacks(tables);
  checkHitm(tables);
}

/** `samples.hitm` (v3) is -1 (unknown), 0 (none), 1 (local HITM), 2 (remote HITM) or 3 (remote HIT, a clean line). */
function checkHitm(tables: Record<TableName, Table>): void {
  const hitm = numericColumn<Int8Array>(tables.samples, 'hitm');
  for (let i = 0; i < hitm.length; i++) {
    const h = hitm[i]!;
    if (h < -1 || h > 3) {
      throw new TraceError(
        'index-out-of-range',
        `Column "samples.hitm", row ${i}: value ${h}, but it must be -1 (unknown), 0 (none), 1 (local HITM), 2 (remote HITM) or 3 (remote HIT). The trace is damaged or was written by a program that does not follow the format.`,
      );
    }
  }
}

/**
 * `stacks` holds each stack as consecutive rows: stack ids 0, 1, 2, … in order, each starting at
 * depth 0 and counting up by one; `allocations.stack` and `samples.stack` (v3) are each one of
 * those ids or -1.
 */
function checkStacks(tables: Record<TableName, Table>): void {
  const corrupt = (where: string, row: number, what: string) =>
    new TraceError('index-out-of-range', `Column ${where}, row ${row}: ${what}. The trace is damaged or was written by a program that does not follow the format.`);
  const stack = numericColumn<Uint32Array>(tables.stacks, 'stack');
  const depth = numericColumn<Uint16Array>(tables.stacks, 'depth');
  let prev = -1;
  for (let i = 0; i < stack.length; i++) {
    const s = stack[i]!;
    if (s === prev) {
      if (depth[i] !== depth[i - 1]! + 1) throw corrupt('"stacks.depth"', i, `depth ${depth[i]} follows depth ${depth[i - 1]} of stack ${s} (frames of a stack count up by one)`);
    } else if (s === prev + 1) {
      if (depth[i] !== 0) throw corrupt('"stacks.depth"', i, `stack ${s} starts at depth ${depth[i]}, not 0`);
      prev = s;
    } else {
      throw corrupt('"stacks.stack"', i, `stack ${s} after stack ${prev} (stack ids are 0, 1, 2, … in row order)`);
    }
  }
  const stacks = prev + 1;
  for (const table of ['allocations', 'samples'] as const) {
    const ids = numericColumn<Int32Array>(tables[table], 'stack');
    const bad = outside32(ids, -1, stacks - 1);
    if (bad >= 0) {
      throw corrupt(`"${table}.stack"`, bad, `value ${ids[bad]}, but it must be a stack id of "stacks" (0–${stacks - 1}${stacks === 0 ? ': it is empty' : ''}) or -1 (none)`);
    }
  }
}

function checkCounterScopes(manifest: TraceManifest, tables: Record<TableName, Table>, nodeIds: readonly number[]): void {
  const counters = tables.counters;
  if (counters.numRows === 0) return;
  const scope = counters.getChild('scope')!;
  const scopeId = counters.getChild('scope_id')!;
  const nodes = new Set(nodeIds);
  const threads = tables.threads.numRows;
  let row = 0;
  // Record batches are the same for every column of a table (arrow-ipc.ts checks it).
  scope.data.forEach((data, k) => {
    const values = data.dictionary!;
    const codes = valuesOf(data, '"counters.scope"');
    const ids = valuesOf(scopeId.data[k]!, '"counters.scope_id"');
    const NODE = Array.from({ length: values.length }, (_, i) => values.get(i)).indexOf('node');
    const THREAD = Array.from({ length: values.length }, (_, i) => values.get(i)).indexOf('thread');
    for (let i = 0; i < codes.length; i++) {
      const c = codes[i]!;
      if (c !== NODE && c !== THREAD) continue;
      const id = ids[i]!;
      if (c === NODE ? nodes.has(id) : id >= 0 && id < threads) continue;
      throw new TraceError(
        'index-out-of-range',
        `Column "counters.scope_id", row ${row + i}: value ${id} with scope "${c === NODE ? 'node' : 'thread'}", but it must be ` +
          (c === NODE ? `a node id of machine "${manifest.machine.name}" (${listIds(nodeIds)})` : `a row of table "threads" (0–${threads - 1})`) +
          '. The trace is damaged or was written by a program that does not follow the format.',
      );
    }
    row += data.length;
  });
}
