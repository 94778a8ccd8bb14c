/**
 * Reads a `.numascope` trace: a ZIP of manifest.json and Arrow IPC tables (docs/trace-format.md).
 * Every failure is a TraceError whose message names the problem and what to do. Pure: runs in a
 * browser Worker and in Node.
 */
import { DataType, Precision, tableFromIPC, type Table } from 'apache-arrow';
import { unzipSync, strFromU8 } from 'fflate';
import { TraceError } from './errors.js';
import { TABLE_SCHEMAS, type ColumnType } from './schema.js';
import { TABLE_NAMES, TRACE_FORMAT_NAME, type Trace, type TraceManifest, type TableName } from './types.js';
import { upgradeTrace, type RawTrace } from './upgrade.js';
import { validateManifest } from './validate.js';

const LOCAL_FILE_SIG = 0x04034b50;
const EOCD_SIG = 0x06054b50;
/** The end-of-central-directory record is 22 bytes plus a comment of at most 65535 bytes. */
const EOCD_SEARCH = 22 + 0xffff;

function u32At(b: Uint8Array, i: number): number {
  return (b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24)) >>> 0;
}

function hasEndOfCentralDirectory(b: Uint8Array): boolean {
  const stop = Math.max(0, b.length - EOCD_SEARCH);
  for (let i = b.length - 22; i >= stop; i--) {
    if (u32At(b, i) === EOCD_SIG) return true;
  }
  return false;
}

/** Opens the ZIP container; returns its entries by name. */
function unzipTrace(bytes: Uint8Array): Record<string, Uint8Array> {
  if (bytes.length < 4 || (u32At(bytes, 0) !== LOCAL_FILE_SIG && u32At(bytes, 0) !== EOCD_SIG)) {
    throw new TraceError(
      'not-zip',
      'This file is not a numascope trace: a .numascope file is a ZIP archive, and this one does not start with a ZIP signature. ' +
        'Check that you picked the right file (a perf.data file must be converted with `numascope import` first).',
    );
  }
  if (!hasEndOfCentralDirectory(bytes)) {
    throw new TraceError(
      'truncated',
      `This trace is truncated: the ZIP end-of-archive record is missing (the file has ${bytes.length} bytes). ` +
        'The download or copy was probably cut short; fetch the file again.',
    );
  }
  try {
    return unzipSync(bytes);
  } catch (e) {
    throw new TraceError(
      'truncated',
      `This trace's ZIP container is damaged (${(e as Error).message}). The file was probably cut short or altered; fetch it again.`,
    );
  }
}

/** The format's name for an Arrow type, as used in the schema and in error messages. */
export function describeArrowType(t: DataType): string {
  if (DataType.isInt(t)) return `${t.isSigned ? 'int' : 'uint'}${t.bitWidth}`;
  if (DataType.isFloat(t)) {
    return t.precision === Precision.DOUBLE ? 'float64' : t.precision === Precision.SINGLE ? 'float32' : 'float16';
  }
  if (DataType.isUtf8(t)) return 'utf8';
  if (DataType.isLargeUtf8(t)) return 'large_utf8';
  if (DataType.isDictionary(t)) return `dictionary<${describeArrowType(t.indices)}, ${describeArrowType(t.dictionary)}>`;
  return String(t);
}

function checkTable(name: TableName, table: Table): void {
  for (const col of TABLE_SCHEMAS[name]) {
    const field = table.schema.fields.find((f) => f.name === col.name);
    if (!field) {
      throw new TraceError(
        'column-missing',
        `Table "${name}" has no column "${col.name}" (expected ${col.type}). The file does not follow trace format v1; ` +
          'it may come from a development build of another tool.',
      );
    }
    const actual = describeArrowType(field.type);
    if (actual !== (col.type as ColumnType)) {
      throw new TraceError(
        'column-type',
        `Column "${name}.${col.name}" has type ${actual}, but trace format v1 requires ${col.type}. ` +
          'The file was written by a program that does not follow the format.',
      );
    }
  }
}

function parseTable(name: string, entry: string, bytes: Uint8Array): Table {
  try {
    return tableFromIPC(bytes);
  } catch (e) {
    throw new TraceError(
      'table-corrupt',
      `Table "${name}" (${entry}) is not a readable Arrow IPC file: ${(e as Error).message}. The trace is damaged; fetch it again.`,
    );
  }
}

/** Reads and checks a trace. The result always has the newest format version. */
export function readTrace(bytes: Uint8Array): Trace {
  const entries = unzipTrace(bytes);
  const manifestBytes = entries['manifest.json'];
  if (!manifestBytes) {
    throw new TraceError(
      'manifest-missing',
      'This ZIP has no manifest.json, so it is not a numascope trace (or it was repacked without it).',
    );
  }
  let manifest: unknown;
  try {
    manifest = JSON.parse(strFromU8(manifestBytes));
  } catch (e) {
    throw new TraceError('manifest-invalid', `manifest.json is not valid JSON: ${(e as Error).message}.`);
  }
  if (typeof manifest !== 'object' || manifest === null || Array.isArray(manifest)) {
    throw new TraceError('manifest-invalid', 'manifest.json must hold a JSON object.');
  }
  const m = manifest as Record<string, unknown>;
  if (m.format !== TRACE_FORMAT_NAME) {
    throw new TraceError(
      'wrong-format',
      `manifest.json says format ${JSON.stringify(m.format)}, not "${TRACE_FORMAT_NAME}": this ZIP is not a numascope trace.`,
    );
  }
  if (typeof m.version !== 'number' || !Number.isInteger(m.version)) {
    throw new TraceError('manifest-invalid', `manifest.json "version" must be an integer, got ${JSON.stringify(m.version)}.`);
  }

  const tables = new Map<string, Table>();
  const listed = Array.isArray(m.tables) ? (m.tables as Array<{ name?: unknown; entry?: unknown }>) : [];
  for (const [entry, data] of Object.entries(entries)) {
    if (!entry.endsWith('.arrow')) continue;
    const name = listed.find((t) => t.entry === entry)?.name;
    const tableName = typeof name === 'string' ? name : entry.slice(0, -'.arrow'.length);
    tables.set(tableName, parseTable(tableName, entry, data));
  }

  // Version check and upgrade happen before any v1-specific validation.
  const raw: RawTrace = upgradeTrace({ manifest: m as RawTrace['manifest'], tables });

  const valid = validateManifest(raw.manifest);
  const out = {} as Record<TableName, Table>;
  for (const name of TABLE_NAMES) {
    const table = raw.tables.get(name);
    if (!table) {
      throw new TraceError(
        'table-missing',
        `This trace has no "${name}" table (${name}.arrow), which format v1 requires. The file is incomplete: ` +
          'it may have been written by a recorder that was killed before it finished.',
      );
    }
    checkTable(name, table);
    out[name] = table;
  }
  return { manifest: valid as TraceManifest, tables: out };
}
