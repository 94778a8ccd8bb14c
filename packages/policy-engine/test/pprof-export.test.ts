/**
 * Issue 32, "pprof for flame graphs": `numascope export --format pprof` of the recorded samples
 * opens in `go tool pprof -top`, and its figures are the engine's: per allocation-site function,
 * the bytes allocated and the accesses to that memory (the engine's Objects attribution), and per
 * sampled function the accesses on its code stacks; every sample type's total is the trace's.
 *
 * Needs the built collector (NUMASCOPE_BIN) and Go (`go tool pprof`; GO overrides its path).
 * Without Go the suite is skipped with a message; the collector's unit tests decode the profile
 * with prost either way (crates/cli/src/cmd_export/pprof.rs).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { readTrace } from '../src/trace/reader.js';
import { numericColumn } from '../src/trace/columns.js';
import { allocationStack, objectColumns } from '../src/query/objects.js';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BIN = process.env['NUMASCOPE_BIN'] ?? resolve(REPO_ROOT, 'native/collector/target/debug/numascope');
const SAMPLE = (name: string) => resolve(REPO_ROOT, `sample-traces/${name}.numascope`);

function findGo(): string | null {
  for (const g of [process.env['GO'], 'go', '/usr/local/go/bin/go']) {
    if (!g) continue;
    try {
      execFileSync(g, ['version'], { stdio: 'ignore' });
      return g;
    } catch {
      /* next */
    }
  }
  return null;
}
const GO = findGo();
/**
 * Each test runs `go tool pprof` several times; the first run of a fresh Go cache also builds
 * the tool (Go 1.24+ builds `go tool` commands on demand), 30 s and more on a loaded 2-core machine.
 */
const GO_TIMEOUT_MS = 180_000;
if (!GO) console.warn('SKIP pprof-export: no Go on this machine (`go tool pprof` opens the profile); the prost unit tests still decode it');

const dir = mkdtempSync(join(tmpdir(), 'numascope-pprof-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function exportProfile(name: string): { path: string; sampleTypes: string[] } {
  const path = join(dir, `${name}.pb.gz`);
  const out = execFileSync(BIN, ['export', SAMPLE(name), '--format', 'pprof', '-o', path, '--json', '-q'], { encoding: 'utf8' });
  return JSON.parse(out);
}

/** `go tool pprof -top` flat values by function. */
function top(path: string, sampleIndex: string): { flat: Map<string, number>; total: number } {
  const out = execFileSync(GO!, ['tool', 'pprof', '-top', '-nodefraction=0', '-nodecount=100000', '-unit=B', `-sample_index=${sampleIndex}`, path], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const flat = new Map<string, number>();
  let total = NaN;
  for (const line of out.split('\n')) {
    const t = /Total samples = (\d+)B?/.exec(line);
    if (t) total = Number(t[1]);
    const m = /^\s*(\d+)B?\s+[\d.]+%\s+[\d.]+%\s+(\d+)B?\s+[\d.]+%\s+(.+)$/.exec(line);
    // pprof marks a frame inlined into its caller " (inline)"
    const fn = m?.[3]!.trim().replace(/ \(inline\)$/, '');
    if (m && fn && Number(m[1]) > 0) flat.set(fn, (flat.get(fn) ?? 0) + Number(m[1]));
  }
  return { flat, total };
}

/**
 * pprof's -top simplifies C++ and Rust names (argument lists, generic parameters) in ways of its
 * own; the figures are compared on plain C names, which it shows as they are.
 */
const plain = (f: string | null | undefined): string | null => (f && /^[A-Za-z_][A-Za-z0-9_.]*$/.test(f) ? f : null);

describe.skipIf(!GO)('numascope export --format pprof opens in go tool pprof with the engine\'s figures (issue 32)', () => {
  it('alloc_space and object_accesses per allocation-site function equal the engine\'s Objects attribution', () => {
    for (const name of ['recorded-alloc-sites', 'recorded-code-sites']) {
      const { path, sampleTypes } = exportProfile(name);
      expect(existsSync(path)).toBe(true);
      expect(sampleTypes.slice(0, 6)).toEqual(['accesses', 'remote_accesses', 'alloc_space', 'object_accesses', 'object_remote_accesses', 'pages']);
      const trace = readTrace(new Uint8Array(readFileSync(SAMPLE(name))));
      const o = objectColumns(trace)!;
      expect(o, `${name} has allocations`).not.toBeNull();
      const bytes = new Map<string, number>();
      const accesses = new Map<string, number>();
      const leaf = (a: number) => {
        return plain(allocationStack(o, a)[0]?.function);
      };
      for (let a = 0; a < o.count; a++) {
        const f = leaf(a);
        if (f) bytes.set(f, (bytes.get(f) ?? 0) + Math.round(o.weightBytes[a]!));
      }
      const weight = numericColumn<Uint32Array>(trace.tables.samples, 'weight');
      let inAllocations = 0;
      for (let i = 0; i < o.sampleAllocation.length; i++) {
        const a = o.sampleAllocation[i]!;
        if (a < 0) continue;
        const w = Math.max(1, weight[i]!);
        inAllocations += w;
        const f = leaf(a);
        if (f) accesses.set(f, (accesses.get(f) ?? 0) + w);
      }
      expect(bytes.size, `${name}: allocation sites with names`).toBeGreaterThan(0);
      const space = top(path, 'alloc_space');
      for (const [f, b] of bytes) expect(space.flat.get(f), `${name} alloc_space ${f}`).toBe(b);
      const obj = top(path, 'object_accesses');
      for (const [f, n] of accesses) expect(obj.flat.get(f), `${name} object_accesses ${f}`).toBe(n);
      const totalWeight = Array.from(weight, (w) => Math.max(1, w)).reduce((s, w) => s + w, 0);
      expect(obj.total).toBe(totalWeight);
      const outside = [...obj.flat].filter(([f]) => f.startsWith('[not in a recorded allocation') || f.startsWith('[address unknown')).reduce((s, [, n]) => s + n, 0);
      expect(outside, `${name}: what no allocation holds is filed under a bracketed name`).toBe(totalWeight - inAllocations);
    }
  }, GO_TIMEOUT_MS);

  it('accesses per sampled function equal the trace\'s samples on their code stacks, pages per node the pages table', () => {
    const name = 'recorded-code-sites';
    const { path, sampleTypes } = exportProfile(name);
    const trace = readTrace(new Uint8Array(readFileSync(SAMPLE(name))));
    const o = objectColumns(trace)!;
    const stack = numericColumn<Int32Array>(trace.tables.samples, 'stack');
    const weight = numericColumn<Uint32Array>(trace.tables.samples, 'weight');
    const expected = new Map<string, number>();
    let unstacked = 0;
    for (let i = 0; i < stack.length; i++) {
      const w = Math.max(1, weight[i]!);
      const s = stack[i]!;
      if (s < 0) {
        unstacked += w;
        continue;
      }
      const fn = plain(o.frames.function[o.stackFrames[o.stackStart[s]!]!]);
      if (fn) expected.set(fn, (expected.get(fn) ?? 0) + w);
    }
    expect(expected.size).toBeGreaterThan(3);
    const acc = top(path, 'accesses');
    expect(acc.total).toBe(Array.from(weight, (w) => Math.max(1, w)).reduce((s, w) => s + w, 0));
    for (const [f, n] of expected) expect(acc.flat.get(f), `accesses ${f}`).toBe(n);
    expect(acc.flat.get('[no call stack recorded]') ?? 0).toBe(unstacked);
    const nodes = numericColumn<Int8Array>(trace.tables.pages, 'node');
    for (const t of sampleTypes.filter((t) => t.startsWith('pages_node'))) {
      const n = Number(t.slice('pages_node'.length));
      expect(top(path, t).total, t).toBe(nodes.filter((x) => x === n).length);
    }
  }, GO_TIMEOUT_MS);
});
