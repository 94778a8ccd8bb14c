// @vitest-environment node
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildSampleIndex } from '../samples-plugin';
import { fixtureTraceBytes } from '../../../e2e/fixtures/trace-fixture';

let dir = '';
const saved = process.env.NUMASCOPE_EXTRA_TRACES;

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'numascope-samples-'));
  process.env.NUMASCOPE_EXTRA_TRACES = dir;
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
  if (saved === undefined) delete process.env.NUMASCOPE_EXTRA_TRACES;
  else process.env.NUMASCOPE_EXTRA_TRACES = saved;
});

describe('samples index', () => {
  it('describes each trace from its manifest', () => {
    writeFileSync(path.join(dir, 'zz-fixture.numascope'), fixtureTraceBytes('synthetic'));
    const entry = buildSampleIndex().samples.find((s) => s.file === 'zz-fixture.numascope');
    expect(entry).toMatchObject({
      url: 'samples/zz-fixture.numascope',
      collection: 'extra',
      origin: { kind: 'synthetic', seed: 42, model: 'e2e-two-node' },
      machine: { name: 'e2e-2node', nodes: 2, cpus: 8 },
      durationUs: 1_000_000,
      sampleCount: 30,
    });
  });

  it('lists a broken file with the reason instead of failing', () => {
    writeFileSync(path.join(dir, 'zz-broken.numascope'), 'not a zip');
    writeFileSync(path.join(dir, 'ignored.txt'), 'not a trace name');
    const index = buildSampleIndex();
    expect(index.samples.find((s) => s.file === 'zz-broken.numascope')?.error).toMatch(/manifest unreadable/);
    expect(index.samples.some((s) => s.file === 'ignored.txt')).toBe(false);
  });

  it('a name in sample-traces/ wins over the same name in an extra folder', () => {
    const index = buildSampleIndex();
    const first = index.samples.find((s) => s.collection === 'sample-traces');
    if (!first) return; // no bundled samples yet
    copyFileSync(path.join(__dirname, '../../../sample-traces', first.file), path.join(dir, first.file));
    expect(buildSampleIndex().samples.filter((s) => s.file === first.file)).toHaveLength(1);
  });
});
