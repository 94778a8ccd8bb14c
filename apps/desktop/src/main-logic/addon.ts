/**
 * The napi collector binding (native/collector/crates/node), typed by its own index.d.ts, whose
 * results are @numascope/protocol's types.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as Binding from '../../../../native/collector/crates/node/index';

/** The binding's functions the handlers use. */
export type CollectorAddon = Pick<typeof Binding, 'probe' | 'topology' | 'startRecording' | 'apply' | 'runPlan' | 'startBench'>;

/** native/collector/crates/node, found from this file (src/ or a compiled dist/). */
export function bindingDir(): string {
  if (process.env.NUMASCOPE_NODE_BINDING) return process.env.NUMASCOPE_NODE_BINDING;
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (let dir = here, i = 0; i < 6; i++, dir = path.dirname(dir)) {
    const c = path.join(dir, 'native', 'collector', 'crates', 'node');
    if (fs.existsSync(path.join(c, 'index.js'))) return c;
  }
  throw new Error(`numascope: native/collector/crates/node not found above ${here} (set NUMASCOPE_NODE_BINDING)`);
}

/** Loads the built addon; a clear error when numascope.node has not been built. */
export function loadAddon(dir = bindingDir()): CollectorAddon {
  const node = path.join(dir, 'numascope.node');
  if (!process.env.NUMASCOPE_NODE_ADDON && !fs.existsSync(node))
    throw new Error(
      `numascope: the napi addon ${node} is missing. Build it with \`npm run build\` in native/collector/crates/node ` +
        '(or run `npm test` at the repository root, which builds the collector first).',
    );
  return createRequire(import.meta.url)(path.join(dir, 'index.js')) as CollectorAddon;
}
