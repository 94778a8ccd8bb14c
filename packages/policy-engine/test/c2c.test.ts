/**
 * perf c2c's Shared Data Cache Line Table from an imported trace, held against `perf c2c report
 * --stdio` of the same file: ../shared/data/perfdata/amd-zen4-epyc9254_ibs-op-c2c-phys-addr_ring
 * (perf c2c record on ibs_op//, AMD EPYC 9254, perf 6.8; the report was made by perf 6.8 with
 * its defaults: `--display tot`, lines sorted on total HITMs, data grouping offset,iaddr). The
 * collector's `numascope import` sets samples.hitm from each sample's data source; c2cTable
 * counts records per 64-byte line as the report does. And the sharing diagnostics use the same
 * lines (perf c2c's shared lines), not every line two threads wrote.
 *
 * Needs the built collector (NUMASCOPE_BIN overrides its path) and the shared data folder
 * (NUMASCOPE_SHARED, else ../shared beside the repository).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { c2cTable, diagnose, readTrace } from '../src/index.js';
import { main } from '../cli/main.js';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const SHARED = process.env['NUMASCOPE_SHARED'] ?? resolve(REPO_ROOT, '../shared');
const BIN = process.env['NUMASCOPE_BIN'] ?? resolve(REPO_ROOT, 'native/collector/target/debug/numascope');
const NAME = 'amd-zen4-epyc9254_ibs-op-c2c-phys-addr_ring';
const dir = mkdtempSync(join(tmpdir(), 'numascope-c2c-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function imported() {
  const out = join(dir, 'zen4.numascope');
  execFileSync(BIN, ['import', join(SHARED, 'data/perfdata', `${NAME}.perf.data`), '-o', out], { stdio: 'pipe' });
  return readTrace(new Uint8Array(readFileSync(out)));
}

/** The report's Shared Data Cache Line Table rows, by its column order. */
function reportLines() {
  const text = readFileSync(join(SHARED, 'data/perfdata', `${NAME}.c2c-report.txt`), 'utf8');
  const total = Number(/Total Shared Cache Lines\s*:\s*(\d+)/.exec(text)![1]);
  const table = text.slice(text.indexOf('Shared Data Cache Line Table'), text.indexOf('Shared Cache Line Distribution Pareto'));
  const rows = table
    .split('\n')
    .filter((l) => /^\s+\d+\s+0x[0-9a-f]+\s/.test(l))
    .map((l) => l.trim().split(/\s+/));
  const cols = ['index', 'address', 'node', 'paCnt', 'hitmPct', 'totalHitm', 'localHitm', 'remoteHitm', 'records', 'loads', 'stores', 'storeL1Hit', 'storeL1Miss', 'storeNA', 'loadFB', 'loadL1', 'loadL2', 'llcHit', 'llcHitm', 'remoteHit', 'remoteHitm2', 'localDram', 'remoteDram'] as const;
  return { total, rows: rows.map((r) => Object.fromEntries(cols.map((c, i) => [c, r[i]!])) as Record<(typeof cols)[number], string>) };
}

describe('perf c2c shared cache lines of a real Zen 4 perf c2c file', () => {
  const trace = imported();
  const t = c2cTable(trace);
  const report = reportLines();

  it('lists the report’s shared lines, in its order, with its HITM, store and load columns', () => {
    expect(t.available).toBe(true);
    expect(t.totals.sharedLines).toBe(report.total);
    expect(t.lines.map((l) => l.addressHex)).toEqual(report.rows.map((r) => r.address));
    for (const [i, r] of report.rows.entries()) {
      const l = t.lines[i]!;
      expect([l.node, l.totalHitm, l.localHitm, l.remoteHitm, l.stores, l.storeL1Hit, l.storeL1Miss, l.storeNA, l.loadFB, l.loadL1, l.loadL2, l.llcHit, l.remoteHit, l.localDram, l.remoteDram]).toEqual(
        [r.node, r.totalHitm, r.localHitm, r.remoteHitm, r.stores, r.storeL1Hit, r.storeL1Miss, r.storeNA, r.loadFB, r.loadL1, r.loadL2, r.llcHit, r.remoteHit, r.localDram, r.remoteDram].map(Number),
      );
      // Records are the sum of perf's columns: a remote-cache load whose snoop result is neither
      // HIT nor HITM (samples.hitm 0) counts in none, as in perf (line 0: 124, not 125).
      expect([l.records, l.loads]).toEqual([Number(r.records), Number(r.loads)]);
      expect(l.loads - l.records + l.stores).toBe(0);
    }
    // The code of each offset is the samples' instruction (the import's one-frame stacks): the
    // report's code addresses, 0x…488a with 85 records and 0x…44aa with 14 on line 0 (in `bench`,
    // not on this machine: module + file offset, same page offset), the kernel's
    // 0xffffffffb319f14a (perf_iterate_ctx+106) on line 1, exact beyond 2^53.
    expect(t.code).toBe(true);
    const code0 = new Map(t.lines[0]!.offsets[0]!.code.map((c) => [c.code.slice(-3), c.records]));
    expect(code0.get('88a')).toBe(85);
    expect(code0.get('4aa')).toBe(14);
    expect(t.lines[1]!.offsets[0]!.code).toEqual([{ code: '?+0xffffffffb319f14a', records: 1 }]);
    expect(t.totals.remoteHitm).toBe(Number(/Load Remote HITM\s*:\s*(\d+)/.exec(readFileSync(join(SHARED, 'data/perfdata', `${NAME}.c2c-report.txt`), 'utf8'))![1]));
  });

  it('the sharing diagnostics count the same lines: one line two threads wrote with a HITM, not 55', () => {
    const d = diagnose(trace);
    const sharing = d.issues.filter((i) => i.kind === 'true-sharing' || i.kind === 'false-sharing');
    const lines = sharing.reduce((a, i) => a + Number((i.evidence as { lines: number }).lines), 0);
    // Of the 2 shared lines only 0x624b89b17180 was touched by two threads with a store.
    expect(lines).toBe(1);
    expect(d.notes.some((n) => n.includes('2 cache lines with a HITM load'))).toBe(true);
  });

  it('numascope-analyze c2c prints the table and its JSON', async () => {
    const out: string[] = [];
    expect(await main(['c2c', join(dir, 'zen4.numascope')], (s) => out.push(s), () => {})).toBe(0);
    expect(out.join('\n')).toContain('2 shared cache lines (with a HITM)');
    expect(out.join('\n')).toMatch(/0\s+0x624b89b17180\s+0\s+2\s+0\s+2\s+124/);
    const json: string[] = [];
    expect(await main(['c2c', join(dir, 'zen4.numascope'), '--json'], (s) => json.push(s), () => {})).toBe(0);
    const j = JSON.parse(json.join('\n'));
    expect(j.lineCount).toBe(2);
    expect(j.lines[0].addressHex).toBe('0x624b89b17180');
  });
});

describe('a trace without HITM classes', () => {
  it('says why the table is not available', () => {
    const t = c2cTable(readTrace(new Uint8Array(readFileSync(resolve(REPO_ROOT, 'sample-traces/two-groups.numascope')))));
    expect(t.available).toBe(false);
    expect(t.reason).toContain('no IBS or PEBS samples');
  });
});
