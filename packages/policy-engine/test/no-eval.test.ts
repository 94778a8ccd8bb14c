import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readTrace } from '../src/trace/reader.js';
import { summarizeTrace } from '../src/query/summary.js';
import { writeTrace } from '../src/trace/writer.js';
import { CURRENT_TRACE_VERSION } from '../src/trace/types.js';
import { SAMPLE_TRACES_DIR } from '../fuzz/corpus.js';

/**
 * The app runs under Content-Security-Policies without 'unsafe-eval' (numascope serve, the desktop
 * app): reading, upgrading and writing traces must not compile code from strings. Here the global
 * Function constructor refuses, as such a page's does.
 */
describe('no code generation from strings', () => {
  const original = globalThis.Function;
  afterEach(() => {
    globalThis.Function = original;
  });
  const refuse = () => {
    const no = () => {
      throw new EvalError('code generation from strings refused (CSP without unsafe-eval)');
    };
    // Function.prototype stays the real one (Arrow and others use Function.prototype.call).
    globalThis.Function = new Proxy(original, { construct: no, apply: no });
  };

  it('reads and upgrades a version 1 recording (v1 -> v2 -> v3), summarises it and writes it again', () => {
    const bytes = new Uint8Array(readFileSync(join(SAMPLE_TRACES_DIR, 'recorded-guest-hinting-4nodes.numascope')));
    refuse();
    const trace = readTrace(bytes);
    expect(trace.manifest.version).toBe(CURRENT_TRACE_VERSION);
    expect(summarizeTrace(trace).totals.samples).toBeGreaterThan(0);
    const columns = Object.fromEntries(
      Object.entries(trace.tables).map(([name, table]) => [name, Object.fromEntries(table.schema.fields.map((f, i) => [f.name, columnValues(table.getChildAt(i)!)]))]),
    );
    const again = readTrace(writeTrace(trace.manifest, columns as never));
    expect(again.tables.regions.numRows).toBe(trace.tables.regions.numRows);
    expect(again.tables.regions.getChild('path')!.toArray()).toEqual(trace.tables.regions.getChild('path')!.toArray());
  });
});

function columnValues(v: { type: unknown; toArray(): unknown; get(i: number): unknown; length: number }): unknown {
  // Dictionary and utf8 columns as arrays of strings (nulls kept); numbers as their typed array.
  const t = String(v.type);
  if (t.startsWith('Dictionary') || t === 'Utf8') return Array.from({ length: v.length }, (_, i) => v.get(i));
  return v.toArray();
}
