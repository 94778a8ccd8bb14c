/**
 * Benchmark (not part of the test suite): time to first view and JS heap for a large trace.
 *
 *   cd sample-traces && npx tsx generator/cli.ts --model two-groups --seed 3 --samples 10000000 -o /tmp/bigtrace/big.numascope
 *   npm run build -w apps/web
 *   cd e2e && npx tsx bench/open-10m.ts /tmp/bigtrace/big.numascope [--view memory]
 *
 * Starts `vite preview` of the built app with NUMASCOPE_EXTRA_TRACES pointing at the trace's
 * folder, opens `?trace=samples/NAME` in Debian's Chromium and prints the time from navigation
 * to the app's idle signal (the first view drawn, its Worker queries answered), then the time
 * to switch to the memory and threads views, and the JS heap of the page and of the Worker.
 * Then it times the policy engine in the app (Worker): from clicking the Traffic tab to the
 * analysis on screen (all six policies over the whole trace, with the progress messages the page
 * showed meanwhile), then Compare (same analysis, cached), then the Traffic view on a brushed
 * range (the engine replays only those windows).
 */
import { execFileSync, spawn } from 'node:child_process';
import { statSync } from 'node:fs';
import path from 'node:path';
import { chromium } from '@playwright/test';
import { REPO_ROOT } from '../fixtures/expectations.js';

/** Sum of RSS of a process's descendants (Linux `ps`), leaving out `skip` and their trees (this script, the preview server). */
function chromiumRssBytes(root: number, skip: number[]): number {
  const rows = execFileSync('ps', ['-eo', 'pid=,ppid=,rss=']).toString().trim().split('\n').map((l) => l.trim().split(/\s+/).map(Number));
  const children = new Map<number, number[]>();
  for (const [pid, ppid] of rows) children.set(ppid!, [...(children.get(ppid!) ?? []), pid!]);
  const rss = new Map(rows.map(([pid, , kb]) => [pid!, kb! * 1024]));
  let total = 0;
  const stack = [root];
  while (stack.length) {
    const p = stack.pop()!;
    if (p !== root && skip.includes(p)) continue;
    if (!skip.includes(p)) total += rss.get(p) ?? 0;
    stack.push(...(children.get(p) ?? []));
  }
  return total;
}

const file = process.argv[2] ?? '/tmp/bigtrace/big.numascope';
const port = Number(process.env.NUMASCOPE_BENCH_PORT ?? 4189);
const size = statSync(file).size;

const server = spawn('npx', ['vite', 'preview', '--host', '127.0.0.1', '--port', String(port), '--strictPort'], {
  cwd: path.join(REPO_ROOT, 'apps/web'),
  env: { ...process.env, NUMASCOPE_EXTRA_TRACES: path.dirname(path.resolve(file)) },
  stdio: ['ignore', 'pipe', 'inherit'],
  detached: true, // its own process group, so the whole server (npx and vite) is stopped at the end
});
const stopServer = () => {
  try {
    process.kill(-server.pid!, 'SIGTERM');
  } catch {
    /* already gone */
  }
};
await new Promise<void>((resolve, reject) => {
  server.stdout!.on('data', (d: Buffer) => d.toString().includes(String(port)) && resolve());
  server.on('exit', (code) => reject(new Error(`vite preview exited (${code})`)));
});

const browser = await chromium.launch({
  executablePath: process.env.NUMASCOPE_CHROMIUM ?? '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--enable-precise-memory-info', '--js-flags=--expose-gc'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable');
  const idle = async () => {
    const t0 = performance.now();
    await page.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.state ?? ''), null, { timeout: 300_000, polling: 50 });
    return performance.now() - t0;
  };
  const t0 = performance.now();
  await page.goto(`http://127.0.0.1:${port}/?trace=samples/${encodeURIComponent(path.basename(file))}`);
  await idle();
  const firstView = performance.now() - t0;
  const state = await page.evaluate(() => document.body.dataset.state);
  const samples = await page.getByTestId('total-samples').getAttribute('data-value');
  const timings: Record<string, number> = {};
  for (const view of ['memory', 'threads', 'overview']) {
    const s = performance.now();
    await page.getByTestId(`tab-${view}`).click();
    await idle();
    timings[view] = performance.now() - s;
  }
  // Brush a range with the keyboard: ten windows from the start.
  const sBrush = performance.now();
  await page.getByTestId('timeline').locator('svg').focus();
  await page.keyboard.press('ArrowRight');
  for (let i = 0; i < 9; i++) await page.keyboard.press('Shift+ArrowRight');
  await idle();
  timings.brush10 = performance.now() - sBrush;
  // The engine in the app on the whole trace: Traffic (one analysis of every policy), then Compare (cached analysis).
  await page.getByTestId('range-clear').click();
  await idle();
  await page.evaluate(() => {
    const seen: Array<[number, number]> = [];
    (window as unknown as { __progressSeen: typeof seen }).__progressSeen = seen;
    new MutationObserver(() => {
      const el = document.querySelector('[data-testid="engine-progress"]');
      const done = Number(el?.getAttribute('data-done') || NaN);
      const total = Number(el?.getAttribute('data-total') || NaN);
      if (Number.isFinite(done) && (seen.length === 0 || seen[seen.length - 1]![0] !== done)) seen.push([done, total]);
    }).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-done'] });
  });
  const sEngine = performance.now();
  await page.getByTestId('tab-traffic').click();
  await idle();
  timings.traffic = performance.now() - sEngine;
  const engineState = await page.evaluate(() => (document.querySelector('[data-testid="traffic-view"]') ? 'traffic view shown' : (document.querySelector('[role="alert"]')?.textContent ?? 'no traffic view')));
  const progress = await page.evaluate(() => (window as unknown as { __progressSeen: Array<[number, number]> }).__progressSeen);
  const sCompare = performance.now();
  await page.getByTestId('tab-compare').click();
  await idle();
  timings.compare = performance.now() - sCompare;
  // The decisions of that analysis (cached).
  const sDecisions = performance.now();
  await page.getByTestId('tab-decisions').click();
  await idle();
  timings.decisions = performance.now() - sDecisions;
  const decisionCount = await page.getByTestId('decisions-count').getAttribute('data-total').catch(() => null);
  // A brushed range (ten timeline windows, brushed on the Overview): the engine replays only the windows that overlap it.
  await page.getByTestId('tab-overview').click();
  await idle();
  await page.getByTestId('timeline').locator('svg').focus();
  await page.keyboard.press('ArrowRight');
  for (let i = 0; i < 9; i++) await page.keyboard.press('Shift+ArrowRight');
  await idle();
  const sRange = performance.now();
  await page.getByTestId('tab-traffic').click();
  await idle();
  timings.trafficRange = performance.now() - sRange;
  const rangeNote = await page.getByTestId('engine-range').getAttribute('data-windows').catch(() => null);
  const metrics = (await cdp.send('Performance.getMetrics')).metrics;
  const heapPage = metrics.find((m) => m.name === 'JSHeapUsedSize')?.value ?? NaN;
  // The Worker's memory (its JS heap plus the Arrow buffers, which live outside the JS heap) is
  // in the renderer process: report the resident memory of every Chromium process.
  const rss = chromiumRssBytes(process.pid, [process.pid, server.pid ?? -1]);
  const mb = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;
  console.log(`trace: ${file} (${mb(size)}), ${samples} samples, state ${state}`);
  console.log(`time to first view (navigation -> idle signal): ${(firstView / 1000).toFixed(2)} s`);
  console.log(`switch to memory: ${(timings.memory! / 1000).toFixed(2)} s, threads: ${(timings.threads! / 1000).toFixed(2)} s, overview: ${(timings.overview! / 1000).toFixed(2)} s, brush 10 windows (10 range queries): ${(timings.brush10! / 1000).toFixed(2)} s`);
  console.log(
    `engine in the app: Traffic (all 6 policies, whole trace, click -> analysis on screen): ${(timings.traffic! / 1000).toFixed(2)} s (${engineState}); ` +
      `progress updates shown: ${progress.length}${progress.length > 0 ? ` (${progress.map(([d, t]) => `${d}/${t}`).slice(0, 3).join(', ')}${progress.length > 3 ? ', …' : ''}, last ${progress[progress.length - 1]!.join('/')})` : ''}`,
  );
  console.log(
    `Compare (cached analysis): ${(timings.compare! / 1000).toFixed(2)} s; Traffic on the brushed range (${rangeNote ?? '?'} engine windows): ${(timings.trafficRange! / 1000).toFixed(2)} s; ` +
      `Decisions list (${decisionCount ?? '?'} decisions, cached analysis): ${(timings.decisions! / 1000).toFixed(2)} s`,
  );
  console.log(`JS heap used by the page (main thread): ${mb(heapPage)}`);
  console.log(`resident memory of all Chromium processes (includes the Worker's trace bytes, Arrow tables and columns): ${Number.isFinite(rss) ? mb(rss) : 'unavailable'}`);
} finally {
  await browser.close();
  stopServer();
}
