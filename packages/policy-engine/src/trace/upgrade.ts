/**
 * Trace format upgraders: one step per version, in this one file (docs/trace-format-changelog.md
 * describes each). A step takes a raw trace of version N and returns version N+1. The reader runs
 * every step from the file's version up to CURRENT_TRACE_VERSION, so nothing else in the code
 * ever sees an old version.
 */
import type { Table } from 'apache-arrow';
import { TraceError } from './errors.js';
import { CURRENT_TRACE_VERSION, TABLE_NAMES, type TableName } from './types.js';
import { emptyTable } from './writer.js';

/** A trace as stored: the parsed manifest (not yet validated) and every Arrow table found. */
export interface RawTrace {
  manifest: Record<string, unknown> & { version: number };
  tables: Map<string, Table>;
}

export type Upgrader = (raw: RawTrace) => RawTrace;

/** The tables each version has; the reader reads only these entries of a file of that version. */
export const TABLES_OF_VERSION: Readonly<Record<number, readonly TableName[]>> = {
  1: TABLE_NAMES.slice(0, 8),
  2: TABLE_NAMES,
};

/** The tables v2 added (docs/trace-format-changelog.md, version 2). */
const V2_TABLES: readonly TableName[] = ['allocations', 'alloc_stacks', 'alloc_frames', 'alloc_modules'];

/**
 * v1 -> v2: adds the four allocation-site tables, empty, and capability `allocation-sites`
 * (`unavailable`: a v1 recorder did not record them) unless the file already lists it.
 */
function v1ToV2(raw: RawTrace): RawTrace {
  const tables = new Map(raw.tables);
  for (const name of V2_TABLES) tables.set(name, emptyTable(name));
  const m = raw.manifest;
  const listed = Array.isArray(m.tables) ? (m.tables as unknown[]) : [];
  const capture = m.capture && typeof m.capture === 'object' && !Array.isArray(m.capture) ? (m.capture as Record<string, unknown>) : null;
  let newCapture = capture;
  if (capture && Array.isArray(capture.capabilities)) {
    const caps = capture.capabilities as unknown[];
    const has = caps.some((c) => c !== null && typeof c === 'object' && (c as { metric?: unknown }).metric === 'allocation-sites');
    if (!has) {
      newCapture = {
        ...capture,
        capabilities: [
          ...caps,
          { metric: 'allocation-sites', status: 'unavailable', reason: 'format version 1 file: allocation sites were not recorded (added in version 2)' },
        ],
      };
    }
  }
  return {
    manifest: {
      ...m,
      version: 2,
      ...(newCapture ? { capture: newCapture } : {}),
      tables: [...listed, ...V2_TABLES.map((name) => ({ name, entry: `${name}.arrow`, rows: 0 }))],
    },
    tables,
  };
}

/** `UPGRADERS[n]` upgrades a version-n trace to version n+1. */
export const UPGRADERS: Readonly<Record<number, Upgrader>> = { 1: v1ToV2 };

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
