/**
 * Benchmark (not part of the test suite): readTrace's time on each trace given, best of 3 (wall
 * clock, and the process's CPU time, which a loaded machine inflates less), and the bytes a sample of the file (docs/trace-format.md, "Size on disk").
 *
 *   cd sample-traces && npx tsx generator/cli.ts --model two-groups --seed 3 --samples 1000000 -o /tmp/g1m.numascope
 *   $NUMASCOPE_PYTHON scripts/python/rewrite-trace.py pyarrow-zstd /tmp/g1m.numascope /tmp/g1m-zstd.numascope
 *   cd packages/policy-engine && npx tsx bench/read-time.ts /tmp/g1m.numascope /tmp/g1m-zstd.numascope
 */
import { readFileSync } from 'node:fs';
import { readTrace } from '../src/trace/reader.js';
import { zstdDecoderInUse, zstdReady } from '../src/trace/zstd.js';

await zstdReady();
const { decoder, why } = zstdDecoderInUse();
console.log(`ZSTD decoder: ${decoder}${why ? ` (${why})` : ''}`);

for (const file of process.argv.slice(2)) {
  const bytes = new Uint8Array(readFileSync(file));
  let best = Infinity;
  let bestCpu = Infinity;
  let samples = 0;
  for (let k = 0; k < 3; k++) {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    const trace = readTrace(bytes);
    const cpu = process.cpuUsage(c0);
    best = Math.min(best, performance.now() - t0);
    bestCpu = Math.min(bestCpu, (cpu.user + cpu.system) / 1000);
    samples = trace.tables.samples.numRows;
  }
  console.log(`${file}: ${samples} samples, ${bytes.length} bytes (${(bytes.length / samples).toFixed(2)} B/sample), readTrace ${best.toFixed(0)} ms (CPU ${bestCpu.toFixed(0)} ms)`);
}
