/**
 * The single-file HTML report (Export bar ▸ HTML report): one .html file with the app and the
 * trace in it, opened from a file:// URL with no server and no network at all.
 */
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect, test } from '@playwright/test';
import { idleState } from '../fixtures/app.js';
import { startServe } from '../fixtures/serve.js';

const TRACE = 'recorded-testload-4threads.numascope';

test('the HTML report opens from a file:// URL with no server and shows the traffic graph and Compare', async ({ page, browser }, info) => {
  await page.goto(`./?trace=samples/${TRACE}`);
  expect(await idleState(page)).toBe('ready');
  const samples = Number(await page.getByTestId('total-samples').getAttribute('data-value'));
  expect(samples).toBeGreaterThan(0);

  const pending = page.waitForEvent('download');
  await page.getByTestId('export-html-report').click();
  const download = await pending;
  expect(download.suggestedFilename()).toBe('recorded-testload-4threads-report.html');
  const dir = info.outputPath('report');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, download.suggestedFilename());
  await download.saveAs(file);
  // The trace is in the file (base64, 4/3 of its size) with the app around it.
  const traceSize = statSync(path.join(import.meta.dirname, '../../sample-traces', TRACE)).size;
  expect(statSync(file).size).toBeGreaterThan((traceSize * 4) / 3);
  const html = readFileSync(file, 'utf8');
  expect(html).toMatch(/<script type="application\/octet-stream" id="numascope-report" data-name="recorded-testload-4threads.numascope">[A-Za-z0-9+/=]{1000}/);

  // A fresh browser context with every network request blocked and recorded: the report must need none.
  const context = await browser.newContext();
  const network: string[] = [];
  await context.route(/^(https?|wss?):/, (route) => {
    network.push(route.request().url());
    return route.abort();
  });
  const report = await context.newPage();
  const errors: string[] = [];
  report.on('pageerror', (e) => errors.push(e.message));
  await report.goto(pathToFileURL(file).href);
  expect(await idleState(report)).toBe('ready');
  await expect(report.getByTestId('trace-source')).toHaveText('recorded-testload-4threads.numascope');
  await expect(report.getByTestId('view-overview')).toBeVisible();
  await expect(report.getByTestId('total-samples')).toHaveAttribute('data-value', String(samples));
  // What needs a server is not offered.
  await expect(report.getByTestId('open-live')).toHaveCount(0);
  await expect(report.getByTestId('export-html-report')).toHaveCount(0);
  await expect(report.getByTestId('topbar-tag')).toContainText('HTML report');

  // The engine runs in the inlined Worker: the traffic graph and the Compare view.
  await report.getByTestId('tab-traffic').click();
  expect(await idleState(report)).toBe('ready');
  await expect(report.getByTestId('traffic-graph').first().getByTestId('node-mark').first()).toBeVisible();
  await report.getByTestId('tab-compare').click();
  expect(await idleState(report)).toBe('ready');
  expect(await report.getByTestId('traffic-graph').count()).toBeGreaterThan(1);

  expect(network).toEqual([]);
  expect(errors).toEqual([]);
  await context.close();
});

test('the report shell without a trace says so', async ({ page }) => {
  await page.goto('./report.html');
  expect(await idleState(page)).toBe('error');
  await expect(page.getByRole('main')).toContainText('This HTML report has no trace in it');
});

test('numascope serve serves the report shell, and its CSP lets the app fetch it', async ({ page }) => {
  // The Export bar's fetch of report.html, from a page served by numascope serve (connect-src 'self').
  const serve = await startServe();
  try {
    const violations: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
    });
    await page.goto(`${serve.base}/?token=${serve.token}&view=live`);
    expect(await idleState(page)).toBe('ready');
    const shell = await page.evaluate(async () => {
      const r = await fetch('report.html', { cache: 'no-store' });
      const text = await r.text();
      return { status: r.status, type: r.headers.get('content-type'), hasSlot: text.includes('id="numascope-report"'), size: text.length };
    });
    expect(shell.status).toBe(200);
    expect(shell.type).toMatch(/^text\/html/);
    expect(shell.hasSlot).toBe(true);
    expect(shell.size).toBeGreaterThan(100_000);
    expect(violations).toEqual([]);
  } finally {
    await serve.stop();
  }
});
