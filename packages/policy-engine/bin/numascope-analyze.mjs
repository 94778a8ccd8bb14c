#!/usr/bin/env node
// numascope-analyze (an alias of `numascope analyze|diagnose|plan|compare|code`): runs the
// one-file bundle dist/numascope-analyze.mjs (bin/build-bundle.mjs; `npm test` and `npm start`
// build it). In a development checkout whose sources changed after the bundle was built, it runs
// the sources through tsx instead, so an edit is never hidden behind a stale bundle.
// Usage: numascope-analyze --help
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const bundle = join(root, 'dist/numascope-analyze.mjs');

/** Newest modification time under the sources (0 when they are not here, as in an install). */
function newestSource() {
  let newest = 0;
  const walk = (dir) => {
    if (!existsSync(dir)) return;
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts')) newest = Math.max(newest, statSync(p).mtimeMs);
    }
  };
  walk(join(root, 'src'));
  walk(join(root, 'cli'));
  return newest;
}

async function fromSource() {
  let register;
  try {
    ({ register } = await import('tsx/esm/api'));
  } catch {
    return false;
  }
  register();
  const { main } = await import('../cli/main.ts');
  process.exitCode = await main(process.argv.slice(2));
  return true;
}

const fresh = existsSync(bundle) && statSync(bundle).mtimeMs >= newestSource();
if (!fresh || process.env.NUMASCOPE_ANALYZE_FROM_SOURCE) {
  if (!(await fromSource())) {
    if (!existsSync(bundle)) {
      process.stderr.write(`numascope-analyze: ${bundle} is not built and tsx is not installed: run \`node packages/policy-engine/bin/build-bundle.mjs\`\n`);
      process.exit(127);
    }
    await import(bundle);
  }
} else {
  await import(bundle);
}
