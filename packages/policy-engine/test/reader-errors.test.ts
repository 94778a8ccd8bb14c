import { describe, expect, it } from 'vitest';
import { Table, tableToIPC, vectorFromArray, Utf8, Int32 } from 'apache-arrow';
import { readTrace } from '../src/trace/reader.js';
import { upgradeTrace, type RawTrace } from '../src/trace/upgrade.js';
import { TraceError } from '../src/trace/errors.js';
import { editManifest, minimalTraceBytes, repack } from './helpers/minimal-trace.js';

function errorOf(f: () => unknown): TraceError {
  try {
    f();
  } catch (e) {
    if (e instanceof TraceError) return e;
    throw new Error(`expected a TraceError, got ${String(e)}`);
  }
  throw new Error('expected a TraceError, but reading succeeded');
}

describe('readTrace on bad files', () => {
  it('reads the unbroken file (the base every case below breaks)', () => {
    const t = readTrace(minimalTraceBytes());
    expect(t.manifest.machine.nodes).toHaveLength(2);
    expect(t.tables.samples.numRows).toBe(0);
  });

  it('not a ZIP', () => {
    const e = errorOf(() => readTrace(new TextEncoder().encode('PERFILE2 this is a perf.data header')));
    expect(e.code).toBe('not-zip');
    expect(e.message).toMatch(/not a numascope trace.*ZIP/);
    expect(e.message).toMatch(/numascope import/);
  });

  it('empty file', () => {
    expect(errorOf(() => readTrace(new Uint8Array(0))).code).toBe('not-zip');
  });

  it('truncated at several lengths', () => {
    const full = minimalTraceBytes();
    for (const frac of [0.1, 0.5, 0.9, 0.999]) {
      const e = errorOf(() => readTrace(full.slice(0, Math.floor(full.length * frac))));
      expect(e.code).toBe('truncated');
      expect(e.message).toMatch(/truncated|damaged/);
    }
  });

  it('manifest missing', () => {
    const e = errorOf(() => readTrace(repack(minimalTraceBytes(), (x) => delete x['manifest.json'])));
    expect(e.code).toBe('manifest-missing');
    expect(e.message).toMatch(/manifest\.json/);
  });

  it('manifest not JSON', () => {
    const bytes = repack(minimalTraceBytes(), (x) => (x['manifest.json'] = new TextEncoder().encode('{"format": ')));
    const e = errorOf(() => readTrace(bytes));
    expect(e.code).toBe('manifest-invalid');
    expect(e.message).toMatch(/not valid JSON/);
  });

  it('another format in the manifest', () => {
    const e = errorOf(() => readTrace(editManifest(minimalTraceBytes(), (m) => (m.format = 'speedscope'))));
    expect(e.code).toBe('wrong-format');
    expect(e.message).toContain('"speedscope"');
  });

  it('newer version names both versions and says to update', () => {
    const e = errorOf(() => readTrace(editManifest(minimalTraceBytes(), (m) => (m.version = 7))));
    expect(e.code).toBe('too-new');
    expect(e.message).toMatch(/version 7.*up to 4/);
    expect(e.message).toMatch(/Update numascope/);
  });

  it('version 0 (never released) is refused', () => {
    const e = errorOf(() => readTrace(editManifest(minimalTraceBytes(), (m) => (m.version = 0))));
    expect(e.code).toBe('manifest-invalid');
    expect(e.message).toMatch(/version 0/);
  });

  it('a manifest field of the wrong shape is named by its path', () => {
    const e = errorOf(() =>
      readTrace(editManifest(minimalTraceBytes(), (m) => (m.machine.nodes[1].cpus = 'two,three'))),
    );
    expect(e.code).toBe('manifest-invalid');
    expect(e.message).toContain('machine.nodes[1].cpus');
  });

  it('a distance matrix of the wrong size', () => {
    const e = errorOf(() => readTrace(editManifest(minimalTraceBytes(), (m) => (m.machine.distances = [[10]]))));
    expect(e.code).toBe('manifest-invalid');
    expect(e.message).toMatch(/2×2/);
  });

  for (const table of ['samples', 'pages', 'threads', 'events'] as const) {
    it(`table ${table} missing`, () => {
      const e = errorOf(() => readTrace(repack(minimalTraceBytes(), (x) => delete x[`${table}.arrow`])));
      expect(e.code).toBe('table-missing');
      expect(e.message).toContain(`"${table}"`);
    });
  }

  it('a table that is not Arrow', () => {
    const bytes = repack(minimalTraceBytes(), (x) => (x['pages.arrow'] = new TextEncoder().encode('not arrow at all')));
    const e = errorOf(() => readTrace(bytes));
    expect(e.code).toBe('table-corrupt');
    expect(e.message).toContain('"pages"');
  });

  it('a column of the wrong type names table, column, expected and actual type', () => {
    const threads = new Table({
      tid: vectorFromArray(['1', '2'], new Utf8()),
      pid: vectorFromArray([1, 1], new Int32()),
    });
    const bytes = repack(minimalTraceBytes(), (x) => (x['threads.arrow'] = tableToIPC(threads, 'file')));
    const e = errorOf(() => readTrace(bytes));
    expect(e.code).toBe('column-type');
    expect(e.message).toContain('"threads.tid"');
    expect(e.message).toContain('utf8');
    expect(e.message).toContain('int32');
  });

  it('a missing column', () => {
    const threads = new Table({ tid: vectorFromArray([1], new Int32()) });
    const bytes = repack(minimalTraceBytes(), (x) => (x['threads.arrow'] = tableToIPC(threads, 'file')));
    const e = errorOf(() => readTrace(bytes));
    expect(e.code).toBe('column-missing');
    expect(e.message).toContain('"pid"');
  });
});

describe('upgrader chain', () => {
  const raw = (version: number): RawTrace => ({ manifest: { version, note: [] as string[] }, tables: new Map() });

  it('runs every step from the file version to the current one, in order', () => {
    const steps = {
      1: (r: RawTrace) => ({ ...r, manifest: { ...r.manifest, version: 2, note: [...(r.manifest.note as string[]), '1->2'] } }),
      2: (r: RawTrace) => ({ ...r, manifest: { ...r.manifest, version: 3, note: [...(r.manifest.note as string[]), '2->3'] } }),
    };
    const out = upgradeTrace(raw(1), steps, 3);
    expect(out.manifest.version).toBe(3);
    expect(out.manifest.note).toEqual(['1->2', '2->3']);
    expect(upgradeTrace(raw(2), steps, 3).manifest.note).toEqual(['2->3']);
    expect(upgradeTrace(raw(3), steps, 3).manifest.note).toEqual([]);
  });

  it('refuses a too-new version and a version with no step', () => {
    expect(() => upgradeTrace(raw(4), {}, 3)).toThrow(/version 4.*up to 3/);
    expect(() => upgradeTrace(raw(1), {}, 3)).toThrow(/version 1/);
  });
});
