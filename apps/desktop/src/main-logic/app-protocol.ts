/**
 * The renderer's files over a custom `app://numascope/` scheme instead of `file://` (Electron's
 * security checklist: file: pages get an opaque origin, so the web UI's fetch of
 * samples/index.json, its module Web Worker and a `'self'` CSP would not work or would mean too
 * much). main.ts registers the scheme as privileged (standard, secure, fetch) before the app is
 * ready and hands `createAppHandler(rendererDir)` to protocol.handle. Plain Node (Request and
 * Response are Node 20 globals), tested without Electron.
 *
 * Only files under the renderer directory are served, only GET/HEAD, only for the host
 * `numascope`; every response carries the CSP and nosniff.
 */
import fs from 'node:fs/promises';
import path from 'node:path';

export const APP_SCHEME = 'app';
export const APP_HOST = 'numascope';
export const APP_ORIGIN = `${APP_SCHEME}://${APP_HOST}`;
export const APP_INDEX_URL = `${APP_ORIGIN}/index.html`;

/**
 * The renderer's Content Security Policy (on every app:// response and, through the session, on
 * any other): no remote content; scripts, styles, workers and fetches from the app's own files
 * only; no eval. Two narrow allowances for the trace reader's WebAssembly ZSTD decoder (zstddec,
 * policy-engine src/trace/zstd.ts): 'wasm-unsafe-eval' compiles WebAssembly (not JavaScript: eval
 * and new Function stay refused), and `data:` in connect-src lets it fetch its own inlined module
 * (a data: URL carries its bytes inline: nothing leaves the machine). Without them the reader
 * falls back to the slower fzstd. e2e/tests/desktop.e2e.ts runs the built web UI under it.
 * numascope serve sends the same policy plus its own WebSocket origins in connect-src
 * (cmd_serve/static_files.rs); test/web-contract.test.ts holds the two to each other.
 */
export const CSP = [
  "default-src 'self'",
  "script-src 'self' 'wasm-unsafe-eval'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "worker-src 'self' blob:",
  "connect-src 'self' data:",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Electron's CustomScheme privileges for APP_SCHEME (protocol.registerSchemesAsPrivileged). */
export const APP_SCHEME_PRIVILEGES = { standard: true, secure: true, supportFetchAPI: true, corsEnabled: true, stream: true } as const;

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.wasm': 'application/wasm',
  '.map': 'application/json; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8',
  '.numascope': 'application/x-numascope',
};

export function contentType(file: string): string {
  return TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream';
}

/** The file under `root` that an app:// URL names, or null (other host or scheme, outside root, malformed). */
export function resolveAppPath(root: string, url: string): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  if (u.protocol !== `${APP_SCHEME}:` || u.host !== APP_HOST) return null;
  let rel: string;
  try {
    rel = decodeURIComponent(u.pathname);
  } catch {
    return null;
  }
  if (rel.includes('\0')) return null;
  if (rel === '' || rel.endsWith('/')) rel += 'index.html';
  const base = path.resolve(root);
  const file = path.resolve(base, '.' + path.posix.normalize('/' + rel));
  const inside = path.relative(base, file);
  if (inside === '' || inside.startsWith('..') || path.isAbsolute(inside)) return null;
  return file;
}

/** The protocol.handle handler: the renderer's files, with security headers. */
export function createAppHandler(root: string, csp: string): (req: Request) => Promise<Response> {
  const headers = (type: string): Record<string, string> => ({
    'Content-Type': type,
    'Content-Security-Policy': csp,
    'X-Content-Type-Options': 'nosniff',
    'Cache-Control': 'no-cache',
  });
  const plain = (status: number, text: string) => new Response(text, { status, headers: headers('text/plain; charset=utf-8') });
  return async (req) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return plain(405, 'method not allowed');
    const file = resolveAppPath(root, req.url);
    if (!file) return plain(404, 'not found');
    let body: Buffer;
    try {
      const st = await fs.stat(file);
      if (!st.isFile()) return plain(404, 'not found');
      body = await fs.readFile(file);
    } catch {
      return plain(404, 'not found');
    }
    return new Response(req.method === 'HEAD' ? null : new Uint8Array(body), { status: 200, headers: headers(contentType(file)) });
  };
}
