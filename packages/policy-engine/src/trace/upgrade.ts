/**
 * Trace format upgraders: one step per version, in this one file (docs/trace-format-changelog.md
 * describes each). A step takes a raw trace of version N and returns version N+1. The reader runs
 * every step from the file's version up to CURRENT_TRACE_VERSION, so nothing else in the code
 * ever sees an old version.
 */
import { Field, Int8, Int32, RecordBatch, Schema, Struct, Table, makeData } from 'apache-arrow';
import { TraceError } from './errors.js';
import { CURRENT_TRACE_VERSION, TABLE_NAMES, type TableName } from './types.js';
import { emptyTable } from './writer.js';

/** A trace as stored: the parsed manifest (not yet validated) and every Arrow table found. */
export interface RawTrace {
  manifest: Record<string, unknown> & { version: number };
  tables: Map<string, Table>;
}

export type Upgrader = (raw: RawTrace) => RawTrace;

/** v2's names of the three code tables, and their v3 names (docs/trace-format-changelog.md, version 3). */
const V2_CODE_TABLES: ReadonlyArray<readonly [v2: string, v3: TableName]> = [
  ['alloc_stacks', 'stacks'],
  ['alloc_frames', 'frames'],
  ['alloc_modules', 'modules'],
];

/** The tables v2 added (docs/trace-format-changelog.md, version 2), by their v2 names. */
const V2_TABLES: readonly string[] = ['allocations', ...V2_CODE_TABLES.map(([v2]) => v2)];

/**
 * The tables each version has, by the names that version gives them: the reader reads only
 * these entries of a file of that version (a v2 file's code tables are `alloc_*.arrow`).
 */
export const TABLES_OF_VERSION: Readonly<Record<number, readonly string[]>> = {
  1: TABLE_NAMES.slice(0, 8),
  2: [...TABLE_NAMES.slice(0, 8), ...V2_TABLES],
  3: TABLE_NAMES,
  4: TABLE_NAMES,
};

function captureOf(m: RawTrace['manifest']): Record<string, unknown> | null {
  return m.capture && typeof m.capture === 'object' && !Array.isArray(m.capture) ? (m.capture as Record<string, unknown>) : null;
}

/** `capture` with capability `metric` added as `unavailable` for `reason`, unless it lists one already. */
function withUnavailableCapability(capture: Record<string, unknown> | null, metric: string, reason: string): Record<string, unknown> | null {
  if (!capture || !Array.isArray(capture.capabilities)) return capture;
  const caps = capture.capabilities as unknown[];
  const has = caps.some((c) => c !== null && typeof c === 'object' && (c as { metric?: unknown }).metric === metric);
  return has ? capture : { ...capture, capabilities: [...caps, { metric, status: 'unavailable', reason }] };
}

/**
 * v1 -> v2: adds the four allocation-site tables (v2 names), empty, and capability
 * `allocation-sites` (`unavailable`: a v1 recorder did not record them) unless the file already
 * lists it.
 */
function v1ToV2(raw: RawTrace): RawTrace {
  const tables = new Map(raw.tables);
  tables.set('allocations', emptyTable('allocations'));
  // Same columns in v2 and v3: only the names changed.
  for (const [v2, v3] of V2_CODE_TABLES) tables.set(v2, emptyTable(v3));
  const m = raw.manifest;
  const listed = Array.isArray(m.tables) ? (m.tables as unknown[]) : [];
  const capture = withUnavailableCapability(captureOf(m), 'allocation-sites', 'format version 1 file: allocation sites were not recorded (added in version 2)');
  return {
    manifest: {
      ...m,
      version: 2,
      ...(capture ? { capture } : {}),
      tables: [...listed, ...V2_TABLES.map((name) => ({ name, entry: `${name}.arrow`, rows: 0 }))],
    },
    tables,
  };
}

/**
 * `samples` with `stack` and `hitm` columns of -1 (no code location, HITM unknown) in every
 * record batch (existing columns of those names, which no v2 writer wrote, are replaced). Built from buffers, not Arrow's
 * builders (no `new Function`: see writer.ts utf8Data).
 */
function withNoStacks(samples: Table): Table {
  const keep = samples.schema.fields.map((f, i) => [f, i] as const).filter(([f]) => f.name !== 'stack' && f.name !== 'hitm');
  const stackField = new Field('stack', new Int32(), false);
  const hitmField = new Field('hitm', new Int8(), false);
  const fields = [...keep.map(([f]) => f), stackField, hitmField];
  const schema = new Schema(fields, samples.schema.metadata);
  const batchOf = (length: number, children: ReturnType<typeof makeData>[]) => {
    const stack = makeData({ type: new Int32(), length, nullCount: 0, data: new Int32Array(length).fill(-1) });
    const hitm = makeData({ type: new Int8(), length, nullCount: 0, data: new Int8Array(length).fill(-1) });
    return new RecordBatch(schema, makeData({ type: new Struct(fields), length, nullCount: 0, children: [...children, stack, hitm] }));
  };
  const batches = samples.batches.map((b) => batchOf(b.numRows, keep.map(([, i]) => b.data.children[i]!)));
  return new Table(schema, batches);
}

/**
 * v2 -> v3: renames the code tables (`alloc_stacks`, `alloc_frames`, `alloc_modules` ->
 * `stacks`, `frames`, `modules`) and their `manifest.tables` entries, adds `samples.stack` and
 * `samples.hitm` as all -1 (a v2 recorder took no sample stacks and kept no snoop result), and capability `code-locations` (`unavailable`)
 * unless the file already lists it.
 */
function v2ToV3(raw: RawTrace): RawTrace {
  const tables = new Map(raw.tables);
  for (const [v2, v3] of V2_CODE_TABLES) {
    const t = tables.get(v2);
    tables.delete(v2);
    if (t) tables.set(v3, t);
  }
  const samples = tables.get('samples');
  if (samples) tables.set('samples', withNoStacks(samples));
  const m = raw.manifest;
  const rename = new Map<unknown, string>(V2_CODE_TABLES);
  const listed = Array.isArray(m.tables)
    ? (m.tables as unknown[]).map((e) => {
        if (e === null || typeof e !== 'object' || Array.isArray(e)) return e;
        const name = rename.get((e as { name?: unknown }).name);
        return name ? { ...(e as Record<string, unknown>), name, entry: `${name}.arrow` } : e;
      })
    : m.tables;
  const capture = withUnavailableCapability(captureOf(m), 'code-locations', 'format version 2 file: code locations were not recorded (added in version 3)');
  return {
    manifest: { ...m, version: 3, ...(capture ? { capture } : {}), tables: listed },
    tables,
  };
}

/**
 * v3 -> v4: the manifest gains `host` and `traceId`, both null (a v3 writer recorded neither;
 * `machine.name` is still the recording host's name). The tables stay as they are: their uint32
 * time columns are valid v4 times, and the reader gives every time column to the code as numbers
 * whatever its stored width (check.ts timeColumn), so nothing is copied.
 */
function v3ToV4(raw: RawTrace): RawTrace {
  return { manifest: { ...raw.manifest, version: 4, host: null, traceId: null }, tables: raw.tables };
}

/** `UPGRADERS[n]` upgrades a version-n trace to version n+1. */
export const UPGRADERS: Readonly<Record<number, Upgrader>> = { 1: v1ToV2, 2: v2ToV3, 3: v3ToV4 };

/** The oldest version this reader can upgrade from. */
export const OLDEST_TRACE_VERSION = 1;

/**
 * Refuses a version this reader cannot read: newer than `current` (update numascope), or older
 * than any upgrader (never released). The reader calls it before it decodes any table, so a newer
 * file is reported as too new whatever its tables look like.
 */
export function checkTraceVersion(
  version: number,
  upgraders: Readonly<Record<number, Upgrader>> = UPGRADERS,
  current: number = CURRENT_TRACE_VERSION,
): void {
  if (version > current) {
    throw new TraceError(
      'too-new',
      `This trace is format version ${version}, but this numascope reads versions up to ${current}. ` +
        `Update numascope to open it.`,
    );
  }
  for (let v = version; v < current; v++) {
    if (!Object.prototype.hasOwnProperty.call(upgraders, v)) {
      throw new TraceError(
        'manifest-invalid',
        `This trace is format version ${version}, which no released numascope wrote ` +
          `(the oldest readable version is ${OLDEST_TRACE_VERSION}). The file may be corrupt.`,
      );
    }
  }
}

export function upgradeTrace(
  raw: RawTrace,
  upgraders: Readonly<Record<number, Upgrader>> = UPGRADERS,
  current: number = CURRENT_TRACE_VERSION,
): RawTrace {
  let version = raw.manifest.version;
  checkTraceVersion(version, upgraders, current);
  let t = raw;
  while (version < current) {
    t = upgraders[version]!(t);
    if (t.manifest.version !== version + 1) {
      throw new Error(`upgrader ${version}->${version + 1} produced version ${t.manifest.version}`);
    }
    version = t.manifest.version;
  }
  return t;
}
