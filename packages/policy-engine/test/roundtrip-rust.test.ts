/**
 * Rust writes, TypeScript reads: the collector's `numascope debug write-fixture DIR` writes a trace
 * with every table and column filled with distinctive values (-1s, nulls, u32 max, u64 above 2^53,
 * non-ASCII text) and a JSON file listing the values it wrote. This test reads the trace with the
 * TypeScript reader and compares every value of every column.
 *
 * Needs the built collector: `npm test` builds it first. NUMASCOPE_BIN overrides the binary path.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readTrace, readTraceUnchecked } from '../src/trace/reader.js';
import { isTraceError } from '../src/trace/errors.js';
import { TABLE_SCHEMAS } from '../src/trace/schema.js';
import { CURRENT_TRACE_VERSION, TABLE_NAMES } from '../src/trace/types.js';

const bin = process.env.NUMASCOPE_BIN ?? resolve(__dirname, '../../../native/collector/target/debug/numascope');

function actualValues(table: import('apache-arrow').Table, column: string, type: string): unknown[] {
  const v = table.getChild(column)!;
  const out: unknown[] = [];
  for (let i = 0; i < v.length; i++) {
    const x = v.get(i);
    if (x === null || x === undefined) out.push(null);
    else if (typeof x === 'bigint') out.push(x.toString());
    else if (type === 'int64' || type === 'uint64') out.push(String(x));
    else out.push(x);
  }
  return out;
}

function normaliseExpected(values: unknown[], type: string): unknown[] {
  return values.map((x) => (x === null ? null : type === 'int64' || type === 'uint64' ? String(x) : x));
}

describe('Rust-written trace read by TypeScript', () => {
  it('the collector binary exists (build it with `npm test` or `cargo build` in native/collector)', () => {
    expect(existsSync(bin), `collector binary not found at ${bin}`).toBe(true);
  });

  const dir = mkdtempSync(join(tmpdir(), 'numascope-roundtrip-'));
  let expected: Record<string, Record<string, unknown[]>> | undefined;
  let expectedManifest: unknown;
  let trace: ReturnType<typeof readTraceUnchecked> | undefined;
  let checked: unknown;
  if (existsSync(bin)) {
    execFileSync(bin, ['debug', 'write-fixture', dir], { stdio: 'pipe' });
    const file = JSON.parse(readFileSync(join(dir, 'roundtrip.expected.json'), 'utf8'));
    expected = file.tables;
    expectedManifest = file.manifest;
    const bytes = new Uint8Array(readFileSync(join(dir, 'roundtrip.numascope')));
    // The fixture's edge values (thread u32 max, node -128) point outside their tables: the values
    // are compared as stored, and readTrace, which checks references, refuses the file.
    trace = readTraceUnchecked(bytes);
    try {
      readTrace(bytes);
    } catch (e) {
      checked = e;
    }
  }

  it('the container, manifest and columns pass every check; readTrace refuses only the out-of-range references', () => {
    expect(trace).toBeDefined();
    expect(isTraceError(checked) && checked.code).toBe('index-out-of-range');
  });

  it('manifest round-trips field by field', () => {
    expect(trace).toBeDefined();
    expect(trace!.manifest).toEqual(expectedManifest);
  });

  it("the machine's cpu clock and its provenance survive (machine.cpuClockGHz, an addition within v2)", () => {
    expect(trace).toBeDefined();
    expect(trace!.manifest.machine.cpuClockGHz).toBe(2.45);
    expect(trace!.manifest.machine.provenance['cpuClockGHz']).toMatch(/^documented:fixture sysfs cpu0\/cpufreq\/base_frequency/);
  });

  it('manifest says the current format version (the collector writes it, no upgrade) and lists every table with its row count', () => {
    expect(trace).toBeDefined();
    expect(trace!.manifest.version).toBe(CURRENT_TRACE_VERSION);
    for (const name of TABLE_NAMES) {
      const entry = trace!.manifest.tables.find((t) => t.name === name);
      expect(entry, `manifest.tables lacks ${name}`).toBeDefined();
      expect(entry!.rows).toBe(trace!.tables[name].numRows);
    }
  });

  it('regions.prot, the optional column, is written by the collector and read as written (nulls too)', () => {
    expect(trace).toBeDefined();
    const prot = trace!.tables.regions.getChild('prot');
    expect(prot, 'the collector writes regions.prot').not.toBeNull();
    expect(Array.from({ length: prot!.length }, (_, i) => prot!.get(i) ?? null)).toEqual(['rw-p', 'r--s', null]);
  });

  for (const name of TABLE_NAMES) {
    describe(`table ${name}`, () => {
      for (const col of TABLE_SCHEMAS[name]) {
        it(`column ${col.name} (${col.type}) round-trips every value`, () => {
          expect(expected, 'fixture not written').toBeDefined();
          const want = expected![name]?.[col.name];
          expect(want, `fixture JSON lacks ${name}.${col.name}`).toBeDefined();
          expect(want!.length, `fixture has no rows for ${name}.${col.name}`).toBeGreaterThan(0);
          expect(actualValues(trace!.tables[name], col.name, col.type)).toEqual(normaliseExpected(want!, col.type));
        });
      }
    });
  }
});
