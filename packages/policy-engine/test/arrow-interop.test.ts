/**
 * Issue 32, "any valid Arrow reads": bundled samples rewritten by pyarrow and by polars (as a user
 * who filters a trace in pandas or polars would: scripts/python/rewrite-trace.py) open, hold the
 * same values in every table, and give the same analysis report as the originals. pyarrow writes
 * an empty table without a dictionary batch; polars writes string_view text, dictionary<uint32,
 * string_view> categoricals and nullable fields. And a string view that points outside its data
 * buffers is refused before apache-arrow decodes it.
 *
 * The writers come from the cached virtual environment `npm test` sets up (scripts/lib.sh
 * ensure_python_env, NUMASCOPE_PYTHON); run alone without it, the suite is skipped locally and
 * fails in CI.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tableFromIPC } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { analysisReport } from '../src/report/report.js';
import { ArrowMetadataError, checkArrowFile } from '../src/trace/arrow-ipc.js';
import { DEFAULT_TRACE_LIMITS } from '../src/trace/limits.js';
import { readTrace } from '../src/trace/reader.js';
import { TABLE_SCHEMAS } from '../src/trace/schema.js';
import type { Trace } from '../src/trace/types.js';

const python = process.env.NUMASCOPE_PYTHON;
const SCRIPT = fileURLToPath(new URL('../../../scripts/python/rewrite-trace.py', import.meta.url));
const SAMPLE = (name: string) => fileURLToPath(new URL(`../../../sample-traces/${name}.numascope`, import.meta.url));
// A recording with allocation sites, a hinting-fault recording, and a PMU-style synthetic trace.
const SAMPLES = ['recorded-alloc-sites', 'recorded-guest-hinting-4nodes', 'two-groups'];
const dir = mkdtempSync(join(tmpdir(), 'numascope-interop-'));

function needPython(): string {
  if (!python) throw new Error('NUMASCOPE_PYTHON is not set: run the tests through `npm test` (scripts/lib.sh ensure_python_env installs pyarrow and polars)');
  return python;
}

function rewrite(writer: 'pyarrow' | 'polars', name: string): Trace {
  const out = join(dir, `${name}.${writer}.numascope`);
  execFileSync(needPython(), [SCRIPT, writer, SAMPLE(name), out], { stdio: ['ignore', 'ignore', 'pipe'] });
  return readTrace(new Uint8Array(readFileSync(out)));
}

const values = (t: Trace, table: keyof typeof TABLE_SCHEMAS, column: string): unknown[] => {
  const v = t.tables[table].getChild(column);
  return v ? Array.from({ length: v.length }, (_, i) => {
    const x = v.get(i) as unknown;
    return typeof x === 'bigint' ? x.toString() : x;
  }) : [];
};

describe.skipIf(!python && !process.env.CI)('traces rewritten by other Arrow writers (issue 32)', () => {
  for (const writer of ['pyarrow', 'polars'] as const) {
    it.each(SAMPLES)(`${writer}: %s opens with the same values and the same report`, (name) => {
      const original = readTrace(new Uint8Array(readFileSync(SAMPLE(name))));
      const copy = rewrite(writer, name);
      for (const [table, columns] of Object.entries(TABLE_SCHEMAS) as Array<[keyof typeof TABLE_SCHEMAS, ReadonlyArray<{ name: string }>]>) {
        expect(copy.tables[table].numRows, `${table} rows`).toBe(original.tables[table].numRows);
        for (const c of columns) expect(values(copy, table, c.name), `${table}.${c.name}`).toEqual(values(original, table, c.name));
      }
      const a = analysisReport(original, {}, { traceFile: 'x' }).report;
      const b = analysisReport(copy, {}, { traceFile: 'x' }).report;
      expect(JSON.parse(JSON.stringify(b))).toEqual(JSON.parse(JSON.stringify(a)));
    }, 120_000);
  }

  it('a string view pointing outside its data buffers is refused before decoding', () => {
    const file = join(dir, 'views.arrow');
    execFileSync(needPython(), [
      '-c',
      `import pyarrow as pa, pyarrow.ipc as ipc
t = pa.table({'s': pa.array(['a' * 40, 'b', 'c' * 20], pa.string_view())})
with ipc.new_file(${JSON.stringify(file)}, t.schema) as w: w.write_table(t)`,
    ]);
    const bytes = new Uint8Array(readFileSync(file));
    expect(checkArrowFile(bytes, DEFAULT_TRACE_LIMITS).rows).toBe(3);
    // The first view: length 40, prefix "aaaa", buffer index, offset. Point it past its buffer.
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
    let at = -1;
    for (let i = 0; i + 16 <= bytes.length; i++) if (dv.getInt32(i, true) === 40 && dv.getUint32(i + 4, true) === 0x61616161 && at < 0) at = i;
    expect(at).toBeGreaterThan(0);
    const bad = bytes.slice();
    new DataView(bad.buffer).setInt32(at + 12, 1_000_000, true);
    expect(() => checkArrowFile(bad, DEFAULT_TRACE_LIMITS)).toThrow(ArrowMetadataError);
    expect(() => checkArrowFile(bad, DEFAULT_TRACE_LIMITS)).toThrow(/string view points outside its data buffers/);
    const badIndex = bytes.slice();
    new DataView(badIndex.buffer).setInt32(at + 8, 7, true);
    expect(() => checkArrowFile(badIndex, DEFAULT_TRACE_LIMITS)).toThrow(/buffer 7/);

    // Mutated copies (1 to 4 random bytes each, a fixed seed): the check passes or throws its own
    // error, and whatever it passes apache-arrow decodes, every string readable.
    let seed = 12345;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) >>> 0) % n);
    let passed = 0;
    for (let k = 0; k < 3000; k++) {
      const m = bytes.slice();
      for (let j = 1 + rand(4); j > 0; j--) m[rand(m.length)] = rand(256);
      try {
        checkArrowFile(m, DEFAULT_TRACE_LIMITS);
      } catch (e) {
        expect(e, `mutation ${k}`).toBeInstanceOf(ArrowMetadataError);
        continue;
      }
      const t = tableFromIPC(m);
      const col = t.getChildAt(0)!;
      for (let i = 0; i < col.length; i++) col.get(i);
      passed++;
    }
    expect(passed).toBeGreaterThan(0);
  });
});
