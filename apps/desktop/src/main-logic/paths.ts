/**
 * Where the desktop app finds its parts, in development (`electron apps/desktop/dist/app` after
 * scripts/build.mjs: dist/app/main.js, preload.cjs, renderer/; the repository's collector and docs)
 * and packaged (electron-builder.json: the app in resources/app.asar, the collector in
 * resources/native, the documents in resources/docs). Environment variables override each.
 */
import fs from 'node:fs';
import path from 'node:path';

export interface AppPaths {
  /** The built web UI (index.html, assets/, samples/), served as app://numascope/. */
  rendererDir: string;
  preload: string;
  /** The napi binding's directory (index.js + numascope.node). */
  bindingDir: string | null;
  /** The `numascope` CLI, for rollback. */
  cliBin: string;
  /**
   * The allocation-site shim (libnumascope_allocshim.so) that recordings of launched commands
   * preload (docs/alloc-sites.md); main.ts hands it to the addon as NUMASCOPE_ALLOC_SHIM. null:
   * not found (recordings then say that allocation sites are unavailable and why).
   */
  allocShim: string | null;
  /** docs/ (the Help menu). */
  docsDir: string;
}

/** The shim's file name (the collector's SHIM_FILE_NAME); scripts/build.mjs copies it into dist/native. */
export const ALLOC_SHIM_FILE = 'libnumascope_allocshim.so';

export interface PathInputs {
  /** Directory of the running main.js (dist/app in development, …/app.asar in a package). */
  here: string;
  isPackaged: boolean;
  /** Electron's process.resourcesPath (packaged only). */
  resourcesPath?: string;
  env: Record<string, string | undefined>;
  exists?: (p: string) => boolean;
}

export function appPaths(inp: PathInputs): AppPaths {
  const exists = inp.exists ?? fs.existsSync;
  const env = inp.env;
  if (inp.isPackaged) {
    const res = inp.resourcesPath ?? path.dirname(inp.here);
    return {
      rendererDir: env.NUMASCOPE_WEB_DIR ?? path.join(inp.here, 'renderer'),
      preload: path.join(inp.here, 'preload.cjs'),
      bindingDir: env.NUMASCOPE_NODE_BINDING ?? path.join(res, 'native'),
      cliBin: env.NUMASCOPE_BIN ?? path.join(res, 'native', 'numascope'),
      allocShim: env.NUMASCOPE_ALLOC_SHIM ?? (exists(path.join(res, 'native', ALLOC_SHIM_FILE)) ? path.join(res, 'native', ALLOC_SHIM_FILE) : null),
      docsDir: path.join(res, 'docs'),
    };
  }
  // Development: here = apps/desktop/dist/app; the repository is the first directory above with
  // native/collector.
  let repo = path.resolve(inp.here, '..', '..', '..', '..');
  for (let d = inp.here, i = 0; i < 6; i++, d = path.dirname(d))
    if (exists(path.join(d, 'native', 'collector'))) {
      repo = d;
      break;
    }
  const collector = path.join(repo, 'native', 'collector');
  const cli = ['release', 'debug'].map((p) => path.join(collector, 'target', p, 'numascope')).find((p) => exists(p));
  const shim = ['release', 'debug'].map((p) => path.join(collector, 'target', p, ALLOC_SHIM_FILE)).find((p) => exists(p));
  return {
    rendererDir: env.NUMASCOPE_WEB_DIR ?? path.join(inp.here, 'renderer'),
    preload: path.join(inp.here, 'preload.cjs'),
    // null: addon.ts's bindingDir() finds native/collector/crates/node above the bundle (or NUMASCOPE_NODE_BINDING).
    bindingDir: env.NUMASCOPE_NODE_BINDING ?? null,
    cliBin: env.NUMASCOPE_BIN ?? cli ?? 'numascope',
    allocShim: env.NUMASCOPE_ALLOC_SHIM ?? shim ?? null,
    docsDir: path.join(repo, 'docs'),
  };
}
