/**
 * The home page with a `numascope serve` token (issue 35), against a real `numascope serve` (the
 * debug collector binary): the bundled samples (every `*.numascope` in sample-traces/, found when
 * the tests run), the server's recordings and Live side by side at 1280×800, stacked when narrow;
 * a sample opens and keeps the token, and Live is one click away. `?view=live` opens on Live.
 */
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import { sampleTraceFiles } from '../fixtures/expectations.js';
import { idleState, screenshot } from '../fixtures/app.js';
import { TESTLOAD, startServe, type Serve } from '../fixtures/serve.js';

test.describe.configure({ mode: 'serial' });
test.use({ viewport: { width: 1280, height: 800 } });

const files = sampleTraceFiles();
let serve: Serve | null = null;
/** A recording made through the API before the tests, so the server has one to list. */
let recordingId = '';

async function api(path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${serve!.base}${path}`, { ...init, headers: { Authorization: `Bearer ${serve!.token}`, 'Content-Type': 'application/json' } });
}

test.beforeAll(async () => {
  serve = await startServe();
  const r = await api('/api/recordings', { method: 'POST', body: JSON.stringify({ command: [TESTLOAD, '--threads', '1', '--mib', '2', '--seconds', '0.2'] }) });
  expect(r.status).toBe(201);
  recordingId = ((await r.json()) as { id: string }).id;
  await expect
    .poll(async () => ((await (await api(`/api/recordings/${recordingId}`)).json()) as { status: string }).status, { timeout: 20_000 })
    .toBe('finished');
});

test.afterAll(async () => {
  await serve?.stop();
  serve = null;
});

function boxOf(page: Page, testId: string) {
  return page.getByTestId(testId).boundingBox().then((b) => b!);
}

test('with the token, home lists every sample, the recordings and Live side by side; Live is one click away', async ({ page }) => {
  const token = serve!.token;
  await page.goto(`${serve!.base}/?token=${token}`);
  expect(await idleState(page)).toBe('empty');
  await expect(page.getByTestId('home')).toBeVisible();
  await expect(page.getByTestId('live')).toHaveCount(0);

  // Every sample, each link keeping the token (so Live stays reachable from the trace).
  expect(files.length).toBeGreaterThan(0);
  for (const file of files) {
    await expect(page.getByTestId(`sample-${file}`).getByRole('link', { name: file })).toHaveAttribute('href', `?token=${token}&trace=samples/${file}`);
  }
  // The server's recordings: the one made above, finished, with its link.
  const item = page.locator(`[data-testid="live-recent-item"][data-id="${recordingId}"]`);
  await expect(item).toHaveAttribute('data-status', 'finished');
  await expect(item.getByTestId('live-recent-open')).toHaveAttribute('href', `?token=${token}&recording=${recordingId}`);

  // Side by side, inside the window: samples, then recordings, then Live, their tops level.
  const [samples, recent, live] = [await boxOf(page, 'sample-list'), await boxOf(page, 'live-recent'), await boxOf(page, 'home-live')];
  expect(samples.x + samples.width).toBeLessThanOrEqual(recent.x);
  expect(recent.x + recent.width).toBeLessThanOrEqual(live.x);
  expect(live.x + live.width).toBeLessThanOrEqual(1280);
  expect(Math.abs(recent.y - live.y)).toBeLessThan(40);
  expect(live.y).toBeLessThan(400);
  const { scroll, client } = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth }));
  expect(scroll).toBeLessThanOrEqual(client);
  await screenshot(page, 'home-token');

  // Live in one click; the page's token reaches the server (its capabilities are listed).
  await page.getByTestId('home-open-live').click();
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('live-capabilities')).toContainText('Page placement');
});

test('a sample opened from home keeps the token: its views, then Live from the header', async ({ page }) => {
  const file = files[0]!;
  await page.goto(`${serve!.base}/?token=${serve!.token}`);
  expect(await idleState(page)).toBe('empty');
  await page.getByTestId(`sample-${file}`).getByRole('link', { name: file }).click();
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('trace-source')).toHaveText(`samples/${file}`);
  expect(new URL(page.url()).searchParams.get('token')).toBe(serve!.token);
  await page.getByTestId('open-live').click();
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('live-capabilities')).toContainText('Page placement');
});

test('?view=live opens on Live; home stacks its columns on a narrow window', async ({ page }) => {
  await page.goto(`${serve!.base}/?token=${serve!.token}&view=live`);
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('live-capabilities')).toBeVisible();
  await expect(page.getByTestId('home')).toHaveCount(0);

  await page.setViewportSize({ width: 700, height: 800 });
  await page.goto(`${serve!.base}/?token=${serve!.token}`);
  expect(await idleState(page)).toBe('empty');
  const [samples, recent, live] = [await boxOf(page, 'sample-list'), await boxOf(page, 'live-recent'), await boxOf(page, 'home-live')];
  expect(recent.y).toBeGreaterThanOrEqual(samples.y + samples.height);
  expect(live.y).toBeGreaterThanOrEqual(recent.y + recent.height);
  const { scroll, client } = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth }));
  expect(scroll).toBeLessThanOrEqual(client);
});
