/**
 * Serves the bundled sample traces at `samples/` and lists them in `samples/index.json`.
 *
 * - Dev server and preview server: files are read from `sample-traces/` (the top level of that
 *   folder, `*.numascope` only) and from every folder in NUMASCOPE_EXTRA_TRACES (separated by
 *   the platform's path delimiter; `scripts/start.sh` puts a fresh recording there).
 * - Build: the same files and index are copied into `dist/samples/`.
 *
 * The index is built from each file's `manifest.json` (read with fflate, no other parsing), so
 * the landing page can say what each sample is without downloading it.
 */
import { createReadStream, existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { strFromU8, unzipSync } from 'fflate';
import type { Connect, Plugin } from 'vite';
import type { SampleIndex, SampleIndexEntry } from './src/ui/sample-index';

export type { SampleIndex, SampleIndexEntry };

const here = path.dirname(fileURLToPath(import.meta.url));
export const SAMPLE_TRACES_DIR = path.resolve(here, '../../sample-traces');

interface Located {
  abs: string;
  file: string;
  collection: SampleIndexEntry['collection'];
}

function traceDirs(): Array<{ dir: string; collection: SampleIndexEntry['collection'] }> {
  const extra = (process.env.NUMASCOPE_EXTRA_TRACES ?? '')
    .split(path.delimiter)
    .filter((d) => d.trim() !== '')
    .map((d) => ({ dir: path.resolve(d), collection: 'extra' as const }));
  return [{ dir: SAMPLE_TRACES_DIR, collection: 'sample-traces' as const }, ...extra];
}

function locateTraces(): Located[] {
  const seen = new Set<string>();
  const out: Located[] = [];
  for (const { dir, collection } of traceDirs()) {
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir).sort()) {
      if (!name.endsWith('.numascope') || seen.has(name)) continue;
      const abs = path.join(dir, name);
      if (!statSync(abs).isFile()) continue;
      seen.add(name);
      out.push({ abs, file: name, collection });
    }
  }
  return out;
}

const cache = new Map<string, { key: string; entry: SampleIndexEntry }>();

function describe(t: Located): SampleIndexEntry {
  const st = statSync(t.abs);
  const key = `${st.size}:${st.mtimeMs}`;
  const hit = cache.get(t.abs);
  if (hit && hit.key === key) return hit.entry;
  const entry: SampleIndexEntry = {
    file: t.file,
    url: `samples/${encodeURIComponent(t.file)}`,
    sizeBytes: st.size,
    collection: t.collection,
    origin: null,
    machine: null,
    durationUs: null,
    sampleCount: null,
  };
  try {
    const files = unzipSync(readFileSync(t.abs), { filter: (f) => f.name === 'manifest.json' });
    const bytes = files['manifest.json'];
    if (!bytes) throw new Error('no manifest.json in the ZIP');
    const m = JSON.parse(strFromU8(bytes));
    entry.origin = {
      kind: String(m.origin?.kind ?? 'unknown'),
      generator: String(m.origin?.generator ?? ''),
      seed: typeof m.origin?.seed === 'number' ? m.origin.seed : null,
      model: typeof m.origin?.model === 'string' ? m.origin.model : null,
      description: String(m.origin?.description ?? ''),
    };
    const nodes: Array<{ cpus?: unknown[] }> = Array.isArray(m.machine?.nodes) ? m.machine.nodes : [];
    entry.machine = {
      name: String(m.machine?.name ?? ''),
      nodes: nodes.length,
      cpus: nodes.reduce((n, node) => n + (Array.isArray(node.cpus) ? node.cpus.length : 0), 0),
    };
    entry.durationUs = typeof m.capture?.durationUs === 'number' ? m.capture.durationUs : null;
    entry.sampleCount = typeof m.capture?.sampleCount === 'number' ? m.capture.sampleCount : null;
  } catch (e) {
    entry.error = `manifest unreadable: ${(e as Error).message}`;
  }
  cache.set(t.abs, { key, entry });
  return entry;
}

export function buildSampleIndex(): SampleIndex {
  return { samples: locateTraces().map(describe) };
}

function samplesMiddleware(): Connect.NextHandleFunction {
  return (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    let rel: string;
    try {
      rel = decodeURIComponent(new URL(req.url ?? '/', 'http://localhost').pathname).replace(/^\/+/, '');
    } catch {
      return next();
    }
    if (rel === 'index.json') {
      const body = JSON.stringify(buildSampleIndex(), null, 2);
      res.setHeader('Content-Type', 'application/json; charset=utf-8');
      res.setHeader('Cache-Control', 'no-store');
      res.end(req.method === 'HEAD' ? undefined : body);
      return;
    }
    const found = locateTraces().find((t) => t.file === rel);
    if (!found) {
      res.statusCode = 404;
      res.setHeader('Content-Type', 'text/plain; charset=utf-8');
      res.end(`No sample trace named "${rel}". See samples/index.json for the list.\n`);
      return;
    }
    const size = statSync(found.abs).size;
    res.setHeader('Content-Type', 'application/octet-stream');
    res.setHeader('Content-Length', String(size));
    res.setHeader('Cache-Control', 'no-store');
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    createReadStream(found.abs).pipe(res);
  };
}

export function samplesPlugin(): Plugin {
  return {
    name: 'numascope-samples',
    configureServer(server) {
      server.middlewares.use('/samples', samplesMiddleware());
    },
    configurePreviewServer(server) {
      server.middlewares.use('/samples', samplesMiddleware());
    },
    generateBundle() {
      const index = buildSampleIndex();
      for (const t of locateTraces()) {
        this.emitFile({ type: 'asset', fileName: `samples/${t.file}`, source: readFileSync(t.abs) });
      }
      this.emitFile({ type: 'asset', fileName: 'samples/index.json', source: JSON.stringify(index, null, 2) });
    },
  };
}
