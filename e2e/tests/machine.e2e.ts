/**
 * The Machine view against a real `numascope serve` on this machine: reached from the view tabs
 * (URL `view=machine`), "Measure this machine" runs `numascope bench --quick` with progress and
 * shows the measured matrices, curves and notes (this machine has one node: the one pair, and
 * why there is nothing more); Cancel stops a run with what was measured; a bad calibration file
 * gets a clear error, a good one is compared. The server stores calibrations in a directory of
 * this test's own (XDG_CACHE_HOME), never the user's cache.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect, test } from '@playwright/test';
import { idleState, screenshot } from '../fixtures/app.js';
import { startServe, type Serve } from '../fixtures/serve.js';

test.describe.configure({ mode: 'serial' });

const TRACE = 'recorded-testload-4threads.numascope';
let serve: Serve | null = null;
let cache = '';

test.beforeAll(async () => {
  cache = mkdtempSync(path.join(tmpdir(), 'numascope-e2e-cache-'));
  serve = await startServe({ env: { XDG_CACHE_HOME: cache } });
});

test.afterAll(async () => {
  await serve?.stop();
  serve = null;
  rmSync(cache, { recursive: true, force: true });
});

test('the Machine view is a view tab; Measure this machine runs bench --quick with progress', async ({ page }) => {
  test.setTimeout(180_000);
  await page.goto(`${serve!.base}/?trace=samples/${TRACE}&token=${serve!.token}`);
  expect(await idleState(page)).toBe('ready');
  await page.getByTestId('tab-machine').click();
  await expect(page).toHaveURL(/view=machine/);
  await expect(page.getByTestId('machine-choice')).toHaveAttribute('data-used', 'recorded');
  await expect(page.getByTestId('no-calibration')).toBeVisible();

  await page.getByTestId('measure-start').click();
  const progress = page.getByTestId('measure-progress');
  await expect(progress).toContainText(/step \d+ of \d+ · [\d.]+ s elapsed/);
  await expect(page.getByTestId('measure-cancel')).toBeEnabled();
  await expect(page.getByTestId('measure')).toHaveAttribute('data-status', 'finished', { timeout: 150_000 });
  await expect(page.getByTestId('measure-done')).toHaveAttribute('data-partial', 'false');
  await expect(page.getByTestId('measure-done')).toContainText("Stored as this machine's calibration");
  // Stored in this test's cache directory, under the machine's fingerprint.
  expect(readdirSync(path.join(cache, 'numascope', 'machines')).filter((f) => f.endsWith('.json'))).toHaveLength(1);

  const details = page.getByTestId('calibration-details');
  await expect(details).toHaveAttribute('data-origin', 'measured-now');
  const triad = Number(await page.getByTestId('cal-triad').locator('td').first().getAttribute('data-value'));
  const latency = Number(await page.getByTestId('cal-latency').locator('td').first().getAttribute('data-value'));
  expect(triad).toBeGreaterThan(0);
  expect(latency).toBeGreaterThan(0);
  // This machine has one node: one pair, and the reason there is nothing more.
  await expect(page.getByTestId('cal-triad').locator('tbody tr')).toHaveCount(1);
  await expect(page.getByTestId('calibration-notes')).toContainText('one NUMA node');
  await expect(page.getByTestId('calibration-notes')).toContainText('no remote pair');
  await expect(page.getByTestId('curve-0').locator('circle').first()).toBeVisible();
  await expect(page.getByTestId('curve-0')).toContainText('delivered bandwidth (GB/s)');
  // Calibrated vs preset vs estimated, side by side, each number with its provenance.
  const bw = page.getByTestId('side-by-side').locator('tr[data-row="bw-0"]');
  await expect(bw.locator('td[data-column="calibrated"]')).toHaveAttribute('data-kind', 'measured');
  await expect(bw.locator('td[data-column="calibrated"]')).toHaveAttribute('title', /^measured:numascope-bench /);
  await expect(bw.locator('td[data-column="estimated"]')).toHaveAttribute('data-kind', /estimated|unavailable/);
  await screenshot(page, 'machine-measured');
});

test('Cancel stops a run and keeps what was measured', async ({ page }) => {
  test.setTimeout(180_000);
  await page.goto(`${serve!.base}/?trace=samples/${TRACE}&view=machine&token=${serve!.token}`);
  expect(await idleState(page)).toBe('ready');
  await page.getByTestId('measure-start').click();
  await expect(page.getByTestId('measure-progress')).toHaveAttribute('data-step', /^[1-9]/);
  await page.getByTestId('measure-cancel').click();
  await expect(page.getByTestId('measure')).toHaveAttribute('data-status', 'finished', { timeout: 120_000 });
  await expect(page.getByTestId('measure-done')).toHaveAttribute('data-partial', 'true');
  await expect(page.getByTestId('measure-done')).toContainText(/Stopped: \d+ of \d+ steps measured/);
  await expect(page.getByTestId('calibration-partial')).toBeVisible();
});

test('a bad calibration file gets a clear error; a good one is loaded', async ({ page }) => {
  await page.goto(`${serve!.base}/?trace=samples/${TRACE}&view=machine&token=${serve!.token}`);
  expect(await idleState(page)).toBe('ready');
  const input = page.getByTestId('calibration-file');
  await input.setInputFiles({ name: 'topology.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify({ nodes: [{ id: 0, cpus: [0] }] })) });
  await expect(page.getByTestId('calibration-error')).toContainText('topology.json is not a numascope bench calibration');
  // The server's own stored calibration from the first test is a valid file.
  const stored = readdirSync(path.join(cache, 'numascope', 'machines')).find((f) => f.endsWith('.json'))!;
  await input.setInputFiles(path.join(cache, 'numascope', 'machines', stored));
  await expect(page.getByTestId('calibration-loaded')).toContainText('1 node');
  await expect(page.getByTestId('calibration-error')).toHaveCount(0);
  await expect(page.getByTestId('machine-choice-file')).toHaveAttribute('data-used', /machine-file|target-machine/);
});
