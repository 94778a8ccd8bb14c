/**
 * Every sample trace in sample-traces/ (found when the tests run) opens from `?trace=` and the
 * numbers on screen match the file, counted here from its Arrow tables.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, test } from '@playwright/test';
import { SAMPLE_TRACES_DIR, expectationsFor, sampleTraceFiles } from '../fixtures/expectations.js';
import { grouped, idleState, screenshot, valueOf } from '../fixtures/app.js';

const files = sampleTraceFiles();

test('sample-traces/ holds at least one sample trace', () => {
  expect(files.length, `no *.numascope in ${SAMPLE_TRACES_DIR}`).toBeGreaterThan(0);
});

test('the landing page lists every sample trace with its description', async ({ page }) => {
  await page.goto('./');
  expect(await idleState(page)).toBe('empty');
  for (const file of files) {
    const item = page.getByTestId(`sample-${file}`);
    await expect(item).toBeVisible();
    const manifest = expectationsFor(readFileSync(path.join(SAMPLE_TRACES_DIR, file)));
    await expect(item.getByRole('link', { name: file })).toHaveAttribute('href', `?trace=samples/${file}`);
    if (manifest.originKind === 'synthetic') await expect(item).toContainText('synthetic');
  }
  await screenshot(page, 'landing');
});

for (const file of files) {
  const name = file.replace(/\.numascope$/, '');

  test(`${file}: nodes, pages, threads and samples match the file`, async ({ page }) => {
    const expected = expectationsFor(readFileSync(path.join(SAMPLE_TRACES_DIR, file)));
    await page.goto(`./?trace=samples/${file}`);
    expect(await idleState(page)).toBe('ready');

    // Machine: node count.
    expect(await valueOf(page.getByTestId('machine-node-count'))).toBe(expected.nodeIds.length);
    expect(await valueOf(page.getByTestId('total-nodes'))).toBe(expected.nodeIds.length);
    for (const id of expected.nodeIds) await expect(page.getByTestId(`machine-node-${id}`)).toBeVisible();

    // Pages and samples per node, and the unknown-node row only when the file has one.
    for (const id of expected.nodeIds) {
      const pages = expected.pagesPerNode.get(id) ?? 0;
      const cell = page.getByTestId(`node-${id}-pages`);
      expect(await valueOf(cell), `pages on node ${id}`).toBe(pages);
      await expect(cell).toHaveText(grouped(pages));
      expect(await valueOf(page.getByTestId(`node-${id}-samples`)), `samples on node ${id}`).toBe(
        expected.samplesPerNode.get(id) ?? 0,
      );
    }
    const unknownPages = expected.pagesPerNode.get(-1) ?? 0;
    const unknownSamples = expected.samplesPerNode.get(-1) ?? 0;
    if (unknownPages > 0 || unknownSamples > 0) {
      expect(await valueOf(page.getByTestId('node-unknown-pages'))).toBe(unknownPages);
      expect(await valueOf(page.getByTestId('node-unknown-samples'))).toBe(unknownSamples);
    } else {
      await expect(page.getByTestId('node-row-unknown')).toHaveCount(0);
    }
    expect(await valueOf(page.getByTestId('total-pages'))).toBe(expected.pages);

    // Threads and samples.
    expect(await valueOf(page.getByTestId('total-threads'))).toBe(expected.threads);
    expect(await valueOf(page.getByTestId('thread-count'))).toBe(expected.threads);
    await expect(page.getByTestId('threads-table').locator('tbody tr')).toHaveCount(Math.min(expected.threads, 500));
    const samples = page.getByTestId('total-samples');
    expect(await valueOf(samples)).toBe(expected.samples);
    await expect(samples).toHaveText(grouped(expected.samples));
    expect(await valueOf(page.getByTestId('total-accesses'))).toBe(expected.accesses);
    expect(await valueOf(page.getByTestId('total-faults'))).toBe(expected.faults);
    if (expected.samples === expected.faults) {
      // A page-fault-only recording: accesses must not be presented as measured.
      await expect(page.getByTestId('total-accesses')).toHaveText('not sampled');
    }

    // Origin.
    const banner = page.getByTestId('origin-banner');
    await expect(banner).toHaveAttribute('data-origin', expected.originKind);
    if (expected.originKind === 'synthetic') {
      await expect(banner).toContainText('Synthetic trace');
      await expect(banner).toContainText('Not a measurement.');
      await expect(banner).toContainText(`seed ${expected.seed}`);
      await expect(banner).toContainText(`model ${expected.model}`);
    } else {
      await expect(banner).not.toContainText('Synthetic trace');
    }

    await screenshot(page, `sample-${name}`);
    for (const section of ['machine', 'capture', 'nodes', 'threads']) {
      await screenshot(page.locator(`section#${section}`), `sample-${name}-${section}`);
    }
  });
}
