/**
 * Allocation sites in the Memory view (issue #16), on the real recording with allocation sites:
 * the regions table names the site of the region holding the 8 MiB table, and its detail lists
 * the allocation with its call stack. Expected values come from the file (fflate + apache-arrow)
 * and the test program's SITE: markers, not from the engine.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { tableFromIPC } from 'apache-arrow';
import { unzipSync } from 'fflate';
import { expect, test } from '@playwright/test';
import { REPO_ROOT, SAMPLE_TRACES_DIR } from '../fixtures/expectations.js';
import { idleState, screenshot } from '../fixtures/app.js';

const FILE = 'recorded-alloc-sites.numascope';

test(`${FILE}: the memory view names the allocation site of a region and shows its call stack`, async ({ page }) => {
  const files = unzipSync(new Uint8Array(readFileSync(path.join(SAMPLE_TRACES_DIR, FILE))));
  const allocations = tableFromIPC(files['allocations.arrow']!);
  const sizes = Array.from(allocations.getChild('size')!.toArray() as BigUint64Array, Number);
  const row = sizes.indexOf(8 * 1024 * 1024);
  const region = Number(allocations.getChild('region')!.get(row));
  const source = readFileSync(path.join(REPO_ROOT, 'native/collector/crates/cli/tests/fixtures/alloc_sites.c'), 'utf8').split('\n');
  const line = source.findIndex((l) => l.includes('SITE:table ')) + 1;
  expect(region).toBeGreaterThanOrEqual(0);
  expect(line).toBeGreaterThan(0);

  await page.goto(`./?trace=samples/${FILE}&view=memory`);
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId(`region-${region}-site`)).toHaveText(`main alloc_sites.c:${line}`);
  await page.getByTestId(`region-select-${region}`).click();
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('region-detail-site')).toHaveText(`main alloc_sites.c:${line}`);
  const first = page.getByTestId('region-objects').getByTestId('object-row').first();
  await expect(first).toHaveAttribute('data-allocation', String(row));
  const frame = page.getByTestId('object-stack').getByTestId('object-frame').first();
  await expect(frame).toContainText('main');
  await expect(frame).toContainText(`alloc_sites.c:${line}`);
  await page.getByTestId('region-objects').scrollIntoViewIfNeeded();
  await screenshot(page, 'view-memory-allocation-sites');
});
