// The app://numascope/ handler (main-logic/app-protocol.ts) and the app's paths (main-logic/paths.ts)
// under Node: only the renderer's files, with the CSP; nothing outside the renderer directory.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { APP_INDEX_URL, contentType, createAppHandler, resolveAppPath } from '../src/main-logic/app-protocol';
import { appPaths } from '../src/main-logic/paths';
import { tmpdir } from './helpers';

const dir = tmpdir();
const root = path.join(dir, 'renderer');
fs.mkdirSync(path.join(root, 'assets'), { recursive: true });
fs.mkdirSync(path.join(root, 'samples'), { recursive: true });
fs.writeFileSync(path.join(root, 'index.html'), '<!doctype html><title>numascope</title>');
fs.writeFileSync(path.join(root, 'assets', 'index-abc.js'), 'export {}');
fs.writeFileSync(path.join(root, 'samples', 'index.json'), '{"samples":[]}');
fs.writeFileSync(path.join(dir, 'secret.txt'), 'secret');
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const CSP = "default-src 'self'";

describe('app:// protocol', () => {
  it('maps URLs to files under the renderer directory only', () => {
    expect(resolveAppPath(root, APP_INDEX_URL)).toBe(path.join(root, 'index.html'));
    expect(resolveAppPath(root, 'app://numascope/')).toBe(path.join(root, 'index.html'));
    expect(resolveAppPath(root, 'app://numascope/assets/index-abc.js?v=1#x')).toBe(path.join(root, 'assets', 'index-abc.js'));
    expect(resolveAppPath(root, 'app://numascope/samples/my%20trace.numascope')).toBe(path.join(root, 'samples', 'my trace.numascope'));
    for (const bad of [
      'app://numascope/../secret.txt',
      'app://numascope/%2e%2e/secret.txt',
      'app://numascope/assets/..%2F..%2Fsecret.txt',
      'app://numascope/%00',
      'app://numascope/%E0%A4%A',
      'app://other/index.html',
      'file:///etc/passwd',
      'https://numascope/index.html',
      'not a url',
    ]) {
      const r = resolveAppPath(root, bad);
      expect(r === null || r.startsWith(root + path.sep), bad).toBe(true);
      if (r) expect(fs.existsSync(r) ? fs.readFileSync(r, 'utf8') : '').not.toBe('secret');
    }
    expect(resolveAppPath(root, 'app://other/index.html')).toBeNull();
    expect(resolveAppPath(root, 'file:///etc/passwd')).toBeNull();
  });

  it('serves files with their type, the CSP and nosniff; 404 and 405 otherwise', async () => {
    const handle = createAppHandler(root, CSP);
    const index = await handle(new Request(APP_INDEX_URL));
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(index.headers.get('content-security-policy')).toBe(CSP);
    expect(index.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await index.text()).toContain('<title>numascope</title>');
    const js = await handle(new Request('app://numascope/assets/index-abc.js'));
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await (await handle(new Request('app://numascope/samples/index.json'))).json()).toEqual({ samples: [] });
    for (const url of ['app://numascope/nope.js', 'app://numascope/assets/', 'app://numascope/%2e%2e/secret.txt', 'app://evil/index.html']) {
      const r = await handle(new Request(url));
      expect(r.status, url).toBe(404);
      expect(await r.text()).not.toContain('secret');
      expect(r.headers.get('content-security-policy')).toBe(CSP);
    }
    expect((await handle(new Request(APP_INDEX_URL, { method: 'POST', body: 'x' }))).status).toBe(405);
    const head = await handle(new Request(APP_INDEX_URL, { method: 'HEAD' }));
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
    expect(contentType('t.numascope')).toBe('application/x-numascope');
    expect(contentType('x.unknown')).toBe('application/octet-stream');
  });
});

describe('appPaths', () => {
  it('development: the bundle in apps/desktop/dist/app, the repository collector and docs', () => {
    const here = '/repo/apps/desktop/dist/app';
    const exists = (f: string) => f === '/repo/native/collector' || f === '/repo/native/collector/target/debug/numascope';
    const p = appPaths({ here, isPackaged: false, env: {}, exists });
    expect(p).toEqual({
      rendererDir: '/repo/apps/desktop/dist/app/renderer',
      preload: '/repo/apps/desktop/dist/app/preload.cjs',
      bindingDir: null,
      cliBin: '/repo/native/collector/target/debug/numascope',
      allocShim: null,
      docsDir: '/repo/docs',
    });
    // The built shim, release before debug; NUMASCOPE_ALLOC_SHIM overrides.
    const withShim = (f: string) => exists(f) || f === '/repo/native/collector/target/debug/libnumascope_allocshim.so';
    expect(appPaths({ here, isPackaged: false, env: {}, exists: withShim }).allocShim).toBe('/repo/native/collector/target/debug/libnumascope_allocshim.so');
    expect(appPaths({ here, isPackaged: false, env: { NUMASCOPE_ALLOC_SHIM: '/s.so' }, exists: withShim }).allocShim).toBe('/s.so');
    expect(appPaths({ here, isPackaged: false, env: {}, exists: () => false }).cliBin).toBe('numascope');
    const env = { NUMASCOPE_WEB_DIR: '/w', NUMASCOPE_NODE_BINDING: '/b', NUMASCOPE_BIN: '/bin/n' };
    expect(appPaths({ here, isPackaged: false, env })).toMatchObject({ rendererDir: '/w', bindingDir: '/b', cliBin: '/bin/n' });
  });

  it('packaged: the app in app.asar, the collector and docs in resources (electron-builder.json extraResources)', () => {
    const p = appPaths({ here: '/opt/numascope/resources/app.asar', isPackaged: true, resourcesPath: '/opt/numascope/resources', env: {} });
    expect(p).toEqual({
      rendererDir: '/opt/numascope/resources/app.asar/renderer',
      preload: '/opt/numascope/resources/app.asar/preload.cjs',
      bindingDir: '/opt/numascope/resources/native',
      cliBin: '/opt/numascope/resources/native/numascope',
      allocShim: null,
      docsDir: '/opt/numascope/resources/docs',
    });
    // resources/native/libnumascope_allocshim.so (scripts/build.mjs stages it into dist/native).
    const packaged = appPaths({ here: '/opt/numascope/resources/app.asar', isPackaged: true, resourcesPath: '/opt/numascope/resources', env: {}, exists: (f) => f === '/opt/numascope/resources/native/libnumascope_allocshim.so' });
    expect(packaged.allocShim).toBe('/opt/numascope/resources/native/libnumascope_allocshim.so');
  });
});
