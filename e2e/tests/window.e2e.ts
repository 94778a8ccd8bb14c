/** The replay window is a control (URL `win`): policies that decide per window change with it, and the page says why. */
import { expect, test } from '@playwright/test';
import { idleState } from '../fixtures/app.js';

test('Compare: the replay window control re-runs the engine, is kept in the link, and says what it changes', async ({ page }) => {
  test.setTimeout(60_000);
  await page.goto('./?trace=samples/two-groups.numascope&view=compare&cmp=observed~asymsched');
  expect(await idleState(page)).toBe('ready');
  const note = page.getByTestId('window-note');
  const defaultMs = Number(await note.getAttribute('data-window-ms'));
  expect(defaultMs).toBeGreaterThan(0);
  await expect(note).toContainText('policies decide once per window');
  const asym = page.locator('[data-testid="compare-column"][data-spec="asymsched"] [data-testid="column-speedup"]');
  const before = Number(await asym.getAttribute('data-value'));

  await page.getByTestId('window-select').selectOption('500');
  expect(await idleState(page)).toBe('ready');
  expect(new URL(page.url()).searchParams.get('win')).toBe('500');
  await expect(note).toHaveAttribute('data-window-ms', '500');
  const after = Number(await asym.getAttribute('data-value'));
  // AsymSched re-places its thread groups once per window: a longer window changes its prediction.
  expect(after).not.toBeCloseTo(before, 3);

  // The link keeps the window; "engine default" takes it out again.
  await page.reload();
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('window-note')).toHaveAttribute('data-window-ms', '500');
  await page.getByTestId('window-select').selectOption('auto');
  expect(await idleState(page)).toBe('ready');
  expect(new URL(page.url()).searchParams.get('win')).toBeNull();
  await expect(page.getByTestId('window-note')).toHaveAttribute('data-window-ms', String(defaultMs));
});
