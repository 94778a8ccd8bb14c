#!/usr/bin/env node
// Builds the desktop app into apps/desktop/dist (no Electron needed to build; docs/desktop.md):
//
//   dist/app/            the Electron app (electron-builder.json directories.app; `electron dist/app` runs it)
//     main.js            src/main.ts bundled (ESM, 'electron' external)
//     preload.cjs        src/preload.ts bundled into one CommonJS file ('electron' external):
//                        a sandboxed preload can require nothing else
//     renderer/          the web UI (apps/web, Vite build with base './'), served as app://numascope/
//     package.json       name, version, main, author and homepage (what electron-builder reads)
//   dist/native/         the napi addon (index.js, numascope.node), the `numascope` CLI (rollback) and the
//                        allocation-site shim (libnumascope_allocshim.so, preloaded into launched commands)
//   dist/docs/           docs/ (the Help menu)
//   dist/icons/          the app icon, drawn here (512x512.png, 256x256.png)
//
// Flags: --skip-web (reuse apps/web/dist), --web-dist DIR (the renderer from DIR: tests), --no-web,
// --skip-native, --out DIR (instead of apps/desktop/dist). Prints the outputs as JSON on its last line.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import * as esbuild from 'esbuild';

const here = path.dirname(fileURLToPath(import.meta.url));
const desktop = path.resolve(here, '..');
const repo = path.resolve(desktop, '..', '..');
const args = process.argv.slice(2);
const flag = (f) => args.includes(f);
const value = (f) => {
  const i = args.indexOf(f);
  return i >= 0 && args[i + 1] ? path.resolve(args[i + 1]) : null;
};
const out = value('--out') ?? path.join(desktop, 'dist');
const appDir = path.join(out, 'app');
const log = (m) => process.stderr.write(`[desktop build] ${m}\n`);

/** The two bundles. Returns the esbuild metafiles (the tests check what each bundle imports). */
export async function bundle(outDir) {
  const common = { bundle: true, platform: 'node', external: ['electron'], metafile: true, logLevel: 'warning', legalComments: 'none', sourcemap: false };
  const main = await esbuild.build({
    ...common,
    entryPoints: [path.join(desktop, 'src', 'main.ts')],
    format: 'esm',
    target: 'node22',
    outfile: path.join(outDir, 'main.js'),
  });
  const preload = await esbuild.build({
    ...common,
    entryPoints: [path.join(desktop, 'src', 'preload.ts')],
    format: 'cjs',
    target: 'chrome120',
    outfile: path.join(outDir, 'preload.cjs'),
  });
  return { main: main.metafile, preload: preload.metafile };
}

// --- icon: a 4-node NUMA machine (nodes and links), drawn into a PNG without dependencies -------

function crc32(buf) {
  let c;
  const table = crc32.table ?? (crc32.table = Array.from({ length: 256 }, (_, n) => {
    c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  }));
  let crc = 0xffffffff;
  for (const b of buf) crc = table[(crc ^ b) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

function pngChunk(type, data) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}

export function iconPng(size) {
  const s = size / 512;
  const nodes = [
    [160, 160],
    [352, 160],
    [160, 352],
    [352, 352],
  ].map(([x, y]) => [x * s, y * s]);
  const links = [[0, 1], [0, 2], [1, 3], [2, 3], [0, 3]];
  const segDist = (px, py, [ax, ay], [bx, by]) => {
    const dx = bx - ax, dy = by - ay;
    const t = Math.max(0, Math.min(1, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy)));
    return Math.hypot(px - ax - t * dx, py - ay - t * dy);
  };
  const bg = [0x1f, 0x2a, 0x44], link = [0x7f, 0xa7, 0xd9], node = [0xf2, 0xa6, 0x3b];
  const raw = Buffer.alloc((size * 4 + 1) * size);
  const SS = 3; // supersampling per axis
  for (let y = 0; y < size; y++) {
    raw[y * (size * 4 + 1)] = 0;
    for (let x = 0; x < size; x++) {
      let r = 0, g = 0, b = 0, a = 0;
      for (let sy = 0; sy < SS; sy++)
        for (let sx = 0; sx < SS; sx++) {
          const px = x + (sx + 0.5) / SS, py = y + (sy + 0.5) / SS;
          // Rounded square background.
          const m = 24 * s, rad = 96 * s;
          const qx = Math.max(m + rad - px, 0, px - (size - m - rad)), qy = Math.max(m + rad - py, 0, py - (size - m - rad));
          if (Math.hypot(qx, qy) > rad) continue;
          let c = bg;
          if (links.some(([i, j]) => segDist(px, py, nodes[i], nodes[j]) < 14 * s)) c = link;
          if (nodes.some(([nx, ny]) => Math.hypot(px - nx, py - ny) < 54 * s)) c = node;
          r += c[0]; g += c[1]; b += c[2]; a += 255;
        }
      const n = SS * SS, o = y * (size * 4 + 1) + 1 + x * 4, cov = a / 255;
      raw[o] = cov ? Math.round(r / cov) : 0;
      raw[o + 1] = cov ? Math.round(g / cov) : 0;
      raw[o + 2] = cov ? Math.round(b / cov) : 0;
      raw[o + 3] = Math.round(a / n);
    }
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 6; // RGBA
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', zlib.deflateSync(raw, { level: 9 })),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

// --- the app's package.json ------------------------------------------------------------------------

function homepage() {
  if (process.env.NUMASCOPE_HOMEPAGE) return process.env.NUMASCOPE_HOMEPAGE;
  const root = JSON.parse(fs.readFileSync(path.join(repo, 'package.json'), 'utf8'));
  if (root.homepage) return root.homepage;
  try {
    const origin = execFileSync('git', ['-C', repo, 'remote', 'get-url', 'origin'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const m = /^(?:git@([^:]+):|https?:\/\/([^/]+)\/)(.+?)(?:\.git)?$/.exec(origin);
    if (m) return `https://${m[1] ?? m[2]}/${m[3]}`;
  } catch {
    // No git remote: fall through.
  }
  // electron-builder needs a homepage for the deb; without a known one, the installed user guide.
  return 'file:///opt/numascope/resources/docs/user-guide.md';
}

export function appPackageJson() {
  const pkg = JSON.parse(fs.readFileSync(path.join(desktop, 'package.json'), 'utf8'));
  return {
    name: 'numascope-desktop',
    productName: 'numascope',
    version: pkg.version,
    description: 'Interactive NUMA memory-placement profiler: record, replay placement policies, apply',
    main: 'main.js',
    type: 'module',
    license: 'MIT',
    author: { name: 'numascope', email: process.env.NUMASCOPE_MAINTAINER_EMAIL ?? 'numascope@localhost' },
    homepage: homepage(),
  };
}

function copyDir(from, to) {
  fs.rmSync(to, { recursive: true, force: true });
  fs.cpSync(from, to, { recursive: true });
}

async function main() {
  fs.mkdirSync(appDir, { recursive: true });
  log(`bundling main and preload into ${appDir}`);
  const meta = await bundle(appDir);
  fs.writeFileSync(path.join(appDir, 'package.json'), JSON.stringify(appPackageJson(), null, 2) + '\n');

  if (!flag('--no-web')) {
    const webDist = value('--web-dist') ?? path.join(repo, 'apps', 'web', 'dist');
    if (!flag('--skip-web') && !value('--web-dist')) {
      log('building the web UI (apps/web, vite build)');
      execFileSync('npm', ['run', 'build', '-w', 'apps/web'], { cwd: repo, stdio: ['ignore', 'inherit', 'inherit'] });
    }
    if (!fs.existsSync(path.join(webDist, 'index.html'))) throw new Error(`${webDist}/index.html is missing: build the web UI (npm run build:web)`);
    copyDir(webDist, path.join(appDir, 'renderer'));
  }

  const icons = path.join(out, 'icons');
  fs.mkdirSync(icons, { recursive: true });
  for (const size of [256, 512]) fs.writeFileSync(path.join(icons, `${size}x${size}.png`), iconPng(size));

  copyDir(path.join(repo, 'docs'), path.join(out, 'docs'));

  if (!flag('--skip-native')) {
    const binding = path.join(repo, 'native', 'collector', 'crates', 'node');
    const target = path.join(repo, 'native', 'collector', 'target');
    const cli = ['release', 'debug'].map((p) => path.join(target, p, 'numascope')).find((p) => fs.existsSync(p));
    // The shim beside the addon (build_collector app puts it there), else the cargo build's.
    const shim = [path.join(binding, 'libnumascope_allocshim.so'), ...['release', 'debug'].map((p) => path.join(target, p, 'libnumascope_allocshim.so'))].find((p) => fs.existsSync(p));
    const addon = path.join(binding, 'numascope.node');
    if (!fs.existsSync(addon) || !cli || !shim)
      throw new Error(
        `the collector is not built (${[!fs.existsSync(addon) && 'numascope.node', !cli && 'numascope', !shim && 'libnumascope_allocshim.so'].filter(Boolean).join(', ')} missing): ` +
          'run `source scripts/lib.sh && build_collector release` and ' +
          '`npm run build --prefix native/collector/crates/node` first (or pass --skip-native)',
      );
    const native = path.join(out, 'native');
    fs.rmSync(native, { recursive: true, force: true });
    fs.mkdirSync(native, { recursive: true });
    fs.copyFileSync(path.join(binding, 'index.js'), path.join(native, 'index.js'));
    // index.js is CommonJS; the app's package.json says "type": "module" only inside app.asar.
    fs.writeFileSync(path.join(native, 'package.json'), JSON.stringify({ name: 'numascope-collector-node', private: true, type: 'commonjs', main: 'index.js' }, null, 2) + '\n');
    fs.copyFileSync(addon, path.join(native, 'numascope.node'));
    fs.copyFileSync(cli, path.join(native, 'numascope'));
    fs.chmodSync(path.join(native, 'numascope'), 0o755);
    // Recordings of launched commands preload it (paths.ts allocShim → NUMASCOPE_ALLOC_SHIM).
    fs.copyFileSync(shim, path.join(native, 'libnumascope_allocshim.so'));
    log(`collector: ${addon}, ${cli}, ${shim}`);
  }

  const outputs = {
    app: appDir,
    main: path.join(appDir, 'main.js'),
    preload: path.join(appDir, 'preload.cjs'),
    imports: {
      main: Object.values(meta.main.outputs).flatMap((o) => o.imports.filter((i) => i.external).map((i) => i.path)),
      preload: Object.values(meta.preload.outputs).flatMap((o) => o.imports.filter((i) => i.external).map((i) => i.path)),
    },
  };
  process.stdout.write(JSON.stringify(outputs) + '\n');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((e) => {
    log(`failed: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  });
}
