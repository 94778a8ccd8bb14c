/**
 * Retakes docs/images/*.png from the sample traces (run: `npm run screenshots -w e2e`). Each
 * picture is an element or the 1280×800 window, never a full page, so the files stay small. The
 * live-mode pictures are taken against a real `numascope serve` by live-images.shots.ts.
 */
import path from 'node:path';
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import { idleState } from '../fixtures/app.js';
import { OUT, shot } from './shot.js';

async function open(page: Page, query: string): Promise<void> {
  await page.goto(`./?${query}`);
  expect(await idleState(page)).toBe('ready');
}

test('overview: pages per node and a capability tooltip', async ({ page }) => {
  await open(page, 'trace=samples/recorded-testload-4threads.numascope');
  await shot(page.locator('section#nodes'), 'sample-recorded-testload-4threads-nodes');
  const badge = page.locator('section#capture [data-testid^="capability-"]').first();
  await badge.locator('[tabindex="0"]').focus();
  await expect(badge.getByRole('tooltip')).toBeVisible();
  // The badges and the open tooltip only, not the whole Capture section.
  const list = (await page.locator('section#capture .ns-badge-list').first().boundingBox())!;
  const tip = (await badge.getByRole('tooltip').boundingBox())!;
  const x = Math.max(0, Math.min(list.x, tip.x) - 8);
  const y = Math.max(0, Math.min(list.y, tip.y) - 8);
  const right = Math.max(list.x + list.width, tip.x + tip.width) + 8;
  const bottom = Math.max(list.y + list.height, tip.y + tip.height) + 8;
  await page.screenshot({ path: path.join(OUT, 'capability-tooltip-focus.png'), clip: { x, y, width: right - x, height: bottom - y }, animations: 'disabled', caret: 'hide' });
});

test('memory: a focused heatmap cell; threads view', async ({ page }) => {
  await open(page, 'trace=samples/recorded-testload-4threads.numascope&view=memory');
  const canvas = page.getByTestId('heatmap').locator('canvas');
  await canvas.focus();
  await page.keyboard.press('ArrowLeft');
  await expect(page.getByTestId('heatmap-focus')).toBeVisible();
  await shot(page, 'heatmap-keyboard-focus');
  await page.keyboard.press('3');
  expect(await idleState(page)).toBe('ready');
  await shot(page, 'view-threads-recorded-testload-4threads');
});

test('traffic: the whole trace, a brushed range, hinting faults', async ({ page }) => {
  await open(page, 'trace=samples/streamcluster-hotspot.numascope&view=traffic&policy=carrefour');
  await shot(page, 'traffic-view');
  const timeline = page.getByTestId('timeline');
  await timeline.locator('svg').focus();
  await page.keyboard.press('Home');
  await page.keyboard.press('Shift+PageDown');
  expect(await idleState(page)).toBe('ready');
  await shot(page, 'traffic-range');
  await open(page, 'trace=samples/recorded-guest-hinting-4nodes.numascope&view=traffic&policy=carrefour');
  await shot(page, 'traffic-hinting-faults');
});

test('zoom breadcrumbs and the keyboard help', async ({ page }) => {
  await open(page, 'trace=samples/two-groups.numascope&view=memory');
  await page.getByTestId('timeline').locator('svg').focus();
  await page.keyboard.press('Home');
  await page.keyboard.press('z');
  expect(await idleState(page)).toBe('ready');
  await page.getByTestId('timeline').locator('svg').focus();
  await page.keyboard.press('ArrowRight');
  expect(await idleState(page)).toBe('ready');
  await shot(page.getByTestId('timeline-panel'), 'timeline-zoom-breadcrumbs');
  await page.keyboard.press('?');
  await expect(page.getByTestId('keyboard-help')).toBeVisible();
  await shot(page.getByTestId('keyboard-help'), 'keyboard-help');
});

test('compare: the table and the columns; the manual editor', async ({ page }) => {
  await open(page, 'trace=samples/two-groups.numascope&view=compare&cmp=observed~interleave~asymsched');
  await shot(page.getByTestId('compare-table'), 'compare-table');
  // The columns' graphs and figures, under the table.
  await page.evaluate(() => {
    const col = document.querySelector('[data-testid="compare-column"]')!;
    window.scrollTo(0, col.getBoundingClientRect().top + window.scrollY - 70);
  });
  await shot(page, 'compare-3-columns');
  await open(page, 'trace=samples/streamcluster-hotspot.numascope&view=compare&cmp=first-touch~manual&man=t0:2,r16:1');
  await shot(page.getByTestId('manual-editor'), 'manual-editor');
});

test('compare: weighted interleave on a DRAM + CXL machine', async ({ page }) => {
  // The panel is taller than 800 px: a taller window keeps the sticky header off it.
  await page.setViewportSize({ width: 1280, height: 1200 });
  await open(page, 'trace=samples/streamcluster-hotspot.numascope&view=compare&cmp=observed~observed@dram-cxl-1s');
  await page.getByTestId('weights-panel').scrollIntoViewIfNeeded();
  await page.evaluate(() => {
    const panel = document.querySelector('[data-testid="weights-panel"]')!;
    window.scrollTo(0, panel.getBoundingClientRect().top + window.scrollY - 120);
  });
  await shot(page.getByTestId('weights-panel'), 'weights-panel');
});

test('decisions: one selected, and its pages in the Memory view', async ({ page }) => {
  await open(page, 'trace=samples/streamcluster-hotspot.numascope&view=decisions&dpol=carrefour&dkind=interleave');
  await page.getByTestId('decision-select').first().click();
  expect(await idleState(page)).toBe('ready');
  await shot(page.getByTestId('decision-detail'), 'decision-detail');
  await page.getByTestId('decision-show-memory').click();
  expect(await idleState(page)).toBe('ready');
  await shot(page, 'memory-decision-heatmap');
});
