/**
 * TypeScript writer → TypeScript reader: every column of every table, filled with edge values
 * (type minimum and maximum, -1, u64 above 2^53, NaN, non-ASCII text, nulls where allowed, every
 * documented dictionary value), is written, read back with readTraceUnchecked and compared value
 * by value. The values are built from TABLE_SCHEMAS, so a column added to the schema is covered too.
 * Edge values in reference columns (a thread index of u32 max, node -128) point outside their
 * tables, so readTrace itself refuses that file (tested below).
 */
import { unzipSync, strFromU8 } from 'fflate';
import { describe, expect, it } from 'vitest';
import { readTrace, readTraceUnchecked } from '../src/trace/reader.js';
import { TraceError } from '../src/trace/errors.js';
import { TABLE_SCHEMAS, type ColumnSpec } from '../src/trace/schema.js';
import { TABLE_NAMES, type TableName, type TraceManifest, type UncheckedTrace } from '../src/trace/types.js';
import {
  ARROW_ENTRY_ALIGNMENT_BYTES,
  TraceWriteError,
  emptyColumns,
  writeTrace,
  type ColumnValues,
  type TraceColumns,
} from '../src/trace/writer.js';
import { minimalManifest } from './helpers/minimal-trace.js';

const EDGE_VALUES: Record<string, readonly (number | bigint)[]> = {
  int8: [-128, -1, 0, 1, 127],
  int16: [-32768, -1, 0, 4095, 32767],
  int32: [-2147483648, -1, 0, 123456, 2147483647],
  int64: [-(2n ** 63n), -1n, 0n, 2n ** 53n + 1n, 2n ** 63n - 1n],
  uint16: [0, 1, 4095, 40000, 65535],
  uint32: [0, 1, 65536, 2147483648, 4294967295],
  uint64: [0n, 1n, 2n ** 53n + 1n, 0x7f3a_0000_1000n, 2n ** 64n - 1n],
  float64: [0, -1.5, 1e-300, 12345678.25, Number.NaN],
};
const TIME_VALUES = [0, 1, 4294967295, 4294967296, Number.MAX_SAFE_INTEGER];
const TEXT_VALUES = ['', 'main', 'wörker-1 ✓', '[heap]', 'interleave:0-3'];

/** `rows` values for one column, cycling through its edge values from a per-column start. */
function columnValues(spec: ColumnSpec, rows: number, start: number): ColumnValues {
  const pick = <T>(values: readonly T[], row: number): T => values[(start + row) % values.length]!;
  // Time columns (int64 in the file) read back as numbers: edge values across 2^32 (Float64 then).
  if (spec.time) return Float64Array.from({ length: rows }, (_, row) => pick(TIME_VALUES, row));
  switch (spec.type) {
    case 'utf8':
      return Array.from({ length: rows }, (_, row) => (spec.nullable && row % 3 === 1 ? null : pick(TEXT_VALUES, row)));
    case 'dictionary<int8, utf8>':
    case 'dictionary<int16, utf8>': {
      const values = spec.values ?? ['numa_hit', 'numa_miss', 'pgmigrate_success'];
      return Array.from({ length: rows }, (_, row) => pick(values, row));
    }
    default: {
      const edges = EDGE_VALUES[spec.type]!;
      const ArrayType = {
        int8: Int8Array,
        int16: Int16Array,
        int32: Int32Array,
        int64: BigInt64Array,
        uint16: Uint16Array,
        uint32: Uint32Array,
        uint64: BigUint64Array,
        float64: Float64Array,
      }[spec.type];
      const out = new ArrayType(rows);
      for (let row = 0; row < rows; row++) (out as unknown as (number | bigint)[])[row] = pick(edges, row);
      return out;
    }
  }
}

/**
 * Every table filled; table i has 12 + 3·i rows, so row counts differ between tables and every
 * documented dictionary value (at most 12 per column) appears.
 */
function filledColumns(): TraceColumns {
  const columns = emptyColumns();
  TABLE_NAMES.forEach((table, tableIndex) => {
    const rows = 12 + 3 * tableIndex;
    TABLE_SCHEMAS[table].forEach((spec, columnIndex) => {
      columns[table][spec.name] = columnValues(spec, rows, columnIndex);
    });
  });
  return columns;
}

function rowsOf(columns: TraceColumns, table: TableName): number {
  return (Object.values(columns[table])[0] as { length: number }).length;
}

function readBack(table: TableName, column: string, trace: UncheckedTrace): unknown[] {
  const vector = trace.tables[table].getChild(column)!;
  const out: unknown[] = [];
  for (let row = 0; row < vector.length; row++) out.push(vector.get(row) ?? null);
  return out;
}

function asList(values: ColumnValues): unknown[] {
  if (ArrayBuffer.isView(values)) return Array.from(values as ArrayLike<unknown>);
  if (Array.isArray(values)) return [...values];
  const encoded = values as { values: readonly string[]; indices: ArrayLike<number> };
  return Array.from(encoded.indices, (index) => encoded.values[index]);
}

function errorOf(write: () => unknown): TraceWriteError {
  try {
    write();
  } catch (e) {
    if (e instanceof TraceWriteError) return e;
    throw e;
  }
  throw new Error('expected a TraceWriteError, but writing succeeded');
}

/** ZIP local headers in file order: name, method, data offset, DOS time and date. */
function localEntries(bytes: Uint8Array) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const entries: { name: string; method: number; dataOffset: number; extraOffset: number; extraLength: number; dosTime: number; dosDate: number }[] = [];
  let offset = 0;
  while (view.getUint32(offset, true) === 0x04034b50) {
    const nameLength = view.getUint16(offset + 26, true);
    const extraLength = view.getUint16(offset + 28, true);
    const compressedSize = view.getUint32(offset + 18, true);
    const dataOffset = offset + 30 + nameLength + extraLength;
    entries.push({
      name: strFromU8(bytes.subarray(offset + 30, offset + 30 + nameLength)),
      method: view.getUint16(offset + 8, true),
      dosTime: view.getUint16(offset + 10, true),
      dosDate: view.getUint16(offset + 12, true),
      dataOffset,
      extraOffset: offset + 30 + nameLength,
      extraLength,
    });
    offset = dataOffset + compressedSize;
  }
  return entries;
}

describe('writeTrace → readTraceUnchecked round trip', () => {
  const columns = filledColumns();
  const trace = readTraceUnchecked(writeTrace(minimalManifest(), columns));

  it('readTrace refuses the same file: its edge values point outside their tables', () => {
    const e = (() => {
      try {
        readTrace(writeTrace(minimalManifest(), columns));
      } catch (err) {
        return err;
      }
      return null;
    })();
    expect(e).toBeInstanceOf(TraceError);
    expect((e as TraceError).code).toBe('index-out-of-range');
  });

  for (const table of TABLE_NAMES) {
    describe(`table ${table}`, () => {
      it('has the rows written', () => {
        expect(trace.tables[table].numRows).toBe(rowsOf(columns, table));
      });
      for (const spec of TABLE_SCHEMAS[table]) {
        it(`column ${spec.name} (${spec.type}) reads back every value`, () => {
          const written = asList(columns[table][spec.name]!);
          const read = readBack(table, spec.name, trace);
          expect(read).toHaveLength(written.length);
          read.forEach((value, row) => {
            expect(value, `${table}.${spec.name} row ${row}`).toEqual(written[row]);
          });
        });
      }
    });
  }

  it('uses every documented dictionary value somewhere in the filled columns', () => {
    for (const table of TABLE_NAMES) {
      for (const spec of TABLE_SCHEMAS[table]) {
        if (!spec.values) continue;
        const used = new Set(readBack(table, spec.name, trace));
        expect([...used].sort(), `${table}.${spec.name}`).toEqual([...spec.values].sort());
      }
    }
  });
});

describe('writeTrace manifest', () => {
  it('fills tables[] and capture.sampleCount from the data, leaving the input untouched', () => {
    const columns = filledColumns();
    const manifest = minimalManifest();
    manifest.capture.sampleCount = 999;
    const before = JSON.stringify(manifest);
    const trace = readTraceUnchecked(writeTrace(manifest, columns));
    expect(JSON.stringify(manifest)).toBe(before);
    expect(trace.manifest.capture.sampleCount).toBe(rowsOf(columns, 'samples'));
    expect(trace.manifest.tables).toEqual(
      TABLE_NAMES.map((name) => ({ name, entry: `${name}.arrow`, rows: rowsOf(columns, name) })),
    );
    expect(trace.manifest.origin).toEqual(manifest.origin);
    expect(trace.manifest.machine).toEqual(manifest.machine);
  });

  it('writes an empty trace from emptyColumns()', () => {
    const trace = readTrace(writeTrace(minimalManifest(), emptyColumns()));
    for (const table of TABLE_NAMES) expect(trace.tables[table].numRows).toBe(0);
    expect(trace.manifest.capture.sampleCount).toBe(0);
  });
});

describe('writeTrace container', () => {
  const bytes = writeTrace(minimalManifest(), filledColumns());

  it('is byte-identical for the same input', () => {
    expect(writeTrace(minimalManifest(), filledColumns())).toEqual(bytes);
  });

  it('puts manifest.json first (deflated), then every table stored and 64-byte aligned', () => {
    const entries = localEntries(bytes);
    expect(entries.map((e) => e.name)).toEqual(['manifest.json', ...TABLE_NAMES.map((t) => `${t}.arrow`)]);
    expect(entries[0]!.method).toBe(8);
    for (const entry of entries.slice(1)) {
      expect(entry.method, entry.name).toBe(0);
      expect(entry.dataOffset % ARROW_ENTRY_ALIGNMENT_BYTES, entry.name).toBe(0);
      expect(strFromU8(bytes.subarray(entry.dataOffset, entry.dataOffset + 6)), entry.name).toBe('ARROW1');
    }
  });

  it('writes the alignment field as the Rust zip crate reads it (the alignment, then padding), whatever the offsets', () => {
    // Manifests of 64 lengths move every entry through every offset modulo 64: a field shorter
    // than its two alignment bytes made the Rust reader refuse the file ("Alignment extra field too short").
    for (let pad = 0; pad < 64; pad++) {
      const manifest = minimalManifest();
      manifest.origin.description = 'x'.repeat(pad * 7);
      const file = writeTrace(manifest, filledColumns());
      const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
      for (const entry of localEntries(file).slice(1)) {
        expect(entry.dataOffset % ARROW_ENTRY_ALIGNMENT_BYTES, entry.name).toBe(0);
        // The extra field (id 0xa11e): its data is the alignment (u16), then the padding.
        const at = entry.extraOffset;
        expect(entry.extraLength, entry.name).toBeGreaterThanOrEqual(6);
        expect(view.getUint16(at, true), entry.name).toBe(0xa11e);
        expect(view.getUint16(at + 2, true), entry.name).toBe(entry.extraLength - 4);
        expect(view.getUint16(at + 4, true), entry.name).toBe(ARROW_ENTRY_ALIGNMENT_BYTES);
      }
    }
  });

  it('stamps entries with createdAt (UTC clock fields, whatever the time zone)', () => {
    const manifest = minimalManifest();
    manifest.createdAt = '2031-07-09T13:45:58Z';
    for (const entry of localEntries(writeTrace(manifest, emptyColumns()))) {
      expect(entry.dosDate).toBe(((2031 - 1980) << 9) | (7 << 5) | 9);
      expect(entry.dosTime).toBe((13 << 11) | (45 << 5) | (58 >> 1));
    }
  });

  it('opens with a plain unzip; manifest.json is JSON', () => {
    const entries = unzipSync(bytes);
    expect(JSON.parse(strFromU8(entries['manifest.json']!)).format).toBe('numascope-trace');
  });
});

describe('writeTrace dictionary columns', () => {
  it('an encoded column writes the same bytes as its strings', () => {
    const strings = filledColumns();
    const encoded = filledColumns();
    const ops = strings.samples.op as string[];
    // Caller's own code order, with an unused value that must not leak into the file.
    const callerValues = ['store', 'unknown', 'load', 'fault'];
    encoded.samples.op = { values: callerValues, indices: Int8Array.from(ops, (op) => callerValues.indexOf(op)) };
    expect(writeTrace(minimalManifest(), encoded)).toEqual(writeTrace(minimalManifest(), strings));
  });

  it('keeps open-ended counter names in order of first appearance', () => {
    const columns = emptyColumns();
    const names = ['pgmigrate_success', 'numa_hit', 'pgmigrate_success', 'node0_custom'];
    columns.counters = {
      time_us: new Uint32Array(names.length),
      counter: names,
      scope: names.map(() => 'system'),
      scope_id: new Int32Array(names.length).fill(-1),
      value: new Float64Array(names.length),
    };
    const trace = readTrace(writeTrace(minimalManifest(), columns));
    expect(readBack('counters', 'counter', trace)).toEqual(names);
    const dictionary = trace.tables.counters.getChild('counter')!.data[0]!.dictionary!;
    expect(Array.from({ length: dictionary.length }, (_, i) => dictionary.get(i))).toEqual([
      'pgmigrate_success',
      'numa_hit',
      'node0_custom',
    ]);
  });
});

describe('writeTrace refuses bad input, naming table and column', () => {
  const manifest = minimalManifest();

  it('a missing table', () => {
    const columns: Partial<TraceColumns> = emptyColumns();
    delete columns.events;
    const e = errorOf(() => writeTrace(manifest, columns as TraceColumns));
    expect(e.code).toBe('missing-table');
    expect(e.message).toMatch(/"events"/);
  });

  it('an unknown table', () => {
    const columns = { ...emptyColumns(), placements: {} } as TraceColumns;
    expect(errorOf(() => writeTrace(manifest, columns)).code).toBe('unknown-table');
  });

  it('a missing column', () => {
    const columns = emptyColumns();
    delete columns.pages.first_touch_cpu;
    const e = errorOf(() => writeTrace(manifest, columns));
    expect(e.code).toBe('missing-column');
    expect(e.message).toMatch(/"pages".*"first_touch_cpu".*int16/);
  });

  it('a misspelt column', () => {
    const columns = emptyColumns();
    columns.threads.migration = new BigInt64Array(0);
    const e = errorOf(() => writeTrace(manifest, columns));
    expect(e.code).toBe('unknown-column');
    expect(e.message).toMatch(/"threads".*"migration".*migrations/);
  });

  it('a typed array of the wrong kind', () => {
    const columns = emptyColumns();
    columns.samples.cpu = new Int32Array(0);
    const e = errorOf(() => writeTrace(manifest, columns));
    expect(e.code).toBe('column-type');
    expect(e.message).toMatch(/"samples".*"cpu".*Int16Array.*Int32Array/);
  });

  it('numbers where 64-bit columns need BigInt64Array', () => {
    const columns = emptyColumns();
    columns.pages.first_touch_us = new Float64Array(0);
    expect(errorOf(() => writeTrace(manifest, columns)).code).toBe('column-type');
  });

  it('columns of different lengths in one table', () => {
    const columns = emptyColumns();
    columns.thread_placements = {
      time_us: new Uint32Array(3),
      thread: new Uint32Array(3),
      cpu: new Int16Array(2),
      node: new Int8Array(3),
    };
    const e = errorOf(() => writeTrace(manifest, columns));
    expect(e.code).toBe('length-mismatch');
    expect(e.message).toMatch(/"thread_placements".*"cpu" has 2 rows.*"time_us" has 3/);
  });

  it('a value outside the documented dictionary', () => {
    const columns = filledColumns();
    (columns.samples.data_source as string[])[1] = 'l4';
    const e = errorOf(() => writeTrace(manifest, columns));
    expect(e.code).toBe('dictionary-value');
    expect(e.message).toMatch(/"samples".*"data_source", row 1: "l4"/);
  });

  it('an encoded index outside its values', () => {
    const columns = emptyColumns();
    columns.events = {
      time_us: new Uint32Array(1),
      kind: { values: ['phase'], indices: Int8Array.of(1) },
      thread: Int32Array.of(-1),
      value: BigInt64Array.of(-1n),
      detail: ['init'],
    };
    expect(errorOf(() => writeTrace(manifest, columns)).code).toBe('dictionary-value');
  });

  it('null in a column that is not nullable', () => {
    const columns = filledColumns();
    (columns.regions.policy as (string | null)[])[0] = null;
    const e = errorOf(() => writeTrace(manifest, columns));
    expect(e.code).toBe('null-value');
    expect(e.message).toMatch(/"regions".*"policy", row 0/);
  });

  it('a manifest of another version', () => {
    const e = errorOf(() => writeTrace({ ...manifest, version: 1 } as TraceManifest, emptyColumns()));
    expect(e.code).toBe('version');
    expect(e.message).toMatch(/version 4.*version 1/);
  });

  it('a manifest the reader would refuse, naming the field', () => {
    const bad = { ...manifest, origin: { ...manifest.origin, kind: 'guessed' } } as unknown as TraceManifest;
    const e = errorOf(() => writeTrace(bad, emptyColumns()));
    expect(e.code).toBe('manifest-invalid');
    expect(e.message).toMatch(/origin\.kind/);
  });

  it('a createdAt that is not a time', () => {
    expect(errorOf(() => writeTrace({ ...manifest, createdAt: 'yesterday' }, emptyColumns())).code).toBe('created-at');
  });
});
