/** The napi collector binding (native/collector/crates/node), typed as the handlers use it. */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ApplyReport, Probe, RecordSummary, Topology } from '../api';

export interface AddonRecordOptions {
  pid?: number;
  command?: string[];
  durationMs?: number;
  output: string;
  intervalMs?: number;
  /** Live window length, ms (with onWindow). */
  windowMs?: number;
  /** Receives the collector's live windows, the final one included, before `result` resolves. */
  onWindow?: (w: CollectorWindow) => void;
}

/** A live window as the binding sends it (native/collector/crates/node/index.d.ts LiveWindow). */
export interface CollectorWindow {
  seq: number;
  startUs: number;
  endUs: number;
  elapsedUs: number;
  final: boolean;
  pid: number;
  faults: number;
  faultsByNode: { node: number; count: number }[];
  totals: { faults: number; faultsByNode: { node: number; count: number }[]; pages: number; pagesByNode: { node: number; count: number }[] };
  threads: { tid: number; name: string; cpu: number; node: number; faults: number; alive: boolean }[];
  threadsSeen: number;
  lostSamples: number;
}

export interface CollectorAddon {
  probe(): Promise<Probe>;
  topology(): Promise<Topology>;
  startRecording(options: AddonRecordOptions): { result: Promise<RecordSummary>; stop(): void };
  apply(planJson: string, options: { pid: number; dryRun?: boolean; budgetMs?: number }): Promise<ApplyReport>;
}

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
