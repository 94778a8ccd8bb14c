// Packaging without Electron: scripts/build.mjs produces main.js and a self-contained preload.cjs
// (loaded here in a sandbox that offers nothing but 'electron', as Electron's sandboxed preloads
// do), main.js evaluates against a stub 'electron', and electron-builder.json (Linux AppImage and
// deb, the .numascope file association, the collector as an extra resource) points at what the
// build produces. Electron and electron-builder stay out of the project's dependencies.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANNELS, COMMAND_CHANNEL } from '../src/channels';
import { HELP_DOCS } from '../src/main-logic/menu';
import { appPaths } from '../src/main-logic/paths';
import { repoRoot, tmpdir } from './helpers';

const desktop = path.join(repoRoot, 'apps', 'desktop');
const config = JSON.parse(fs.readFileSync(path.join(desktop, 'electron-builder.json'), 'utf8'));
const pkg = JSON.parse(fs.readFileSync(path.join(desktop, 'package.json'), 'utf8'));
const dir = tmpdir();
const out = path.join(dir, 'dist');
let outputs: { app: string; main: string; preload: string; imports: { main: string[]; preload: string[] } };

/** A config path (relative to apps/desktop, under dist/) mapped into this test's build output. */
const built = (p: string) => {
  expect(p.startsWith('dist/'), p).toBe(true);
  return path.join(out, p.slice('dist/'.length));
};

beforeAll(() => {
  // A stand-in for the Vite build: the renderer copy is the same whatever the web app contains.
  const web = path.join(dir, 'web-dist');
  fs.mkdirSync(path.join(web, 'assets'), { recursive: true });
  fs.writeFileSync(path.join(web, 'index.html'), '<!doctype html><script type="module" src="./assets/index.js"></script>');
  fs.writeFileSync(path.join(web, 'assets', 'index.js'), 'export {}');
  const stdout = execFileSync(process.execPath, [path.join(desktop, 'scripts', 'build.mjs'), '--out', out, '--web-dist', web], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  outputs = JSON.parse(stdout.trim().split('\n').pop()!);
}, 60_000);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('build script', () => {
  it('writes main.js and preload.cjs into the app directory', () => {
    expect(outputs.app).toBe(path.join(out, 'app'));
    for (const f of [outputs.main, outputs.preload]) expect(fs.statSync(f).size).toBeGreaterThan(1000);
    expect(fs.existsSync(path.join(out, 'app', 'renderer', 'index.html'))).toBe(true);
  });

  it('bundles everything but electron (and Node built-ins in main)', () => {
    expect(new Set(outputs.imports.preload)).toEqual(new Set(['electron']));
    for (const i of outputs.imports.main) expect(i === 'electron' || i.startsWith('node:'), i).toBe(true);
    expect(outputs.imports.main).toContain('electron');
  });

  it('the preload bundle runs in a sandbox that offers only electron, and exposes the whole API', async () => {
    const exposed = new Map<string, Record<string, unknown>>();
    const listeners = new Map<string, (e: unknown, ...a: unknown[]) => void>();
    const invoked: unknown[][] = [];
    const electron = {
      contextBridge: { exposeInMainWorld: (k: string, v: Record<string, unknown>) => exposed.set(k, v) },
      ipcRenderer: {
        invoke: async (...a: unknown[]) => invoked.push(a),
        on: (c: string, l: (e: unknown, ...a: unknown[]) => void) => listeners.set(c, l),
        removeListener: () => {},
      },
    };
    const required: string[] = [];
    const module = { exports: {} };
    const sandbox = {
      module,
      exports: module.exports,
      require: (id: string) => {
        required.push(id);
        if (id === 'electron') return electron;
        throw new Error(`a sandboxed preload cannot require ${id}`);
      },
    };
    vm.runInNewContext(fs.readFileSync(outputs.preload, 'utf8'), sandbox, { filename: 'preload.cjs' });
    expect(required).toEqual(['electron']);
    const api = exposed.get('numascopeDesktop')!;
    expect(Object.keys(api).sort()).toEqual([...Object.keys(CHANNELS), 'isDesktop', 'onLiveWindow', 'onCommand'].sort());
    await (api.openRecent as (p: string) => Promise<unknown>)('/t/a.numascope');
    expect(invoked).toEqual([[CHANNELS.openRecent, '/t/a.numascope']]);
    listeners.get(COMMAND_CHANNEL)!({}, { command: 'open' });
    const got: unknown[] = [];
    (api.onCommand as (cb: (c: unknown) => void) => void)((c) => got.push(c));
    expect(got).toEqual([{ command: 'open' }]);
  });

  it('main.js evaluates against a stub electron (the bundle is complete) and exports the shell', () => {
    const stubDir = path.join(dir, 'stub');
    const electronDir = path.join(stubDir, 'node_modules', 'electron');
    fs.mkdirSync(electronDir, { recursive: true });
    fs.writeFileSync(path.join(stubDir, 'package.json'), '{"type":"module"}');
    fs.writeFileSync(path.join(electronDir, 'package.json'), '{"name":"electron","type":"module","main":"index.js"}');
    fs.writeFileSync(
      path.join(electronDir, 'index.js'),
      ['app', 'BrowserWindow', 'dialog', 'ipcMain', 'Menu', 'protocol', 'session', 'shell'].map((n) => `export const ${n} = {};`).join('\n'),
    );
    fs.copyFileSync(outputs.main, path.join(stubDir, 'main.js'));
    const printed = execFileSync(
      process.execPath,
      ['--input-type=module', '-e', `const m = await import(${JSON.stringify(path.join(stubDir, 'main.js'))}); console.log(JSON.stringify(Object.keys(m).sort()))`],
      { encoding: 'utf8', env: { ...process.env, NUMASCOPE_DESKTOP_NO_AUTOSTART: '1' } },
    );
    expect(JSON.parse(printed)).toEqual(['WEB_PREFERENCES', 'createWindow', 'isExternalUrl', 'main', 'setMenu', 'setupSession', 'wireIpc']);
  });

  it("writes the app's package.json with what electron-builder needs for a deb, and no dependencies", () => {
    const app = JSON.parse(fs.readFileSync(path.join(outputs.app, 'package.json'), 'utf8'));
    expect(app).toMatchObject({ name: 'numascope-desktop', productName: 'numascope', version: pkg.version, main: 'main.js', type: 'module' });
    expect(app.author.email).toMatch(/@/);
    expect(app.homepage).toMatch(/^(https?|file):\/\//);
    expect(app.dependencies).toBeUndefined();
  });

  it('stages the collector, the docs the Help menu opens, and the icons', () => {
    const native = path.join(out, 'native');
    for (const f of ['index.js', 'numascope.node', 'numascope', 'libnumascope_allocshim.so']) expect(fs.existsSync(path.join(native, f)), f).toBe(true);
    // The shim is a shared object (ELF), and the packaged app finds it where the build staged it.
    expect(fs.readFileSync(path.join(native, 'libnumascope_allocshim.so')).subarray(0, 4)).toEqual(Buffer.from([0x7f, 0x45, 0x4c, 0x46]));
    expect(fs.statSync(path.join(native, 'numascope')).mode & 0o111).not.toBe(0);
    for (const d of HELP_DOCS) expect(fs.existsSync(path.join(out, 'docs', d.file)), d.file).toBe(true);
    for (const size of [256, 512]) {
      const png = fs.readFileSync(path.join(out, 'icons', `${size}x${size}.png`));
      expect(png.subarray(1, 4).toString()).toBe('PNG');
      expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([size, size]);
    }
  });
});

describe('electron-builder.json', () => {
  it('builds a Linux AppImage and a deb, with the pinned Electron', () => {
    expect(config.linux.target).toEqual(['AppImage', 'deb']);
    expect(config.electronVersion).toBe(pkg.numascopeDesktopTools.electron);
    expect(config.appId).toMatch(/^[a-z0-9.-]+$/);
    expect(config.productName).toBe('numascope');
    expect(config.linux.executableName).toBe('numascope-desktop');
    expect(config.linux.maintainer).toMatch(/<.+@.+>/);
  });

  it('associates .numascope files with a MIME type', () => {
    expect(config.fileAssociations).toEqual([expect.objectContaining({ ext: 'numascope', mimeType: 'application/x-numascope' })]);
  });

  it('points at what the build produces: the app directory, its files, the native extra resource, docs, icons', () => {
    const appDir = built(config.directories.app);
    expect(appDir).toBe(outputs.app);
    const entries = fs.readdirSync(appDir);
    for (const pattern of config.files as string[]) {
      if (pattern.startsWith('!')) continue;
      const first = pattern.split('/')[0]!;
      expect(entries, pattern).toContain(first);
    }
    expect(config.files).toContain('!node_modules{,/**/*}');
    const app = JSON.parse(fs.readFileSync(path.join(appDir, 'package.json'), 'utf8'));
    expect(entries).toContain(app.main);
    const extra = Object.fromEntries((config.extraResources as { from: string; to: string }[]).map((r) => [r.to, built(r.from)]));
    // src/main-logic/paths.ts looks for the collector in resources/native and the docs in resources/docs.
    expect(Object.keys(extra).sort()).toEqual(['docs', 'native']);
    expect(fs.existsSync(path.join(extra.native!, 'numascope.node'))).toBe(true);
    // resources/native holds the shim in the package: appPaths (packaged) names it there.
    const resources = path.join(dir, 'resources');
    fs.mkdirSync(resources, { recursive: true });
    fs.cpSync(extra.native!, path.join(resources, 'native'), { recursive: true });
    expect(appPaths({ here: path.join(resources, 'app.asar'), isPackaged: true, resourcesPath: resources, env: {} }).allocShim).toBe(path.join(resources, 'native', 'libnumascope_allocshim.so'));
    expect(fs.existsSync(path.join(extra.docs!, 'user-guide.md'))).toBe(true);
    expect(fs.readdirSync(built(config.linux.icon))).toContain('512x512.png');
    // The napi addon is Node-API (ABI-stable): nothing to rebuild for Electron.
    expect(config.npmRebuild).toBe(false);
    expect(config.directories.output.startsWith('dist/')).toBe(true);
  });

  it('electron and electron-builder are not dependencies that npm ci installs', () => {
    const lock = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
    for (const name of ['electron', 'electron-builder']) {
      expect(Object.keys(lock.packages).some((k) => k === `node_modules/${name}` || k.endsWith(`/node_modules/${name}`)), name).toBe(false);
      for (const p of ['package.json', 'apps/desktop/package.json', 'apps/web/package.json', 'e2e/package.json']) {
        const j = JSON.parse(fs.readFileSync(path.join(repoRoot, p), 'utf8'));
        expect({ ...j.dependencies, ...j.devDependencies, ...j.optionalDependencies }[name], `${p}: ${name}`).toBeUndefined();
      }
    }
    expect(pkg.numascopeDesktopTools['electron-builder']).toMatch(/^\d+\.\d+\.\d+$/);
    expect(pkg.numascopeDesktopTools.electron).toMatch(/^\d+\.\d+\.\d+$/);
  });
});
