/**
 * The generator is a pure function of its options: same options, same bytes (whatever the time
 * zone); a different seed, model or machine gives a different trace. And the committed sample
 * traces are exactly what the generator makes now, so they cannot drift from it.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMITTED_SAMPLES } from '../generator/catalog.js';
import { readTrace } from '../generator/engine.js';
import { generateTraceBytes, generatorCommand } from '../generator/generate.js';
import { MODELS } from '../generator/models.js';
import { createRng } from '../generator/prng.js';
import { SAMPLE_TRACES_DIR } from './helpers.js';

const small = { model: 'streamcluster-hotspot', seed: 11, samples: 3000 };

describe('determinism', () => {
  it('gives identical bytes for the same options', () => {
    expect(generateTraceBytes(small)).toEqual(generateTraceBytes({ ...small }));
  });

  it('gives different bytes for a different seed, but the same structure', () => {
    const a = generateTraceBytes(small);
    const b = generateTraceBytes({ ...small, seed: 12 });
    expect(b).not.toEqual(a);
    const [ta, tb] = [readTrace(a), readTrace(b)];
    expect(tb.tables.samples.numRows).toBe(ta.tables.samples.numRows);
    expect(tb.tables.pages.numRows).toBe(ta.tables.pages.numRows);
    expect(tb.manifest.origin.seed).toBe(12);
  });

  it('gives different traces for different models and machines', () => {
    const traces = [
      ...MODELS.map((m) => generateTraceBytes({ ...small, model: m.id })),
      generateTraceBytes({ ...small, machine: 'intel-spr-2s' }),
    ];
    const keys = new Set(traces.map((t) => Buffer.from(t).toString('base64')));
    expect(keys.size).toBe(traces.length);
  });

  it('does not depend on the process time zone', () => {
    const before = process.env.TZ;
    try {
      process.env.TZ = 'Pacific/Chatham';
      const chatham = generateTraceBytes(small);
      process.env.TZ = 'UTC';
      expect(generateTraceBytes(small)).toEqual(chatham);
    } finally {
      process.env.TZ = before;
    }
  });

  it('records the generating command in the manifest', () => {
    const manifest = readTrace(generateTraceBytes(small)).manifest;
    expect(manifest.origin.command).toEqual(generatorCommand({ ...small, machine: 'amd-opteron-8385-4p' }));
  });

  it('rejects bad options with a message naming them', () => {
    expect(() => generateTraceBytes({ ...small, model: 'streamcluster' })).toThrow(/unknown workload model "streamcluster".*partitioned/);
    expect(() => generateTraceBytes({ ...small, machine: 'epyc' })).toThrow(/unknown machine preset "epyc"/);
    expect(() => generateTraceBytes({ ...small, seed: -1 })).toThrow(/seed/);
    expect(() => generateTraceBytes({ ...small, samples: 0 })).toThrow(/samples/);
  });
});

describe('committed sample traces', () => {
  for (const sample of COMMITTED_SAMPLES) {
    describe(sample.file, () => {
      const path = join(SAMPLE_TRACES_DIR, sample.file);

      it('is exactly what the generator makes now (regenerate with `npm run generate -- --all`)', () => {
        const committed = new Uint8Array(readFileSync(path));
        const fresh = generateTraceBytes(sample);
        expect(committed.length).toBe(fresh.length);
        expect(Buffer.compare(committed, fresh)).toBe(0);
      });

      it('is small enough to commit (under 2.5 MiB: the v3 stack and hitm columns add 5 bytes a sample)', () => {
        expect(statSync(path).size).toBeLessThan(2.5 * 1024 * 1024);
      });

      it('is documented in the README with the command that made it', () => {
        const readme = readFileSync(join(SAMPLE_TRACES_DIR, 'README.md'), 'utf8');
        expect(readme).toContain(sample.file);
        expect(readme).toContain(`${generatorCommand(sample).join(' ')} -o ${sample.file}`);
      });
    });
  }
});

describe('prng', () => {
  it('repeats a sequence for the same seed and stream, and not for another', () => {
    const draw = (seed: number, stream?: string) => {
      const rng = createRng(seed, stream);
      return Array.from({ length: 8 }, () => rng.next());
    };
    expect(draw(5)).toEqual(draw(5));
    expect(draw(5)).not.toEqual(draw(6));
    expect(draw(5, 'latency')).not.toEqual(draw(5));
  });

  it('draws uniform integers in range and normals with mean 0 and deviation 1', () => {
    const rng = createRng(99);
    const n = 20_000;
    const counts = new Array(10).fill(0);
    let sum = 0;
    let squares = 0;
    for (let i = 0; i < n; i++) {
      counts[rng.int(10)]++;
      const z = rng.normal();
      sum += z;
      squares += z * z;
    }
    for (const c of counts) expect(Math.abs(c - n / 10)).toBeLessThan(0.1 * (n / 10));
    expect(Math.abs(sum / n)).toBeLessThan(0.05);
    expect(Math.abs(Math.sqrt(squares / n) - 1)).toBeLessThan(0.05);
  });

  it('refuses seeds that are not 32-bit unsigned integers', () => {
    expect(() => createRng(1.5)).toThrow(/seed/);
    expect(() => createRng(2 ** 32)).toThrow(/seed/);
  });
});
