/**
 * Reads a `.numascope` trace: a ZIP of manifest.json and Arrow IPC tables (docs/trace-format.md).
 * Every failure is a TraceError whose message names the problem and what to do. Pure: runs in a
 * browser Worker and in Node.
 *
 * A trace file is untrusted input (docs/robustness.md, "Trace reader"). In order:
 * 1. the ZIP directory is parsed and checked against the file and the limits before anything is
 *    allocated (zip.ts); each entry read is inflated into bounded output and its CRC-32 checked;
 * 2. manifest.json is bounded in size and nesting before JSON.parse (manifest-json.ts), its format
 *    name and version checked before any table is decoded;
 * 3. each table's Arrow metadata is checked with bounds-checked reads before apache-arrow decodes
 *    it (arrow-ipc.ts; a ZSTD-compressed buffer's frame and declared length too, zstd.ts), then its column types, nulls, strings and dictionary codes (check.ts);
 * 4. the manifest is validated (validate.ts) and every row index, node id and cpu id checked
 *    against its table or machine (check.ts).
 * Only then is the result a `Trace`, the type the summary and the engine take.
 */
import { tableFromIPC, type Table } from 'apache-arrow';
import { ArrowMetadataError, checkArrowFile } from './arrow-ipc.js';
import { checkReferences, checkTable } from './check.js';
import { TraceError } from './errors.js';
import { traceLimits, type TraceLimits } from './limits.js';
import { parseManifestJson } from './manifest-json.js';
import { CURRENT_TRACE_VERSION, TABLE_NAMES, TRACE_FORMAT_NAME, type TableName, type Trace, type TraceManifest, type UncheckedTrace } from './types.js';
import { checkTraceVersion, TABLES_OF_VERSION, upgradeTrace, type RawTrace } from './upgrade.js';
import { validateManifest } from './validate.js';
import { looksLikeZip, readZipDirectory, readZipEntry, type ZipBudget } from './zip.js';
import './zstd.js'; // registers the ZSTD decoder of compressed Arrow bodies

export { describeArrowType } from './check.js';

export interface ReadTraceOptions {
  /** Tighter (or looser) limits than DEFAULT_TRACE_LIMITS, e.g. for a browser tab with little memory. */
  limits?: Partial<TraceLimits>;
}

const MANIFEST_ENTRY = 'manifest.json';

function parseTable(name: string, entry: string, bytes: Uint8Array, limits: TraceLimits): Table {
  try {
    const { rows } = checkArrowFile(bytes, limits);
    if (name === 'threads' && rows > limits.maxThreads) {
      throw new TraceError('table-limits', `Table "threads" (${entry}) has ${rows} rows, more than the ${limits.maxThreads} threads this reader accepts (limits.maxThreads).`);
    }
  } catch (e) {
    if (!(e instanceof ArrowMetadataError)) throw e;
    throw new TraceError(
      e.limit ? 'table-limits' : 'table-corrupt',
      `Table "${name}" (${entry}) is not a readable Arrow IPC file: ${e.message}. ` + (e.limit ? 'It is larger than this reader accepts.' : 'The trace is damaged; fetch it again.'),
    );
  }
  try {
    return tableFromIPC(bytes);
  } catch (e) {
    throw new TraceError(
      'table-corrupt',
      `Table "${name}" (${entry}) is not a readable Arrow IPC file: ${(e as Error).message}. The trace is damaged; fetch it again.`,
    );
  }
}

/** The entry holding table `name`: the one manifest.tables names for it, else `<name>.arrow`. */
function entryOf(name: string, listed: unknown, entries: ReadonlyMap<string, unknown>): string {
  if (Array.isArray(listed)) {
    for (const t of listed as unknown[]) {
      const e = t as { name?: unknown; entry?: unknown } | null;
      if (e && typeof e === 'object' && e.name === name && typeof e.entry === 'string' && entries.has(e.entry)) return e.entry;
    }
  }
  return `${name}.arrow`;
}

function readChecked(bytes: Uint8Array, options: ReadTraceOptions): UncheckedTrace {
  const limits = traceLimits(options.limits);
  if (!looksLikeZip(bytes)) {
    throw new TraceError(
      'not-zip',
      'This file is not a numascope trace: a .numascope file is a ZIP archive, and this one does not start with a ZIP signature. ' +
        'Check that you picked the right file (a perf.data file must be converted with `numascope import` first).',
    );
  }
  const directory = readZipDirectory(bytes, limits);
  const budget: ZipBudget = { bytesRead: 0 };
  const manifestEntry = directory.get(MANIFEST_ENTRY);
  if (!manifestEntry) {
    throw new TraceError(
      'manifest-missing',
      'This ZIP has no manifest.json, so it is not a numascope trace (or it was repacked without it).',
    );
  }
  if (manifestEntry.uncompressedSize > limits.maxManifestBytes) {
    throw new TraceError(
      'manifest-limits',
      `manifest.json declares ${manifestEntry.uncompressedSize} bytes, more than the ${limits.maxManifestBytes} this reader accepts. The file is damaged or not a trace.`,
    );
  }
  const manifest = parseManifestJson(readZipEntry(bytes, manifestEntry, limits, budget, limits.maxManifestBytes), limits);
  if (typeof manifest !== 'object' || manifest === null || Array.isArray(manifest)) {
    throw new TraceError('manifest-invalid', 'manifest.json must hold a JSON object.');
  }
  const m = manifest as Record<string, unknown>;
  if (m.format !== TRACE_FORMAT_NAME) {
    throw new TraceError(
      'wrong-format',
      `manifest.json says format ${JSON.stringify(m.format)?.slice(0, 200)}, not "${TRACE_FORMAT_NAME}": this ZIP is not a numascope trace.`,
    );
  }
  if (typeof m.version !== 'number' || !Number.isInteger(m.version)) {
    throw new TraceError('manifest-invalid', `manifest.json "version" must be an integer, got ${JSON.stringify(m.version)?.slice(0, 200)}.`);
  }
  // A newer file is "too new" whatever its tables look like: checked before any is decoded.
  checkTraceVersion(m.version);

  // Only the tables of the file's version are read, by that version's names (a v1 file has the first eight, a v2 file's
  // code tables are alloc_*; the upgraders add and rename the rest); other entries are ignored (neither inflated nor checked).
  const tables = new Map<string, Table>();
  for (const name of TABLES_OF_VERSION[m.version] ?? TABLE_NAMES) {
    const entry = entryOf(name, m.tables, directory);
    const e = directory.get(entry);
    if (e) tables.set(name, parseTable(name, entry, readZipEntry(bytes, e, limits, budget), limits));
  }

  const raw: RawTrace = upgradeTrace({ manifest: m as RawTrace['manifest'], tables });
  const valid = validateManifest(raw.manifest, limits);
  const out = {} as Record<TableName, Table>;
  for (const name of TABLE_NAMES) {
    const table = raw.tables.get(name);
    if (!table) {
      throw new TraceError(
        'table-missing',
        `This trace has no "${name}" table (${name}.arrow), which format v${CURRENT_TRACE_VERSION} requires. The file is incomplete: ` +
          'it may have been written by a recorder that was killed before it finished.',
      );
    }
    const checked = checkTable(name, table, limits);
    const listed = valid.tables.find((t) => t.name === name);
    if (listed && listed.rows !== table.numRows) {
      throw new TraceError(
        'table-corrupt',
        `Table "${name}" has ${table.numRows} rows, but manifest.json says ${listed.rows}. The trace is damaged or was edited; fetch it again.`,
      );
    }
    out[name] = checked;
  }
  return { manifest: valid as TraceManifest, tables: out };
}

/**
 * Reads and checks a trace (see the module comment). The result always has the newest format
 * version, and is the only way to get a `Trace`.
 */
export function readTrace(bytes: Uint8Array, options: ReadTraceOptions = {}): Trace {
  const trace = readChecked(bytes, options);
  checkReferences(trace.manifest, trace.tables);
  return trace as Trace;
}

/**
 * Reads a trace with every check of readTrace except the references between tables (row indices,
 * node and cpu ids against what they point at). For format tools and round-trip tests that need
 * the stored values as they are; the summary and the engine do not accept the result.
 */
export function readTraceUnchecked(bytes: Uint8Array, options: ReadTraceOptions = {}): UncheckedTrace {
  return readChecked(bytes, options);
}
