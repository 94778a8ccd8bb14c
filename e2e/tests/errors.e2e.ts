/**
 * Files that cannot be opened show a readable message naming the problem, never a blank page.
 * The broken files are built here from a good one with fflate.
 */
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import { finishedLoad, idleState, screenshot } from '../fixtures/app.js';
import { fixtureTraceBytes, withManifest, withoutTable } from '../fixtures/trace-fixture.js';

const good = fixtureTraceBytes('recorded');

async function openBytes(page: Page, name: string, bytes: Uint8Array) {
  await page.goto('./');
  expect(await idleState(page)).toBe('empty');
  await page.getByTestId('landing').getByTestId('file-input').setInputFiles({
    name,
    mimeType: 'application/octet-stream',
    buffer: Buffer.from(bytes),
  });
  expect(await finishedLoad(page, 1)).toBe('error');
}

async function expectReadableError(page: Page, code: string, title: string, message: RegExp) {
  const view = page.getByTestId('error-view');
  await expect(view).toBeVisible();
  await expect(view).toHaveAttribute('data-error-code', code);
  await expect(view).toHaveAttribute('role', 'alert');
  await expect(page.getByTestId('error-title')).toHaveText(title);
  await expect(page.getByTestId('error-message')).toHaveText(message);
  // Not blank: the header and a way forward are still there.
  await expect(page.locator('header .brand')).toBeVisible();
  await expect(view.getByText('Open another trace…')).toBeVisible();
  expect((await page.locator('body').innerText()).length).toBeGreaterThan(100);
}

test('a file that is not a ZIP', async ({ page }) => {
  await openBytes(page, 'notes.txt', new TextEncoder().encode('these are my notes, not a trace\n'));
  await expectReadableError(page, 'not-zip', 'This is not a numascope trace', /ZIP archive.*notes\.txt.*\.numascope/s);
  await expect(page.getByTestId('error-source')).toHaveText('notes.txt');
  await screenshot(page, 'error-not-zip');
});

test('a truncated trace', async ({ page }) => {
  await openBytes(page, 'cut.numascope', good.slice(0, Math.floor(good.length / 2)));
  await expectReadableError(page, 'truncated', 'The trace is truncated', /truncated|damaged/i);
  await screenshot(page, 'error-truncated');
});

test('a trace from a newer numascope (version 999)', async ({ page }) => {
  const future = withManifest(good, (m) => {
    m.version = 999;
  });
  await openBytes(page, 'future.numascope', future);
  await expectReadableError(page, 'too-new', 'This trace is newer than this numascope', /version 999.*update numascope/is);
  await screenshot(page, 'error-too-new');
});

test('a trace missing a table', async ({ page }) => {
  await openBytes(page, 'incomplete.numascope', withoutTable(good, 'samples'));
  await expectReadableError(page, 'table-missing', 'The trace is missing a table', /"samples" table/);
  await screenshot(page, 'error-table-missing');
});

test('a ?trace= URL that does not exist names the URL and the HTTP status', async ({ page }) => {
  await page.goto('./?trace=samples/does-not-exist.numascope');
  expect(await idleState(page)).toBe('error');
  await expectReadableError(
    page,
    'http',
    'The trace could not be downloaded',
    /samples\/does-not-exist\.numascope.*HTTP 404/,
  );
  await screenshot(page, 'error-http-404');
});

test('a trace whose stored table was altered (CRC-32 mismatch)', async ({ page }) => {
  // The first occurrence of the entry name is its local header; the data follows it.
  const name = new TextEncoder().encode('samples.arrow');
  let at = -1;
  for (let i = 0; i + name.length <= good.length && at < 0; i++) {
    if (name.every((b, k) => good[i + k] === b)) at = i;
  }
  expect(at).toBeGreaterThan(0);
  const bad = good.slice();
  const flip = at + name.length + 100;
  bad[flip] = (bad[flip] ?? 0) ^ 0x40;
  await openBytes(page, 'altered.numascope', bad);
  const code = await page.getByTestId('error-view').getAttribute('data-error-code');
  // Stored entries fail their CRC; a deflated one may fail inflating first. Either way it is named.
  expect(['zip-crc', 'zip-corrupt']).toContain(code);
  await expect(page.getByTestId('error-message')).toHaveText(/samples\.arrow/);
  await expect(page.getByTestId('error-title')).toHaveText(/damaged/);
});
