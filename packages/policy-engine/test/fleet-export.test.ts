/**
 * Issue 32, "Parquet for a fleet": three traces exported as three hosts into one directory
 * (`numascope export --format parquet --host …`), then the fleet queries of docs/fleet.md on
 * DuckDB (scripts/python/fleet.py): each trace's local-access share equals the engine's observed
 * local ratio, the pages per node equal the trace's pages table, the files sit under
 * host=/date= partitions named by the trace id (the SHA-1 of the file), and exporting a trace
 * again replaces its files instead of adding rows.
 *
 * Needs the built collector (NUMASCOPE_BIN overrides its path) and DuckDB from the cached virtual
 * environment `npm test` sets up (scripts/lib.sh ensure_python_env, NUMASCOPE_PYTHON); run alone
 * without it, the suite is skipped locally and fails in CI.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { analyze } from '../src/analyze/analyze.js';
import { readTrace } from '../src/trace/reader.js';
import { numericColumn } from '../src/trace/columns.js';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BIN = process.env['NUMASCOPE_BIN'] ?? resolve(REPO_ROOT, 'native/collector/target/debug/numascope');
const python = process.env['NUMASCOPE_PYTHON'];
const FLEET = resolve(REPO_ROOT, 'scripts/python/fleet.py');
const SAMPLE = (name: string) => resolve(REPO_ROOT, `sample-traces/${name}.numascope`);
const HOSTS: Record<string, string> = { 'db-01': 'partitioned', 'web-02': 'two-groups', 'batch-03': 'streamcluster-hotspot' };
const dir = mkdtempSync(join(tmpdir(), 'numascope-fleet-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Row = Record<string, string | number | null>;

function exportAs(host: string, name: string): { traceId: string; date: string; tables: Array<{ table: string; rows: number; path: string }> } {
  const out = execFileSync(BIN, ['export', SAMPLE(name), '--format', 'parquet', '-o', dir, '--host', host, '--json', '-q'], { encoding: 'utf8' });
  return JSON.parse(out);
}

function fleet(...query: string[]): Record<string, Row[]> {
  if (!python) throw new Error('NUMASCOPE_PYTHON is not set: run the tests through `npm test` (scripts/lib.sh ensure_python_env installs duckdb)');
  const args = [FLEET, dir, '--json', ...query.flatMap((q) => ['--query', q])];
  return JSON.parse(execFileSync(python, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }));
}

describe.skipIf(!python && !process.env['CI'])('numascope export --format parquet: a fleet of three hosts in DuckDB (issue 32)', () => {
  const exported = Object.entries(HOSTS).map(([host, name]) => ({ host, name, ...exportAs(host, name) }));

  it("files go to DIR/<table>/host=<host>/date=<day>/<trace id>.parquet, the id the manifest's traceId (v4) or else the SHA-1 of the file", () => {
    for (const e of exported) {
      const bytes = new Uint8Array(readFileSync(SAMPLE(e.name)));
      const own = readTrace(bytes).manifest.traceId;
      const sha = own ?? createHash('sha1').update(bytes).digest('hex').slice(0, 16);
      expect(e.traceId).toBe(sha);
      const samples = e.tables.find((t) => t.table === 'samples')!;
      expect(samples.path).toBe(join(dir, 'samples', `host=${e.host}`, `date=${e.date}`, `${sha}.parquet`));
      expect(samples.rows).toBe(readTrace(new Uint8Array(readFileSync(SAMPLE(e.name)))).tables.samples.numRows);
      for (const t of e.tables) expect(existsSync(t.path), t.path).toBe(true);
    }
  });

  it("one DuckDB query gives each host's local-access share equal to the engine's observed local ratio", () => {
    const rows = fleet('local_share_per_trace').local_share_per_trace!;
    expect(rows.map((r) => r['host']).sort()).toEqual(Object.keys(HOSTS).sort());
    for (const r of rows) {
      const trace = readTrace(new Uint8Array(readFileSync(SAMPLE(HOSTS[r['host'] as string]!))));
      const observed = analyze(trace, { policies: ['observed'] }).policies[0]!;
      expect(r['local_share'] as number, `${r['host']}`).toBeCloseTo(observed.localAccessRatio, 12);
      expect(r['trace_id']).toBe(exported.find((e) => e.host === r['host'])!.traceId);
    }
  }, 120_000);

  it('pages per node per program equal the traces’ pages tables; the other queries run', () => {
    const res = fleet('pages_per_node_per_program', 'remote_share_per_host_hour', 'hottest_alloc_sites');
    for (const name of Object.values(HOSTS)) {
      const trace = readTrace(new Uint8Array(readFileSync(SAMPLE(name))));
      const node = numericColumn<Int8Array>(trace.tables.pages, 'node');
      const byNode = new Map<number, number>();
      for (const n of node) if (n >= 0) byNode.set(n, (byNode.get(n) ?? 0) + 1);
      const program = trace.manifest.process?.command[0]?.split('/').pop();
      const got = res.pages_per_node_per_program!.filter((r) => r['program'] === program).map((r) => [r['node'], r['pages']]);
      expect(got, name).toEqual([...byNode.entries()].sort((a, b) => a[0] - b[0]));
    }
    const hours = res.remote_share_per_host_hour!;
    expect(new Set(hours.map((r) => r['host']))).toEqual(new Set(Object.keys(HOSTS)));
    for (const r of hours) expect(r['remote_share'] as number).toBeGreaterThanOrEqual(0);
    expect(res.hottest_alloc_sites!.length).toBeGreaterThan(0);
  }, 120_000);

  it('exporting a trace again replaces its files: the same rows, no copy', () => {
    const before = fleet('local_share_per_trace').local_share_per_trace!;
    exportAs('db-01', 'partitioned');
    const files = readdirSync(join(dir, 'samples', 'host=db-01'), { recursive: true }).filter((f) => String(f).endsWith('.parquet'));
    expect(files).toHaveLength(1);
    expect(fleet('local_share_per_trace').local_share_per_trace).toEqual(before);
  }, 120_000);
});

describe('numascope export: bad input', () => {
  it('a file that is not a trace is refused naming it, and nothing is written', () => {
    const bad = join(dir, 'not-a-trace.numascope');
    execFileSync('sh', ['-c', `printf 'PK\\003\\004 garbage' > '${bad}'`]);
    const out = join(dir, 'bad-out');
    let err = '';
    try {
      execFileSync(BIN, ['export', bad, '-o', out], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (e) {
      err = String((e as { stderr?: string }).stderr);
      expect((e as { status?: number }).status).toBe(1);
    }
    expect(err).toContain('not-a-trace.numascope');
    expect(err).toContain('nothing was written');
    expect(existsSync(out)).toBe(false);
  });
});
