/**
 * Trace writer, format v4 (docs/trace-format.md): column arrays in, `.numascope` bytes out.
 *
 * Pure: no Node-only APIs, no clock, no randomness, so it runs in a browser Worker and the same
 * input always gives the same bytes. The ZIP holds `manifest.json` first (deflated), then one
 * stored Arrow IPC file per table, each starting at a 64-byte aligned offset like the Rust
 * writer's, so a reader can view an entry in place.
 */
import {
  Dictionary,
  Field,
  Float64,
  Int8,
  Int16,
  Int32,
  Int64,
  RecordBatch,
  Schema,
  Struct,
  Table,
  Uint16,
  Uint32,
  Uint64,
  Utf8,
  makeData,
  makeVector,
  tableToIPC,
  type Data,
  type DataType,
} from 'apache-arrow';
import { deflateSync, strToU8, zipSync, type Zippable } from 'fflate';
import { isTraceError } from './errors.js';
import { MAX_TIME_US } from './limits.js';
import { TABLE_SCHEMAS, type ColumnSpec, type ColumnType } from './schema.js';
import {
  CURRENT_TRACE_VERSION,
  TABLE_NAMES,
  TRACE_FORMAT_NAME,
  type TableEntry,
  type TableName,
  type TraceManifest,
} from './types.js';
import { validateManifest } from './validate.js';

/** A dictionary column already encoded: `indices[i]` is a position in `values`. */
export interface EncodedDictionaryColumn {
  values: readonly string[];
  indices: Int8Array | Int16Array;
}

/**
 * One column's values. Numeric columns take the typed array of their Arrow type (int64 and
 * uint64 take BigInt64Array / BigUint64Array); utf8 columns take strings (`null` only where the
 * schema says nullable); dictionary columns take strings or an {@link EncodedDictionaryColumn}.
 */
export type ColumnValues =
  | Int8Array
  | Int16Array
  | Int32Array
  | BigInt64Array
  | Uint16Array
  | Uint32Array
  | BigUint64Array
  | Float64Array
  | readonly (string | null)[]
  | EncodedDictionaryColumn;

export type TableColumns = Record<string, ColumnValues>;
/** Every table of the format, each with every column of TABLE_SCHEMAS (an `optional` one may be left out). */
export type TraceColumns = Record<TableName, TableColumns>;

export type TraceWriteErrorCode =
  | 'version'
  | 'manifest-invalid'
  | 'missing-table'
  | 'unknown-table'
  | 'missing-column'
  | 'unknown-column'
  | 'column-type'
  | 'length-mismatch'
  | 'null-value'
  | 'dictionary-value'
  | 'dictionary-size'
  | 'created-at';

export class TraceWriteError extends Error {
  readonly code: TraceWriteErrorCode;
  constructor(code: TraceWriteErrorCode, message: string) {
    super(message);
    this.name = 'TraceWriteError';
    this.code = code;
  }
}

/** ZIP entries of Arrow tables start at multiples of this many bytes. */
export const ARROW_ENTRY_ALIGNMENT_BYTES = 64;
/** ZIP extra-field id used for alignment padding (the id the Rust `zip` crate pads with). */
const ALIGNMENT_EXTRA_FIELD_ID = 0xa11e;
const MANIFEST_ENTRY = 'manifest.json';
const MANIFEST_DEFLATE_LEVEL = 9;
const ZIP_LOCAL_HEADER_BYTES = 30;
const ZIP_EXTRA_FIELD_HEADER_BYTES = 4;
/** The alignment value at the start of the alignment field's data. */
const ALIGNMENT_FIELD_BYTES = 2;

type TypedArrayConstructor =
  | Int8ArrayConstructor
  | Int16ArrayConstructor
  | Int32ArrayConstructor
  | BigInt64ArrayConstructor
  | Uint16ArrayConstructor
  | Uint32ArrayConstructor
  | BigUint64ArrayConstructor
  | Float64ArrayConstructor;

const TYPED_ARRAY_OF: Partial<Record<ColumnType, TypedArrayConstructor>> = {
  int8: Int8Array,
  int16: Int16Array,
  int32: Int32Array,
  int64: BigInt64Array,
  uint16: Uint16Array,
  uint32: Uint32Array,
  uint64: BigUint64Array,
  float64: Float64Array,
};

/** Zero-row columns for every table: a starting point, and a valid empty trace. */
export function emptyColumns(): TraceColumns {
  const columns = {} as TraceColumns;
  for (const table of TABLE_NAMES) {
    const tableColumns: TableColumns = {};
    for (const spec of TABLE_SCHEMAS[table]) {
      // Time columns in the form the reader gives them (schema.ts `time`).
      const ArrayType = spec.time ? Uint32Array : TYPED_ARRAY_OF[spec.type];
      tableColumns[spec.name] = ArrayType ? new ArrayType(0) : [];
    }
    columns[table] = tableColumns;
  }
  return columns;
}

/** A zero-row table of the format (the upgrader adds the tables an older file lacks). */
export function emptyTable(name: TableName): Table {
  return buildTable(name, emptyColumns()[name]);
}

/**
 * Writes a trace of the newest version (v4). `manifest.tables` and `manifest.capture.sampleCount` are filled in from
 * the columns (whatever the caller put there is replaced); the input objects are not modified.
 * Throws {@link TraceWriteError} naming the table and column for any data that does not match
 * TABLE_SCHEMAS. An optional column (schema.ts `optional`, e.g. `regions.prot`) that the columns
 * leave out is not written: the file then reads as one written before the column existed.
 */
export function writeTrace(manifest: TraceManifest, columns: TraceColumns): Uint8Array {
  if (manifest.format !== TRACE_FORMAT_NAME || manifest.version !== CURRENT_TRACE_VERSION) {
    throw new TraceWriteError(
      'version',
      `this writer writes ${TRACE_FORMAT_NAME} version ${CURRENT_TRACE_VERSION}; ` +
        `the manifest says ${String(manifest.format)} version ${String(manifest.version)}`,
    );
  }
  for (const name of Object.keys(columns)) {
    if (!(TABLE_NAMES as readonly string[]).includes(name)) {
      throw new TraceWriteError('unknown-table', `unknown table "${name}"; tables are ${TABLE_NAMES.join(', ')}`);
    }
  }

  const arrowFiles = new Map<TableName, Uint8Array>();
  const tables: TableEntry[] = [];
  for (const name of TABLE_NAMES) {
    const tableColumns = columns[name];
    if (tableColumns === undefined) {
      throw new TraceWriteError('missing-table', `table "${name}" is missing (every table is required, even empty)`);
    }
    const table = buildTable(name, tableColumns);
    arrowFiles.set(name, tableToIPC(table, 'file'));
    tables.push({ name, entry: `${name}.arrow`, rows: table.numRows });
  }

  const sampleCount = tables.find((t) => t.name === 'samples')?.rows ?? 0;
  const written: TraceManifest = {
    ...manifest,
    capture: { ...manifest.capture, sampleCount },
    tables,
  };
  // Never write a file the reader would refuse.
  try {
    validateManifest(written);
  } catch (e) {
    if (isTraceError(e)) throw new TraceWriteError('manifest-invalid', e.message);
    throw e;
  }
  return zipTrace(written, arrowFiles);
}

// ---------------------------------------------------------------------------------------------
// Arrow tables

function buildTable(table: TableName, columns: TableColumns): Table {
  const specs = TABLE_SCHEMAS[table];
  for (const name of Object.keys(columns)) {
    if (!specs.some((spec) => spec.name === name)) {
      throw new TraceWriteError(
        'unknown-column',
        `table "${table}" has no column "${name}"; its columns are ${specs.map((s) => s.name).join(', ')}`,
      );
    }
  }

  let rows: number | null = null;
  let firstColumn = '';
  const fields: Field[] = [];
  const children: Data[] = [];
  specs.forEach((spec, columnIndex) => {
    const values = columns[spec.name];
    if (values === undefined) {
      // An optional column not given is left out: the file reads as one written before it existed.
      if (spec.optional) return;
      throw new TraceWriteError('missing-column', `table "${table}" is missing column "${spec.name}" (${spec.type})`);
    }
    const length = columnLength(values);
    if (rows === null) {
      rows = length;
      firstColumn = spec.name;
    } else if (length !== rows) {
      throw new TraceWriteError(
        'length-mismatch',
        `table "${table}": column "${spec.name}" has ${length} rows but "${firstColumn}" has ${rows}`,
      );
    }
    // Dictionary ids must be unique within one IPC file and must not depend on how many
    // dictionaries this process made before (Arrow's default), or the bytes would vary.
    const data = buildColumn(table, spec, values, columnIndex);
    fields.push(new Field(spec.name, data.type, spec.nullable === true));
    children.push(data);
  });

  const schema = new Schema(fields);
  const length = rows ?? 0;
  const batch = new RecordBatch(
    schema,
    makeData({ type: new Struct(fields), length, nullCount: 0, children }),
  );
  return new Table(schema, [batch]);
}

function columnLength(values: ColumnValues): number {
  return isEncodedDictionary(values) ? values.indices.length : values.length;
}

function isEncodedDictionary(values: ColumnValues): values is EncodedDictionaryColumn {
  return !Array.isArray(values) && !ArrayBuffer.isView(values) && typeof values === 'object';
}

function describe(values: ColumnValues): string {
  if (Array.isArray(values)) return 'an array';
  if (isEncodedDictionary(values)) return 'an encoded dictionary column';
  return (values as { constructor: { name: string } }).constructor.name;
}

/**
 * A time column's values (µs since the capture started: integers from 0 to MAX_TIME_US) as the
 * file's int64. Takes the in-memory forms the reader gives (Uint32Array, Float64Array) and
 * BigInt64Array.
 */
function timeValues(where: string, values: ColumnValues): BigInt64Array {
  if (values instanceof BigInt64Array) {
    for (let row = 0; row < values.length; row++) {
      const t = values[row]!;
      if (t < 0n || t > BigInt(MAX_TIME_US)) throw new TraceWriteError('column-type', `${where}, row ${row}: time ${t} µs is outside 0 to ${MAX_TIME_US}`);
    }
    return values;
  }
  // Written through the two 32-bit halves of each int64 (little-endian), so 10 M rows cost no
  // BigInt conversion (the reader reads them back the same way, check.ts timeColumn).
  if (values instanceof Uint32Array) {
    const out = new BigInt64Array(values.length);
    const halves = new Uint32Array(out.buffer);
    for (let row = 0; row < values.length; row++) halves[2 * row] = values[row]!;
    return out;
  }
  if (values instanceof Float64Array) {
    const out = new BigInt64Array(values.length);
    const halves = new Uint32Array(out.buffer);
    for (let row = 0; row < values.length; row++) {
      const t = values[row]!;
      if (!Number.isInteger(t) || t < 0 || t > MAX_TIME_US) {
        throw new TraceWriteError('column-type', `${where}, row ${row}: time ${t} µs is not an integer from 0 to ${MAX_TIME_US}`);
      }
      const hi = Math.floor(t / 4294967296);
      halves[2 * row] = t - hi * 4294967296;
      halves[2 * row + 1] = hi;
    }
    return out;
  }
  throw new TraceWriteError('column-type', `${where}: a time column needs a Uint32Array, Float64Array or BigInt64Array, got ${describe(values)}`);
}

function buildColumn(table: TableName, spec: ColumnSpec, values: ColumnValues, dictionaryId: number): Data {
  const where = `table "${table}", column "${spec.name}"`;
  if (spec.time) {
    const data = timeValues(where, values);
    return makeData({ type: new Int64(), length: data.length, nullCount: 0, data });
  }
  const ArrayType = TYPED_ARRAY_OF[spec.type];
  if (ArrayType !== undefined) {
    if (!(values instanceof ArrayType)) {
      throw new TraceWriteError('column-type', `${where}: ${spec.type} needs a ${ArrayType.name}, got ${describe(values)}`);
    }
    // makeData's overloads are per Arrow type; the type/array pairing is checked just above.
    return makeData({ type: arrowNumericType(spec.type), length: values.length, nullCount: 0, data: values } as never);
  }
  if (spec.type === 'utf8') {
    if (!Array.isArray(values)) {
      throw new TraceWriteError('column-type', `${where}: utf8 needs an array of strings, got ${describe(values)}`);
    }
    checkStrings(where, values, spec.nullable === true);
    return utf8Data(values as ReadonlyArray<string | null>);
  }
  return buildDictionaryColumn(where, spec, values, dictionaryId);
}

function arrowNumericType(type: ColumnType): DataType {
  switch (type) {
    case 'int8':
      return new Int8();
    case 'int16':
      return new Int16();
    case 'int32':
      return new Int32();
    case 'int64':
      return new Int64();
    case 'uint16':
      return new Uint16();
    case 'uint32':
      return new Uint32();
    case 'uint64':
      return new Uint64();
    case 'float64':
      return new Float64();
    default:
      throw new Error(`not a numeric column type: ${type}`);
  }
}

function checkStrings(where: string, values: readonly unknown[], nullable: boolean): void {
  for (let row = 0; row < values.length; row++) {
    const value = values[row];
    if (typeof value === 'string') continue;
    if (value === null && nullable) continue;
    if (value === null || value === undefined) {
      throw new TraceWriteError('null-value', `${where}, row ${row}: ${String(value)} in a column that is not nullable`);
    }
    throw new TraceWriteError('column-type', `${where}, row ${row}: expected a string, got ${typeof value}`);
  }
}

function buildDictionaryColumn(where: string, spec: ColumnSpec, values: ColumnValues, dictionaryId: number): Data {
  const wideIndex = spec.type === 'dictionary<int16, utf8>';
  const IndexArray = wideIndex ? Int16Array : Int8Array;
  const maxValues = wideIndex ? 0x7fff : 0x7f;
  // Documented columns always use the documented values in the documented order, so a code
  // means the same in every file; open-ended ones (counter names) use first-appearance order.
  const dictionary: string[] = spec.values ? [...spec.values] : [];
  const codeOf = new Map(dictionary.map((value, code) => [value, code]));
  const codeFor = (value: string, row: number): number => {
    let code = codeOf.get(value);
    if (code === undefined) {
      if (spec.values) {
        throw new TraceWriteError(
          'dictionary-value',
          `${where}, row ${row}: "${value}" is not a format value; allowed: ${spec.values.join(', ')}`,
        );
      }
      code = dictionary.length;
      dictionary.push(value);
      codeOf.set(value, code);
    }
    return code;
  };

  let indices: Int8Array | Int16Array;
  if (isEncodedDictionary(values)) {
    if (!(values.indices instanceof IndexArray)) {
      throw new TraceWriteError(
        'column-type',
        `${where}: ${spec.type} indices must be an ${IndexArray.name}, got ${describe(values.indices)}`,
      );
    }
    checkStrings(where, values.values, false);
    // Translate the caller's codes to this file's codes, resolving each value once.
    const translated = new Int32Array(values.values.length).fill(-1);
    indices = new IndexArray(values.indices.length);
    for (let row = 0; row < values.indices.length; row++) {
      const index = values.indices[row]!;
      if (index < 0 || index >= values.values.length) {
        throw new TraceWriteError(
          'dictionary-value',
          `${where}, row ${row}: index ${index} is outside the ${values.values.length} dictionary values`,
        );
      }
      if (translated[index] === -1) translated[index] = codeFor(values.values[index]!, row);
      indices[row] = translated[index]!;
    }
  } else if (Array.isArray(values)) {
    checkStrings(where, values, false);
    indices = new IndexArray(values.length);
    for (let row = 0; row < values.length; row++) indices[row] = codeFor(values[row] as string, row);
  } else {
    throw new TraceWriteError('column-type', `${where}: ${spec.type} needs an array of strings, got ${describe(values)}`);
  }

  if (dictionary.length > maxValues) {
    throw new TraceWriteError(
      'dictionary-size',
      `${where}: ${dictionary.length} distinct values do not fit ${spec.type} (at most ${maxValues})`,
    );
  }

  const type = new Dictionary(new Utf8(), wideIndex ? new Int16() : new Int8(), dictionaryId);
  // As above: the index array matches the index type chosen from the schema.
  return makeData({
    type,
    length: indices.length,
    nullCount: 0,
    data: indices,
    dictionary: makeVector(utf8Data(dictionary)),
  } as never);
}

/**
 * A utf8 column built directly from its buffers (offsets, UTF-8 bytes, validity bitmap).
 * Arrow's builders (vectorFromArray) compile their null check with `new Function`, which a strict
 * Content-Security-Policy (numascope serve's, the desktop app's: no 'unsafe-eval') refuses; the
 * upgrader builds empty tables with this writer while a page reads an older trace.
 */
function utf8Data(values: ReadonlyArray<string | null>): Data<Utf8> {
  const encoder = new TextEncoder();
  const encoded = values.map((v) => (v === null ? null : encoder.encode(v)));
  const offsets = new Int32Array(values.length + 1);
  let total = 0;
  encoded.forEach((e, i) => {
    total += e ? e.length : 0;
    offsets[i + 1] = total;
  });
  const bytes = new Uint8Array(total);
  encoded.forEach((e, i) => {
    if (e) bytes.set(e, offsets[i]!);
  });
  let nullCount = 0;
  const validity = new Uint8Array(Math.ceil(values.length / 8));
  values.forEach((v, i) => {
    if (v === null) nullCount++;
    else validity[i >> 3]! |= 1 << (i & 7);
  });
  return makeData({ type: new Utf8(), length: values.length, nullCount, nullBitmap: nullCount > 0 ? validity : null, valueOffsets: offsets, data: bytes });
}

// ---------------------------------------------------------------------------------------------
// ZIP container

function zipTrace(manifest: TraceManifest, arrowFiles: ReadonlyMap<TableName, Uint8Array>): Uint8Array {
  const mtime = zipTimestamp(manifest.createdAt);
  const manifestBytes = strToU8(`${JSON.stringify(manifest, null, 2)}\n`);

  const entries: Zippable = {
    [MANIFEST_ENTRY]: [manifestBytes, { level: MANIFEST_DEFLATE_LEVEL, mtime }],
  };
  // fflate writes entries in insertion order: local header (30 bytes + name + extra), then
  // the data. The manifest's deflated size is computed the way zipSync computes it.
  let offset =
    ZIP_LOCAL_HEADER_BYTES + MANIFEST_ENTRY.length + deflateSync(manifestBytes, { level: MANIFEST_DEFLATE_LEVEL }).length;
  for (const [table, bytes] of arrowFiles) {
    const entry = `${table}.arrow`;
    // The field's data is the alignment (u16, little-endian) then zero padding, as the Rust `zip`
    // crate and zipalign write it: a reader that parses the field (the Rust one does) refuses a
    // field shorter than the two alignment bytes.
    const unpadded = offset + ZIP_LOCAL_HEADER_BYTES + entry.length + ZIP_EXTRA_FIELD_HEADER_BYTES + ALIGNMENT_FIELD_BYTES;
    const padding = (ARROW_ENTRY_ALIGNMENT_BYTES - (unpadded % ARROW_ENTRY_ALIGNMENT_BYTES)) % ARROW_ENTRY_ALIGNMENT_BYTES;
    const field = new Uint8Array(ALIGNMENT_FIELD_BYTES + padding);
    field[0] = ARROW_ENTRY_ALIGNMENT_BYTES & 0xff;
    field[1] = ARROW_ENTRY_ALIGNMENT_BYTES >> 8;
    entries[entry] = [bytes, { level: 0, mtime, extra: { [ALIGNMENT_EXTRA_FIELD_ID]: field } }];
    offset = unpadded + padding + bytes.length;
  }
  return zipSync(entries);
}

/**
 * ZIP stores a DOS date-time with no time zone, and fflate fills it from a Date's local-time
 * fields. Building the Date from createdAt's UTC fields through the local-time constructor
 * makes the stored fields equal createdAt's UTC clock whatever the process's time zone.
 */
function zipTimestamp(createdAt: string): Date {
  const utc = new Date(createdAt);
  const year = utc.getUTCFullYear();
  if (Number.isNaN(utc.getTime()) || year < 1980 || year > 2099) {
    throw new TraceWriteError('created-at', `createdAt "${createdAt}" is not an ISO 8601 time between 1980 and 2099`);
  }
  return new Date(
    year,
    utc.getUTCMonth(),
    utc.getUTCDate(),
    utc.getUTCHours(),
    utc.getUTCMinutes(),
    utc.getUTCSeconds(),
  );
}
