/**
 * Compare's Manual column: a placement dragged together with the pointer (and with the
 * keyboard), replayed through the engine's manual policy; numbers compared with `analyze` run
 * in Node with the same placement, and the placement kept in the link.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, test } from '@playwright/test';
import { analyze, manualPolicy, numericColumn, readTrace } from '@numascope/policy-engine';
import type { ManualPlacement } from '@numascope/policy-engine';
import { idleState, screenshot, valueOf } from '../fixtures/app.js';
import { SAMPLE_TRACES_DIR } from '../fixtures/expectations.js';

const HOTSPOT = 'streamcluster-hotspot.numascope';
const trace = readTrace(new Uint8Array(readFileSync(path.join(SAMPLE_TRACES_DIR, HOTSPOT))));
const regions = trace.tables.regions;
const start = numericColumn<BigUint64Array>(regions, 'start');
const end = numericColumn<BigUint64Array>(regions, 'end');
/** The region holding most pages (the shared array every thread reads, all on node 0). */
const BIG = 16;
const range = (r: number, node: number) => ({ startAddress: `0x${start[r]!.toString(16)}`, endAddress: `0x${end[r]!.toString(16)}`, node });
const manualOf = (placement: ManualPlacement) => analyze(trace, { windowMs: 100, policies: [manualPolicy(placement), 'first-touch'] });

test('manual column: drag a region and place a thread by keyboard; graph, metrics and delta come from the manual policy; the link keeps it', async ({ page }) => {
  expect(Number(numericColumn<Int32Array>(trace.tables.pages, 'region').filter((r) => r === BIG).length)).toBe(4096);
  await page.goto(`./?trace=samples/${HOTSPOT}&view=compare&cmp=first-touch~manual`);
  expect(await idleState(page)).toBe('ready');
  const column = page.locator('[data-testid="compare-column"][data-spec="manual"]');
  await expect(column.getByTestId('column-title')).toContainText('Manual');
  // Nothing placed yet: the recording's own placement, nothing to migrate.
  expect(await valueOf(column.getByTestId('column-migration'))).toBe(0);
  await expect(page.getByTestId('manual-summary')).toHaveAttribute('data-value', '0');

  // Pointer: drag the big region onto node 1.
  const chip = page.getByTestId(`manual-item-r${BIG}`);
  await expect(page.getByTestId('manual-zone-recorded').getByTestId(`manual-item-r${BIG}`)).toBeVisible();
  await chip.dragTo(page.getByTestId('manual-zone-1'));
  expect(await idleState(page)).toBe('ready');
  expect(new URL(page.url()).searchParams.get('man')).toBe(`r${BIG}:1`);
  await expect(page.getByTestId('manual-zone-1').getByTestId(`manual-item-r${BIG}`)).toBeVisible();
  let expected = manualOf({ pages: [range(BIG, 1)] });
  let manual = expected.policies.find((p) => p.policy === 'manual')!;
  expect(manual.transient.migratedPages).toBe(4096);
  expect(manual.pagesToMove).toBe(4096);
  expect(await valueOf(column.getByTestId('column-migration'))).toBe(manual.bytesToMove);
  expect(await valueOf(page.getByTestId('compare-row-mcImbalancePct').locator('td[data-spec="manual"]'))).toBeCloseTo(manual.mcImbalancePct, 6);
  const ft = expected.policies.find((p) => p.policy === 'first-touch')!;
  expect(await valueOf(column.getByTestId('delta-mcImbalancePct').locator('td'))).toBeCloseTo(manual.mcImbalancePct - ft.mcImbalancePct, 6);
  expect(await valueOf(column.getByTestId('column-speedup'))).toBeCloseTo(ft.predictedUs / manual.predictedUs, 6);
  await expect(column.locator('[data-testid="node-mark"][data-node="1"]')).toHaveAttribute('data-hot', 'true');

  // Keyboard: select thread 0 (streamcluster) with Enter, then "Place selected here" on node 2.
  await page.getByTestId('manual-item-t0').focus();
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('manual-item-t0')).toHaveAttribute('aria-pressed', 'true');
  await page.getByTestId('manual-place-2').focus();
  await page.keyboard.press('Enter');
  expect(await idleState(page)).toBe('ready');
  expect(new URL(page.url()).searchParams.get('man')).toBe(`t0:2,r${BIG}:1`);
  await expect(page.getByTestId('manual-zone-2').getByTestId('manual-item-t0')).toBeVisible();
  expected = manualOf({ threads: [{ thread: 0, node: 2 }], pages: [range(BIG, 1)] });
  manual = expected.policies.find((p) => p.policy === 'manual')!;
  expect(await valueOf(page.getByTestId('compare-row-localAccessRatio').locator('td[data-spec="manual"]'))).toBeCloseTo(manual.localAccessRatio, 6);
  expect(await valueOf(page.getByTestId('compare-row-mcImbalancePct').locator('td[data-spec="manual"]'))).toBeCloseTo(manual.mcImbalancePct, 6);
  await screenshot(page, 'compare-manual');
  await screenshot(page.getByTestId('manual-editor'), 'manual-editor');
  await screenshot(column, 'compare-manual-column');

  // A thread group: every sc-worker-* thread onto node 3 in one drag.
  await page.getByTestId('manual-item-g:sc-worker-*').dragTo(page.getByTestId('manual-zone-3'));
  expect(await idleState(page)).toBe('ready');
  const man = new URL(page.url()).searchParams.get('man')!;
  expect(man).toBe(['t0:2', ...Array.from({ length: 15 }, (_, i) => `t${i + 1}:3`), `r${BIG}:1`].join(','));
  expected = manualOf({ threads: [{ thread: 0, node: 2 }, ...Array.from({ length: 15 }, (_, i) => ({ thread: i + 1, node: 3 }))], pages: [range(BIG, 1)] });
  manual = expected.policies.find((p) => p.policy === 'manual')!;
  expect(await valueOf(page.getByTestId('compare-row-memoryLatencyNs').locator('td[data-spec="manual"]'))).toBeCloseTo(manual.memoryLatencyNs, 6);

  // The link opens the same placement and numbers.
  const other = await page.context().newPage();
  await other.goto(page.url());
  expect(await idleState(other)).toBe('ready');
  await expect(other.getByTestId('manual-zone-1').getByTestId(`manual-item-r${BIG}`)).toBeVisible();
  const col2 = other.locator('[data-testid="compare-column"][data-spec="manual"]');
  expect(await valueOf(other.getByTestId('compare-row-memoryLatencyNs').locator('td[data-spec="manual"]'))).toBeCloseTo(manual.memoryLatencyNs, 6);

  // Back as recorded.
  await page.getByTestId('manual-reset').click();
  expect(await idleState(page)).toBe('ready');
  expect(new URL(page.url()).searchParams.get('man')).toBeNull();
  expect(await valueOf(column.getByTestId('column-migration'))).toBe(0);
});
