/**
 * Trace format v4 (issue 32 item 2): 64-bit times with no 71-minute cap, `host` and `traceId` in
 * the manifest, the v3 upgrade, and one set of limits for the Rust writer and this reader.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { strFromU8, unzipSync } from 'fflate';
import { Table, makeVector, tableFromIPC, tableToIPC } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { SAMPLE_TRACES_DIR } from '../fuzz/corpus.js';
import { numericColumn, timeColumn } from '../src/trace/columns.js';
import { TraceError } from '../src/trace/errors.js';
import { DEFAULT_TRACE_LIMITS, MAX_CLOCK_GHZ, MAX_CPU_ID, MAX_NODE_ID, MAX_TIME_US, MIN_CLOCK_GHZ } from '../src/trace/limits.js';
import { readTrace } from '../src/trace/reader.js';
import { summarizeTrace } from '../src/query/summary.js';
import { CURRENT_TRACE_VERSION } from '../src/trace/types.js';
import { emptyColumns, writeTrace, TraceWriteError, type TraceColumns } from '../src/trace/writer.js';
import { editManifest, minimalManifest, repack } from './helpers/minimal-trace.js';

const bin = process.env.NUMASCOPE_BIN ?? resolve(__dirname, '../../../native/collector/target/debug/numascope');

/** A trace with one thread seen from `first` to `last` µs and placed at `times`. */
function columnsWithTimes(first: number, last: number, times: number[]): TraceColumns {
  const c = emptyColumns();
  c.threads = {
    tid: Int32Array.of(100),
    pid: Int32Array.of(100),
    name: ['main'],
    first_seen_us: Float64Array.of(first),
    last_seen_us: Float64Array.of(last),
    migrations: BigInt64Array.of(0n),
  };
  c.thread_placements = {
    time_us: Float64Array.from(times),
    thread: new Uint32Array(times.length),
    cpu: new Int16Array(times.length),
    node: new Int8Array(times.length),
  };
  return c;
}

function traceWithTimes(durationUs: number, times: number[]) {
  const m = minimalManifest();
  m.capture.durationUs = durationUs;
  return writeTrace(m, columnsWithTimes(0, durationUs, times));
}

function storedType(bytes: Uint8Array, table: string, column: string): string {
  const t = tableFromIPC(unzipSync(bytes)[`${table}.arrow`]!);
  return String(t.schema.fields.find((f) => f.name === column)!.type);
}

describe('64-bit times (format v4)', () => {
  it('a three-day capture keeps its times exactly: int64 in the file, numbers in the code', () => {
    const threeDays = 3 * 86_400 * 1e6;
    const times = [0, 4_294_967_295, 4_294_967_296, threeDays - 1];
    const bytes = traceWithTimes(threeDays, times);
    expect(storedType(bytes, 'thread_placements', 'time_us')).toBe('Int64');
    const t = readTrace(bytes);
    expect(t.manifest.version).toBe(CURRENT_TRACE_VERSION);
    expect(t.manifest.capture.durationUs).toBe(threeDays);
    const got = timeColumn(t.tables.thread_placements, 'time_us');
    expect(got).toBeInstanceOf(Float64Array);
    expect(Array.from(got)).toEqual(times);
    expect(Array.from(timeColumn(t.tables.threads, 'last_seen_us'))).toEqual([threeDays]);
    // The summary reads the same times (no truncation to 32 bits anywhere on the way).
    const summary = summarizeTrace(t);
    expect(summary.totals.durationUs).toBe(threeDays);
    expect(summary.threads[0]!.placements.timeUs).toEqual(times);
  });

  it('a capture under 71 minutes reads its times as Uint32 (v3 memory and speed)', () => {
    const t = readTrace(traceWithTimes(60e6, [0, 5, 59_999_999]));
    const got = timeColumn(t.tables.thread_placements, 'time_us');
    expect(got).toBeInstanceOf(Uint32Array);
    expect(Array.from(got)).toEqual([0, 5, 59_999_999]);
  });

  it('the last exact time, 2^53 - 1 µs, reads; a negative time is refused naming the column and row', () => {
    const t = readTrace(traceWithTimes(MAX_TIME_US, [MAX_TIME_US]));
    expect(timeColumn(t.tables.thread_placements, 'time_us')[0]).toBe(MAX_TIME_US);
    // The writer refuses it, so write a valid file and swap the column for a hostile one.
    const c = columnsWithTimes(0, 10, [1, 2]);
    c.thread_placements.time_us = BigInt64Array.of(1n, -5n);
    expect(() => writeTrace(minimalManifest(), c)).toThrow(TraceWriteError);
    const good = traceWithTimes(10, [1, 2]);
    const hostile = tableToIPC(
      new Table({
        time_us: makeVector(BigInt64Array.of(1n, -5n)),
        thread: makeVector(new Uint32Array(2)),
        cpu: makeVector(new Int16Array(2)),
        node: makeVector(new Int8Array(2)),
      }),
      'file',
    );
    const bad = repack(good, (e) => (e['thread_placements.arrow'] = hostile));
    let error: unknown;
    try {
      readTrace(bad);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(TraceError);
    expect((error as TraceError).message).toMatch(/"thread_placements\.time_us", row 1: time -5 µs is outside 0 to 9007199254740991/);
  });

  it('a duration beyond 2^53 - 1 µs is refused by the reader and the writer', () => {
    const m = minimalManifest();
    m.capture.durationUs = 2 ** 53 + 2;
    expect(() => writeTrace(m, emptyColumns())).toThrow(/capture\.durationUs/);
    const e = (() => {
      try {
        readTrace(editManifest(writeTrace(minimalManifest(), emptyColumns()), (x) => (x.capture.durationUs = 2 ** 53 + 2)));
      } catch (err) {
        return err as TraceError;
      }
      throw new Error('read');
    })();
    expect(e.code).toBe('manifest-invalid');
  });
});

describe('host and traceId (format v4)', () => {
  it('round-trip, and a malformed trace id is refused by name', () => {
    const m = { ...minimalManifest(), host: 'db-07.example.com', traceId: '0123456789abcdef0123456789abcdef' };
    const t = readTrace(writeTrace(m, emptyColumns()));
    expect(t.manifest.host).toBe('db-07.example.com');
    expect(t.manifest.traceId).toBe('0123456789abcdef0123456789abcdef');
    expect(() => writeTrace({ ...m, traceId: '../../etc/passwd' }, emptyColumns())).toThrow(/traceId/);
  });

  it('a v3 file upgrades: host and traceId null, its uint32 times read unchanged without a copy', () => {
    const bytes = new Uint8Array(readFileSync(join(SAMPLE_TRACES_DIR, 'recorded-code-sites.numascope')));
    const stored = JSON.parse(strFromU8(unzipSync(bytes)['manifest.json']!)) as { version: number };
    expect(stored.version).toBe(3);
    expect(storedType(bytes, 'samples', 'time_us')).toBe('Uint32');
    const t = readTrace(bytes);
    expect(t.manifest.version).toBe(4);
    expect(t.manifest.host).toBeNull();
    expect(t.manifest.traceId).toBeNull();
    const time = timeColumn(t.tables.samples, 'time_us');
    expect(time).toBeInstanceOf(Uint32Array);
    const raw = tableFromIPC(unzipSync(bytes)['samples.arrow']!);
    expect(Array.from(time)).toEqual(Array.from(numericColumn<Uint32Array>(raw, 'time_us')));
  });
});

describe('one set of limits', () => {
  it.skipIf(!existsSync(bin))("the collector's writer checks the figures this reader enforces (numascope debug trace-limits)", () => {
    const rust = JSON.parse(execFileSync(bin, ['debug', 'trace-limits'], { encoding: 'utf8' })) as Record<string, number>;
    const l = DEFAULT_TRACE_LIMITS;
    expect(rust).toEqual({
      maxTimeUs: MAX_TIME_US,
      maxTableRows: l.maxTableRows,
      maxThreads: l.maxThreads,
      maxEntryBytes: l.maxEntryBytes,
      maxTotalBytes: l.maxTotalBytes,
      maxManifestBytes: l.maxManifestBytes,
      maxNodes: l.maxNodes,
      maxStringBytes: l.maxStringBytes,
      maxCpuId: MAX_CPU_ID,
      maxNodeId: MAX_NODE_ID,
      minClockGHz: MIN_CLOCK_GHZ,
      maxClockGHz: MAX_CLOCK_GHZ,
    });
  });
});
