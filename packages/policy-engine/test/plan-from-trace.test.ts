import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { analyze } from '../src/analyze/analyze.js';
import { allocationObjectInputs } from '../src/plan/objects-from-trace.js';
import { buildPlan, validatePlan } from '../src/plan/index.js';
import { readTrace } from '../src/trace/reader.js';
import { SAMPLE_TRACES_DIR } from '../fuzz/corpus.js';

const load = (name: string) => readTrace(new Uint8Array(readFileSync(join(SAMPLE_TRACES_DIR, name))));

describe('object entries from a recording with allocation sites', () => {
  const trace = load('recorded-alloc-sites.numascope');
  const source = readFileSync(join(SAMPLE_TRACES_DIR, '../native/collector/crates/cli/tests/fixtures/alloc_sites.c'), 'utf8').split('\n');
  const lineOf = (marker: string) => source.findIndex((l) => l.includes(`SITE:${marker} `)) + 1;
  const inputs = allocationObjectInputs(trace);

  it('gives every allocation with a site its frames from the site outwards, in the program first', () => {
    expect(inputs.length).toBeGreaterThan(0);
    for (const i of inputs) {
      expect(i.frames.length).toBeGreaterThan(0);
      expect(i.end).toBeGreaterThan(i.start);
      // Folded: no two neighbouring frames at the same place.
      for (let k = 1; k < i.frames.length; k++) {
        expect(`${i.frames[k]!.module}:${i.frames[k]!.offset}`).not.toBe(`${i.frames[k - 1]!.module}:${i.frames[k - 1]!.offset}`);
      }
    }
    const large = inputs.filter((i) => i.end - i.start >= 65536n);
    expect(large.length).toBeGreaterThanOrEqual(4);
    for (const i of large) expect(i.frames[0]!.module).toMatch(/\/alloc_sites$/);
  });

  it('the CLI plan of it carries one object entry per large site, each at its marked source line', () => {
    const result = analyze(trace, { policies: ['first-touch'], accessEstimate: 'uniform' });
    const ft = result.policies[0]!;
    const plan = buildPlan(trace, ft.replay, {
      createdAt: '2026-11-24T00:00:00Z',
      traceName: 'recorded-alloc-sites.numascope',
      seed: 1,
      placement: ft.placement,
      objects: inputs,
      threadIdentity: 'order-and-name',
    });
    expect(() => validatePlan(JSON.parse(JSON.stringify(plan)))).not.toThrow();
    const sites = plan.objects!.map((o) => o.site);
    const markers = ['worker', 'table', 'matrix', 'grown'];
    const lines = markers.map((m) => `alloc_sites.c:${lineOf(m)}`);
    // Every entry names a marked line, and the big ones are all there.
    for (const s of sites) expect(lines.some((l) => s!.endsWith(l)), s!).toBe(true);
    for (const m of ['worker', 'table']) expect(sites.some((s) => s!.endsWith(`alloc_sites.c:${lineOf(m)}`)), m).toBe(true);
    // One machine node here: every entry binds its site to node 0.
    for (const o of plan.objects!) expect(o.nodes).toEqual([0]);
  });

  it('a trace without allocation tables gives no inputs', () => {
    expect(allocationObjectInputs(load('streamcluster-hotspot.numascope'))).toEqual([]);
  });
});
