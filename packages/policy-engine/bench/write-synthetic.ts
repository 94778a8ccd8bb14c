/** Writes the benchmark's synthetic trace to a file: tsx bench/write-synthetic.ts SAMPLES OUT.numascope */
import { writeFileSync } from 'node:fs';
import { syntheticTrace } from './synthetic.js';

const [samples, out] = process.argv.slice(2);
if (!samples || !out) {
  console.error('usage: tsx bench/write-synthetic.ts SAMPLES OUT.numascope');
  process.exit(2);
}
writeFileSync(out, syntheticTrace(Number(samples)));
