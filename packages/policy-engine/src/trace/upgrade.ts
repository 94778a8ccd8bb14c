/**
 * Trace format upgraders: one step per version, in this one file (docs/trace-format-changelog.md
 * describes each). A step takes a raw trace of version N and returns version N+1. The reader runs
 * every step from the file's version up to CURRENT_TRACE_VERSION, so nothing else in the code
 * ever sees an old version.
 */
import type { Table } from 'apache-arrow';
import { TraceError } from './errors.js';
import { CURRENT_TRACE_VERSION } from './types.js';

/** A trace as stored: the parsed manifest (not yet validated) and every Arrow table found. */
export interface RawTrace {
  manifest: Record<string, unknown> & { version: number };
  tables: Map<string, Table>;
}

export type Upgrader = (raw: RawTrace) => RawTrace;

/**
 * `UPGRADERS[n]` upgrades a version-n trace to version n+1. Version 1 is the first published
 * version, so there are no steps yet; the first one will be `UPGRADERS[1]`.
 */
export const UPGRADERS: Readonly<Record<number, Upgrader>> = {};

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
