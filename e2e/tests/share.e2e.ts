/** Sharing without traps: Copy link never carries the live session's token; the brand link keeps it. */
import { expect, test } from '@playwright/test';
import { idleState } from '../fixtures/app.js';

const TOKEN = 'f'.repeat(64);

test.use({ permissions: ['clipboard-read', 'clipboard-write'] });

test('Copy link has no token and reopens the same view; the brand link keeps the session', async ({ page, context }) => {
  await page.goto(`./?trace=samples/two-groups.numascope&view=threads&token=${TOKEN}`);
  expect(await idleState(page)).toBe('ready');
  // The brand (home) link keeps this tab's token, so Live stays connected after going home.
  expect(await page.locator('a.brand').getAttribute('href')).toBe(`./?token=${TOKEN}`);

  await page.getByTestId('copy-link').click();
  await expect(page.getByTestId('copied-link')).toBeVisible();
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  expect(copied).toBe(await page.getByTestId('copied-link').getAttribute('data-link'));
  const url = new URL(copied);
  expect(url.searchParams.has('token')).toBe(false);
  expect(copied).not.toContain(TOKEN);
  expect(url.searchParams.get('view')).toBe('threads');
  expect(url.searchParams.get('trace')).toBe('samples/two-groups.numascope');

  // The link opens the same view in a fresh tab.
  const other = await context.newPage();
  await other.goto(copied);
  expect(await idleState(other)).toBe('ready');
  await expect(other.getByTestId('tab-threads')).toHaveAttribute('aria-selected', 'true');
  await other.close();
});

test('Copy link on a trace opened from a file says a link cannot carry it', async ({ page }) => {
  await page.goto('./');
  expect(await idleState(page)).toBe('empty');
  const bytes = await (await page.request.get('samples/two-groups.numascope')).body();
  await page.getByTestId('landing').getByTestId('file-input').setInputFiles({ name: 'mine.numascope', mimeType: 'application/octet-stream', buffer: bytes });
  expect(await idleState(page)).toBe('ready');
  await page.getByTestId('copy-link').click();
  await expect(page.getByRole('alert')).toContainText('opened from a file, so a link cannot carry it');
});
