/**
 * Command line of the synthetic trace generator (run from sample-traces/):
 *
 *   npx tsx generator/cli.ts --model NAME --seed N [--samples N] [--machine PRESET] -o FILE
 *   npx tsx generator/cli.ts --all        regenerate every committed sample trace in sample-traces/
 *   npx tsx generator/cli.ts --list       list models, presets and committed samples
 */
import { writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { COMMITTED_SAMPLES, DEFAULT_SAMPLES } from './catalog.js';
import { listPresets } from './engine.js';
import { generateTraceBytes } from './generate.js';
import { MODELS } from './models.js';

const SAMPLE_TRACES_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..');

const USAGE = `usage:
  tsx generator/cli.ts --model NAME --seed N [--samples N] [--machine PRESET] -o FILE
  tsx generator/cli.ts --all      regenerate every committed sample trace
  tsx generator/cli.ts --list     list models, machine presets and committed samples`;

function parseInteger(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text)) throw new Error(`--${name} must be a non-negative integer, got "${text}"`);
  return Number(text);
}

function main(argv: string[]): void {
  const { values } = parseArgs({
    args: argv,
    options: {
      model: { type: 'string' },
      seed: { type: 'string' },
      samples: { type: 'string' },
      machine: { type: 'string' },
      output: { type: 'string', short: 'o' },
      all: { type: 'boolean' },
      list: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });

  if (values.help) {
    console.log(USAGE);
    return;
  }
  if (values.list) {
    console.log(`models: ${MODELS.map((m) => `${m.id} (default machine ${m.defaultMachine})`).join(', ')}`);
    console.log(`machine presets: ${listPresets().map((p) => p.id).join(', ')}`);
    for (const s of COMMITTED_SAMPLES) console.log(`committed: ${s.file} = --model ${s.model} --seed ${s.seed} --samples ${s.samples} --machine ${s.machine}`);
    return;
  }
  if (values.all) {
    for (const sample of COMMITTED_SAMPLES) {
      const bytes = generateTraceBytes(sample);
      const path = join(SAMPLE_TRACES_DIR, sample.file);
      writeFileSync(path, bytes);
      console.log(`wrote ${path} (${bytes.length} bytes)`);
    }
    return;
  }

  const seed = parseInteger('seed', values.seed);
  if (!values.model || seed === undefined || !values.output) {
    throw new Error(`--model, --seed and -o are required\n${USAGE}`);
  }
  const options = {
    model: values.model,
    seed,
    samples: parseInteger('samples', values.samples) ?? DEFAULT_SAMPLES,
    ...(values.machine ? { machine: values.machine } : {}),
  };
  const bytes = generateTraceBytes(options);
  writeFileSync(values.output, bytes);
  console.log(`wrote ${values.output} (${bytes.length} bytes)`);
}

try {
  main(process.argv.slice(2));
} catch (e) {
  console.error(`error: ${(e as Error).message}`);
  process.exitCode = 1;
}
