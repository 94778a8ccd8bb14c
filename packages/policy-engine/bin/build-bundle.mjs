#!/usr/bin/env node
// Bundles the analysis CLI (cli/main.ts and everything it imports, apache-arrow and fflate
// included) into one ES module, dist/numascope-analyze.mjs, for Node 20 and later: what
// `numascope analyze …` runs beside the binary (docs/cli.md, "One front door"). About a second.
// Usage: node bin/build-bundle.mjs [OUT]
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';
import { resolve } from 'node:path';

const here = fileURLToPath(new URL('..', import.meta.url));
const out = resolve(process.argv[2] ?? resolve(here, 'dist/numascope-analyze.mjs'));
await build({
  entryPoints: [resolve(here, 'cli/bundle-entry.ts')],
  outfile: out,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  legalComments: 'eof',
  logLevel: 'warning',
  // CommonJS dependencies inside an ES module bundle call require(): give them Node's.
  banner: { js: "import { createRequire as __nsCreateRequire } from 'node:module'; const require = __nsCreateRequire(import.meta.url);" },
});
process.stderr.write(`numascope: analysis bundle written to ${out}\n`);
