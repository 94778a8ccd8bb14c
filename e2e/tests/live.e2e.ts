/**
 * Live mode against a real `numascope serve` (the debug collector binary): connect with the
 * printed URL, record a real child process through the UI, watch the per-window numbers grow,
 * stop, and check that the trace that opens matches the trace file the API serves.
 * Also: no token (how to connect) and a wrong token (the 401 message).
 */
import { expect, test } from '@playwright/test';
import { tableFromIPC } from 'apache-arrow';
import { unzipSync } from 'fflate';
import { expectationsFor } from '../fixtures/expectations.js';
import { finishedLoad, idleState, screenshot, valueOf } from '../fixtures/app.js';
import { TESTLOAD, startServe, type Serve } from '../fixtures/serve.js';

test.describe.configure({ mode: 'serial' });

let serve: Serve | null = null;
let server: Serve['child'] | null = null;
let base = '';
let token = '';

test.beforeAll(async () => {
  serve = await startServe();
  server = serve.child;
  base = serve.base;
  token = serve.token;
});

test.afterAll(async () => {
  await serve?.stop();
  serve = null;
  server = null;
});

test('without a token, Live explains how to start numascope serve', async ({ page }) => {
  await page.goto(`${base}/`);
  expect(await idleState(page)).toBe('empty');
  await page.getByTestId('open-live').click();
  const box = page.getByTestId('live-not-connected');
  await expect(box).toContainText('Not connected');
  await expect(box).toContainText('numascope serve');
  expect(await idleState(page)).toBe('empty');
});

test('a wrong token shows the 401 message', async ({ page }) => {
  await page.goto(`${base}/?token=${'0'.repeat(64)}&view=live`);
  expect(await idleState(page)).toBe('error');
  const alert = page.getByTestId('live-unauthorized');
  await expect(alert).toContainText('HTTP 401');
  await expect(alert).toContainText(/restart numascope serve and use its new URL/i);
  await screenshot(page, 'live-unauthorized');
});

test('record a command live, stop, and open the trace in the views', async ({ page }) => {
  test.setTimeout(30_000);
  await page.goto(`${base}/?token=${token}&view=live`);
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('live-capabilities')).toContainText('Page placement');

  // Keyboard-accessible process list: it lists processes, and the filter narrows it.
  await page.getByTestId('live-mode-pid').check();
  await page.getByTestId('live-filter').fill(String(server!.pid));
  await expect(page.getByTestId('live-process').locator('option')).toHaveCount(1);
  await page.getByTestId('live-mode-command').check();

  await page.getByTestId('live-command').fill(`${TESTLOAD} --threads 2 --mib 8 --seconds 10`);
  await page.getByTestId('live-start').click();
  await expect(page.getByTestId('live-status')).toContainText('Recording…');

  // Numbers grow while it runs (waits on the window counter the app publishes; never sleeps).
  // The counter and the elapsed time are read together, and the later read waits for a window
  // after the first read's (on a loaded machine several windows can arrive before the first read).
  const snapshot = () =>
    page.evaluate(() => ({
      seq: Number(document.body.dataset.liveSeq),
      elapsed: Number(document.querySelector('[data-testid="live-elapsed"]')?.getAttribute('data-value')),
    }));
  await page.waitForFunction(() => Number(document.body.dataset.liveSeq) >= 1);
  await expect(page.getByTestId('live-elapsed')).toBeVisible();
  const first = await snapshot();
  await page.waitForFunction((seq) => Number(document.body.dataset.liveSeq) >= seq + 2, first.seq);
  const later = await snapshot();
  expect(later.seq).toBeGreaterThan(first.seq);
  expect(later.elapsed).toBeGreaterThan(first.elapsed);
  expect(await valueOf(page.getByTestId('live-faults'))).toBeGreaterThan(0);
  expect(await valueOf(page.getByTestId('live-pages'))).toBeGreaterThan(0);
  await expect(page.getByTestId('live-threads').locator('tbody tr')).not.toHaveCount(0);
  await expect(page.getByTestId('live-honesty')).toContainText('Measured: page faults');
  // What can show accesses here, said once: on a one-node machine, why nothing does.
  const topo = (await (await fetch(`${base}/api/topology`, { headers: { Authorization: `Bearer ${token}` } })).json()) as { nodes: unknown[] };
  await expect(page.getByTestId('live-accesses-note')).toHaveCount(1);
  // Bandwidth per node: a column where the recording reads uncore counters, else a line saying why
  // not (this machine has no uncore PMU).
  const bandwidthNote = page.getByTestId('live-bandwidth-note');
  await expect(bandwidthNote).toHaveCount(1);
  if ((await bandwidthNote.getAttribute('data-shown')) === 'false') {
    await expect(bandwidthNote).toContainText('No bandwidth per node live');
    await expect(page.locator('[data-testid^="live-node-"][data-testid$="-bandwidth"]')).toHaveCount(0);
  } else {
    await expect(page.locator('[data-testid^="live-node-"][data-testid$="-bandwidth"]')).not.toHaveCount(0);
  }
  if (topo.nodes.length === 1) {
    await expect(page.getByTestId('live-accesses-note')).toHaveAttribute('data-shown', 'false');
    await expect(page.getByTestId('live-accesses-note')).toContainText('this machine has one NUMA node');
    await expect(page.getByTestId('live-numa-balancing')).toHaveCount(0);
    // One node: no page can be on another node than first seen.
    expect(await valueOf(page.getByTestId('live-pages-moved'))).toBe(0);
  }
  // Per node: pages and their change, and the threads running there (every live thread on some node).
  const threadsOnNodes = await page.locator('[data-testid^="live-node-"][data-testid$="-threads"]').evaluateAll((els) => els.reduce((a, e) => a + Number(e.getAttribute('data-value')), 0));
  expect(threadsOnNodes).toBeGreaterThan(0);
  await screenshot(page, 'live-running');
  const liveTids = (await page.getByTestId('live-threads').locator('tbody th').allTextContents()).map(Number);

  const id = (await page.getByTestId('live-recording').getAttribute('data-recording'))!;
  await page.getByTestId('live-stop').click();

  // The trace downloads and opens in the normal views.
  expect(await finishedLoad(page, 2)).toBe('ready');
  await expect(page.getByTestId('trace-source')).toHaveText(`numascope-${id}.numascope`);

  // The same file, from the API, read here with fflate + apache-arrow.
  const r = await fetch(`${base}/api/recordings/${id}/trace`, { headers: { Authorization: `Bearer ${token}` } });
  expect(r.status).toBe(200);
  const bytes = new Uint8Array(await r.arrayBuffer());
  const e = expectationsFor(bytes);
  for (const node of e.nodeIds) {
    expect(await valueOf(page.getByTestId(`node-${node}-pages`))).toBe(e.pagesPerNode.get(node) ?? 0);
  }
  expect(await valueOf(page.getByTestId('total-threads'))).toBe(e.threads);
  expect(await valueOf(page.getByTestId('total-samples'))).toBe(e.samples);
  await screenshot(page, 'live-trace-opened');

  // Back on Live: the final window agrees with the trace (the process was alive at the stop).
  await page.getByTestId('open-live').click();
  await expect(page.getByTestId('live-status')).toContainText('Stopped on request.');
  await expect(page.getByTestId('live-apply-note')).toContainText('Apply a plan');
  // docs/live-api.md: totals.pages = rows of pages; per node equal, except pages move_pages never
  // answered: live counts them under -1, the trace may give them their region's numa_maps node
  // (a launched command is terminated at the stop, so the final re-query can miss pages).
  expect(await valueOf(page.getByTestId('live-pages'))).toBe(e.pages);
  let movedFromUnknown = 0;
  for (const node of e.nodeIds) {
    const live = await valueOf(page.getByTestId(`live-node-${node}-pages`));
    const inTrace = e.pagesPerNode.get(node) ?? 0;
    expect(live).toBeLessThanOrEqual(inTrace);
    movedFromUnknown += inTrace - live;
  }
  const liveUnknown = (await page.getByTestId('live-node-unknown-pages').count()) ? await valueOf(page.getByTestId('live-node-unknown-pages')) : 0;
  expect(liveUnknown - (e.pagesPerNode.get(-1) ?? 0)).toBe(movedFromUnknown);
  const traceTids = new Set(
    Array.from(tableFromIPC(unzipSync(bytes)['threads.arrow']!).getChild('tid')!.toArray() as ArrayLike<number>, Number),
  );
  expect(liveTids.length).toBeGreaterThan(0);
  for (const tid of liveTids) expect(traceTids.has(tid)).toBe(true);
  await screenshot(page, 'live-ended');
});

test('a live recording opens under its own URL: a reload shows the same recording, and Live lists it', async ({ page }) => {
  test.setTimeout(30_000);
  await page.goto(`${base}/?token=${token}&view=live`);
  expect(await idleState(page)).toBe('ready');
  await page.getByTestId('live-command').fill(`${TESTLOAD} --threads 2 --mib 4 --seconds 1`);
  await page.getByTestId('live-start').click();
  await expect(page.getByTestId('live-status')).toContainText('Recording…');
  const id = (await page.getByTestId('live-recording').getAttribute('data-recording'))!;
  // The command exits by itself; its trace opens in the views, with the recording in the address bar.
  expect(await finishedLoad(page, 2)).toBe('ready');
  await expect(page.getByTestId('trace-source')).toHaveText(`numascope-${id}.numascope`);
  const url = new URL(page.url());
  expect(url.searchParams.get('recording')).toBe(id);
  expect(url.searchParams.get('token')).toBe(token);
  const samples = await valueOf(page.getByTestId('total-samples'));
  expect(samples).toBeGreaterThan(0);

  await page.reload();
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('trace-source')).toHaveText(`numascope-${id}.numascope`);
  expect(await valueOf(page.getByTestId('total-samples'))).toBe(samples);

  // The Live screen lists it (newest first), and its link reopens it.
  await page.getByTestId('open-live').click();
  const item = page.locator(`[data-testid="live-recent-item"][data-id="${id}"]`);
  await expect(item).toHaveAttribute('data-status', 'finished');
  await expect(page.getByTestId('live-recent-item').first()).toHaveAttribute('data-id', id);
  await item.getByTestId('live-recent-open').click();
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('trace-source')).toHaveText(`numascope-${id}.numascope`);
  expect(await valueOf(page.getByTestId('total-samples'))).toBe(samples);
});

test('the record form\'s allocation-sites switch: on by default (the trace has allocations), off sends allocSites false (none, and the capability says why)', async ({ page }) => {
  test.setTimeout(60_000);
  const recordOnce = async (sites: boolean) => {
    await page.goto(`${base}/?token=${token}&view=live`);
    expect(await idleState(page)).toBe('ready');
    await page.getByTestId('live-command').fill(`${TESTLOAD} --threads 2 --mib 4 --seconds 0.5`);
    await expect(page.getByTestId('live-alloc-sites')).toBeChecked();
    if (!sites) await page.getByTestId('live-alloc-sites').uncheck();
    await page.getByTestId('live-start').click();
    await expect(page.getByTestId('live-status')).toContainText('Recording…');
    const id = (await page.getByTestId('live-recording').getAttribute('data-recording'))!;
    expect(await finishedLoad(page, 2)).toBe('ready');
    const r = await fetch(`${base}/api/recordings/${id}/trace`, { headers: { Authorization: `Bearer ${token}` } });
    expect(r.status).toBe(200);
    const files = unzipSync(new Uint8Array(await r.arrayBuffer()));
    const manifest = JSON.parse(new TextDecoder().decode(files['manifest.json']!)) as { capture: { capabilities: Array<{ metric: string; status: string; reason: string }> } };
    const rows = files['allocations.arrow'] ? tableFromIPC(files['allocations.arrow']).numRows : 0;
    return { rows, capability: manifest.capture.capabilities.find((c) => c.metric === 'allocation-sites')! };
  };
  const on = await recordOnce(true);
  expect(on.capability.status, on.capability.reason).toBe('measured');
  expect(on.rows).toBeGreaterThan(0);
  const off = await recordOnce(false);
  expect(off.rows).toBe(0);
  expect(off.capability.status).toBe('unavailable');
  expect(off.capability.reason).toMatch(/switched off .*allocSites false/);
});

test('the attach list hides kernel threads unless asked, and searches by name', async ({ page }) => {
  await page.goto(`${base}/?token=${token}&view=live`);
  expect(await idleState(page)).toBe('ready');
  await page.getByTestId('live-mode-pid').check();
  const options = page.getByTestId('live-process').locator('option');
  // kthreadd (pid 2) is a kernel thread on every Linux machine.
  await expect(options.filter({ hasText: /^2 kthreadd/ })).toHaveCount(0);
  await page.getByTestId('live-show-kernel').check();
  await expect(options.filter({ hasText: /^2 kthreadd/ })).toHaveCount(1);
  await page.getByTestId('live-show-kernel').uncheck();
  // By name: the server itself is "numascope".
  await page.getByTestId('live-filter').fill('NUMASCOPE');
  await expect(options.filter({ hasText: new RegExp(`^${server!.pid} numascope`) })).toHaveCount(1);
});
