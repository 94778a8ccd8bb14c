/**
 * The trace reader's fuzz test (docs/robustness.md, "Trace reader"): 3,000 mutated traces of seed
 * 1 (fuzz/mutate.ts) through readTrace, the summary and a short engine analysis, each in a pool of
 * child processes with a time limit and a memory watch (fuzz/pool.ts). Every input must end as a
 * checked trace or a typed TraceError: no untyped exception, crash, out-of-memory or hang.
 * About 45 s on a loaded 2-core machine (30 s for the inputs, 12 s for the pool self-test). The
 * large run is on demand: `npm run fuzz:trace -w packages/policy-engine -- --count 10000 --seed N`.
 */
import { describe, expect, it } from 'vitest';
import { formatReport, runFuzz } from '../fuzz/pool.js';

const SEED = 1;
const COUNT = 3000;

describe('trace reader fuzz', () => {
  it(`${COUNT} mutated traces (seed ${SEED}): every one read or refused with a typed error`, async () => {
    const report = await runFuzz({ count: COUNT, seed: SEED, jobs: 2, timeoutMs: 10_000, maxRssMb: 1024, corpus: 'mixed', engine: true });
    const text = formatReport(report, { seed: SEED });
    expect(report.inputs).toBe(COUNT);
    expect(report.failures, text).toEqual([]);
    expect(report.peakRssMb, text).toBeLessThan(1024);
    // The mutations reach every layer: the container, its CRCs, the Arrow metadata, the manifest,
    // the references; and some inputs are still good traces.
    for (const code of ['zip-corrupt', 'zip-crc', 'zip-limits', 'table-corrupt', 'manifest-invalid', 'manifest-limits', 'index-out-of-range']) {
      expect(report.codes[code] ?? 0, `${code}\n${text}`).toBeGreaterThan(0);
    }
    expect(report.outcomes.ok, text).toBeGreaterThan(0);
  }, 240_000);

  it('the pool counts a hang, a crash, running out of memory and an untyped exception, and goes on', async () => {
    const report = await runFuzz({ count: 6, seed: SEED, jobs: 1, timeoutMs: 3000, maxRssMb: 400, corpus: 'small', engine: false, selfTest: true });
    expect(report.inputs).toBe(6);
    expect(report.failures.map((f) => [f.index, f.kind])).toEqual([
      [0, 'hang'],
      [1, 'crash'],
      [2, 'oom'],
      [3, 'untyped'],
    ]);
    expect(report.outcomes.ok + report.outcomes['trace-error']).toBe(2);
  }, 120_000);
});
