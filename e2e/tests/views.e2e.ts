/**
 * The memory and threads views, the timeline brush, share links and exports, on sample traces.
 * Every number is checked against counts made here from the file (fixtures/view-expectations.ts).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import { SAMPLE_TRACES_DIR } from '../fixtures/expectations.js';
import { grouped, idleState, screenshot, valueOf } from '../fixtures/app.js';
import { viewExpectations } from '../fixtures/view-expectations.js';
import type { Range } from '../fixtures/view-expectations.js';

const SYNTHETIC = 'partitioned.numascope';
const RECORDED = 'recorded-testload-4threads.numascope';
const bytesOf = (file: string) => new Uint8Array(readFileSync(path.join(SAMPLE_TRACES_DIR, file)));

function rangeFromUrl(page: Page): Range | null {
  const p = new URL(page.url()).searchParams;
  return p.has('from') ? { fromUs: Number(p.get('from')), toUs: Number(p.get('to')) } : null;
}

async function expectNodeTable(page: Page, file: string, range: Range | null) {
  const e = viewExpectations(bytesOf(file), range);
  for (const id of e.nodeIds) {
    expect(await valueOf(page.getByTestId(`node-${id}-samples`)), `samples on node ${id}`).toBe(e.nodeSamples.get(id) ?? 0);
    expect(await valueOf(page.getByTestId(`node-${id}-faults`)), `first touches on node ${id}`).toBe(e.nodeFaults.get(id) ?? 0);
    expect(await valueOf(page.getByTestId(`node-${id}-accesses`)), `accesses on node ${id}`).toBe(e.nodeAccesses.get(id) ?? 0);
  }
  return e;
}

for (const file of [SYNTHETIC, RECORDED]) {
  const name = file.replace(/\.numascope$/, '');

  test(`${file}: memory view — heatmap bins, region table and region details match the file`, async ({ page }) => {
    const e = viewExpectations(bytesOf(file));
    await page.goto(`./?trace=samples/${file}&view=memory`);
    expect(await idleState(page)).toBe('ready');
    await expect(page.getByTestId('tab-memory')).toHaveAttribute('aria-selected', 'true');
    const heatmap = page.getByTestId('heatmap');
    expect(Number(await heatmap.getAttribute('data-total'))).toBe(e.withAddress);
    // Never more cells than pixels.
    const box = (await heatmap.locator('canvas').boundingBox())!;
    expect(Number(await heatmap.getAttribute('data-rows'))).toBeLessThanOrEqual(box.height);
    expect(Number(await heatmap.getAttribute('data-cols'))).toBeLessThanOrEqual(box.width);

    const busiest = [...e.regionSamples.entries()].filter(([r]) => r >= 0).sort((a, b) => b[1] - a[1]).slice(0, 3);
    for (const [region, samples] of busiest) {
      expect(await valueOf(page.getByTestId(`region-${region}-samples`)), `samples in region ${region}`).toBe(samples);
      expect(await valueOf(page.getByTestId(`region-${region}-pages`))).toBe(e.regionPages.get(region) ?? 0);
    }
    await expect(page.getByTestId('regions-table').locator('tbody tr')).toHaveCount(Math.min(e.regions, 200));

    // Select the busiest region: its details, and the selection is in the URL.
    const [top] = busiest[0]!;
    await page.getByTestId(`region-select-${top}`).click();
    expect(await idleState(page)).toBe('ready');
    expect(new URL(page.url()).searchParams.get('region')).toBe(String(top));
    const detail = page.getByTestId('region-detail');
    await expect(detail).toHaveAttribute('data-region', String(top));
    expect(await valueOf(page.getByTestId('region-detail-pages'))).toBe(e.regionPages.get(top));
    const sharing = page.getByTestId('region-sharing');
    let sum = 0;
    for (const cell of await sharing.locator('td[data-value]').all()) sum += Number(await cell.getAttribute('data-value'));
    expect(sum).toBe(busiest[0]![1]);

    // Zoom in with the keyboard: fewer pages, fewer samples, still binned to the canvas.
    await heatmap.locator('canvas').focus();
    await page.keyboard.press('+');
    expect(await idleState(page)).toBe('ready');
    expect(new URL(page.url()).searchParams.get('pages')).toMatch(/^\d+-\d+$/);
    expect(Number(await heatmap.getAttribute('data-total'))).toBeLessThanOrEqual(e.withAddress);
    await screenshot(page, `view-memory-${name}`);
    await page.getByTestId('heatmap-zoom-reset').click();
    expect(await idleState(page)).toBe('ready');
    expect(Number(await heatmap.getAttribute('data-total'))).toBe(e.withAddress);
  });

  test(`${file}: threads view — thread × node matrix and migrations match the file`, async ({ page }) => {
    const e = viewExpectations(bytesOf(file));
    await page.goto(`./?trace=samples/${file}&view=threads`);
    expect(await idleState(page)).toBe('ready');
    for (let t = 0; t < e.threads; t++) {
      for (const id of [...e.nodeIds, -1]) {
        const key = id < 0 ? 'unknown' : String(id);
        expect(await valueOf(page.getByTestId(`thread-node-${t}-${key}`)), `thread ${t} node ${id}`).toBe(e.threadNode.get(`${t}:${id}`) ?? 0);
      }
    }
    expect(await valueOf(page.getByTestId('migration-count'))).toBe(e.migrationEvents);
    await expect(page.getByTestId('migration-marker')).toHaveCount(e.migrationEvents);
    await screenshot(page, `view-threads-${name}`);
  });
}

test('brushing the timeline with the keyboard filters the node table, threads and memory', async ({ page }) => {
  await page.goto(`./?trace=samples/${SYNTHETIC}`);
  expect(await idleState(page)).toBe('ready');
  const timeline = page.getByTestId('timeline');
  await timeline.locator('svg').focus();
  // Steps scale with the trace (packages/viz keyboardStep / pageStep: 2 % and 25 % of its
  // windows): half of it is two presses away, and it moves along by a step.
  const windows = Number(await timeline.getAttribute('data-windows'));
  const step = Math.max(1, Math.round(windows / 50));
  const quarter = Math.max(1, Math.round(windows / 4));
  expect(windows).toBeGreaterThan(100);
  await page.keyboard.press('Home'); // the first quarter
  await page.keyboard.press('Shift+PageDown'); // grown to half
  await page.keyboard.press('ArrowRight'); // moved along by one step
  expect(await idleState(page)).toBe('ready');
  const range = rangeFromUrl(page)!;
  const windowUs = Number(await timeline.getAttribute('data-window-us'));
  expect(range).toEqual({ fromUs: step * windowUs, toUs: (2 * quarter + step) * windowUs });
  const e = await expectNodeTable(page, SYNTHETIC, range);
  expect(e.samples).toBeGreaterThan(0);
  const whole = viewExpectations(bytesOf(SYNTHETIC));
  expect(e.samples).toBeLessThan(whole.samples);
  await expect(page.getByTestId('range-label')).toContainText('Showing');
  await screenshot(page, 'view-overview-range');

  await page.getByTestId('tab-memory').click();
  expect(await idleState(page)).toBe('ready');
  expect(Number(await page.getByTestId('heatmap').getAttribute('data-total'))).toBe(e.withAddress);
  await page.getByTestId('tab-threads').click();
  expect(await idleState(page)).toBe('ready');
  expect(await valueOf(page.getByTestId('thread-node-0-' + e.nodeIds[0]))).toBe(e.threadNode.get(`0:${e.nodeIds[0]}`) ?? 0);

  await page.keyboard.press('Escape'); // focus is on the tab: Escape on the timeline clears
  await timeline.locator('svg').focus();
  await page.keyboard.press('Escape');
  expect(await idleState(page)).toBe('ready');
  expect(rangeFromUrl(page)).toBeNull();
});

test('brushing the timeline with the mouse selects a range snapped to windows', async ({ page }) => {
  await page.goto(`./?trace=samples/${RECORDED}`);
  expect(await idleState(page)).toBe('ready');
  const brush = page.getByTestId('timeline-brush');
  const b = (await brush.boundingBox())!;
  await page.mouse.move(b.x + b.width * 0.2, b.y + b.height / 2);
  await page.mouse.down();
  await page.mouse.move(b.x + b.width * 0.4, b.y + b.height / 2, { steps: 5 });
  await page.mouse.move(b.x + b.width * 0.6, b.y + b.height / 2, { steps: 5 });
  await page.mouse.up();
  expect(await idleState(page)).toBe('ready');
  const range = rangeFromUrl(page)!;
  const windowUs = Number(await page.getByTestId('timeline').getAttribute('data-window-us'));
  expect(range.fromUs % windowUs).toBe(0);
  expect(range.toUs % windowUs).toBe(0);
  expect(range.toUs).toBeGreaterThan(range.fromUs);
  await expectNodeTable(page, RECORDED, range);
  // A page-fault-only recording: accesses are "not sampled", never zero accesses.
  await expect(page.getByTestId('total-accesses')).toHaveText('not sampled');
});

test('a share link reopens the same screen with the same numbers; back/forward restore views', async ({ page }) => {
  await page.goto(`./?trace=samples/${SYNTHETIC}`);
  expect(await idleState(page)).toBe('ready');
  // Keyboard navigation between tabs.
  await page.getByTestId('tab-overview').focus();
  await page.keyboard.press('ArrowRight');
  await expect(page.getByTestId('tab-memory')).toBeFocused();
  expect(await idleState(page)).toBe('ready');
  await page.keyboard.press('ArrowRight');
  await expect(page.getByTestId('tab-threads')).toHaveAttribute('aria-selected', 'true');
  expect(await idleState(page)).toBe('ready');
  await page.getByTestId('timeline').locator('svg').focus();
  await page.keyboard.press('ArrowRight');
  for (let i = 0; i < 9; i++) await page.keyboard.press('Shift+ArrowRight');
  expect(await idleState(page)).toBe('ready');
  const link = page.url();
  const range = rangeFromUrl(page)!;
  expect(new URL(link).searchParams.get('view')).toBe('threads');
  const e = viewExpectations(bytesOf(SYNTHETIC), range);
  const cell = page.getByTestId('thread-node-3-' + e.nodeIds[0]);
  const before = await valueOf(cell);
  expect(before).toBe(e.threadNode.get(`3:${e.nodeIds[0]}`) ?? 0);
  const label = await page.getByTestId('range-label').textContent();

  const other = await page.context().newPage();
  await other.goto(link);
  expect(await idleState(other)).toBe('ready');
  await expect(other.getByTestId('tab-threads')).toHaveAttribute('aria-selected', 'true');
  await expect(other.getByTestId('range-label')).toHaveText(label!);
  expect(await valueOf(other.getByTestId('thread-node-3-' + e.nodeIds[0]))).toBe(before);
  await other.close();

  // Back: the range before the last key press, then the memory view; forward again.
  await page.goBack();
  expect(await idleState(page)).toBe('ready');
  const tl = page.getByTestId('timeline');
  const keyStepUs = Math.max(1, Math.round(Number(await tl.getAttribute('data-windows')) / 50)) * Number(await tl.getAttribute('data-window-us'));
  expect(rangeFromUrl(page)).toEqual({ fromUs: range.fromUs, toUs: range.toUs - keyStepUs });
  for (let i = 0; i < 9; i++) await page.goBack();
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('tab-threads')).toHaveAttribute('aria-selected', 'true');
  expect(rangeFromUrl(page)).toBeNull();
  await page.goBack();
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('tab-memory')).toHaveAttribute('aria-selected', 'true');
  await expect(page.getByTestId('view-memory')).toBeVisible();
  await page.goForward();
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('tab-threads')).toHaveAttribute('aria-selected', 'true');
  // The trace was not reloaded by back/forward.
  expect(await page.evaluate(() => document.body.dataset.loads)).toBe('1');
});

test('heatmap cells by keyboard: a visible focused cell, its value read out with units, Enter selects its region', async ({ page }) => {
  await page.goto(`./?trace=samples/${SYNTHETIC}&view=memory`);
  expect(await idleState(page)).toBe('ready');
  const heatmap = page.getByTestId('heatmap');
  const readout = page.getByTestId('heatmap-cell');
  await expect(readout).toHaveAttribute('aria-live', 'polite');
  await heatmap.locator('canvas').focus();
  await expect(page.getByTestId('heatmap-focus')).toBeVisible();
  // The keyboard starts on the hottest cell: its value is the grid's maximum.
  expect(await valueOf(readout)).toBe(Number(await heatmap.getAttribute('data-max')));
  await expect(readout).toContainText(/samples?, mostly from node \d/);
  await expect(readout).toContainText(/\d+(\.\d+)? (µs|ms|s)–/);
  const cols = Number(await heatmap.getAttribute('data-cols'));
  const at = async () => [Number(await readout.getAttribute('data-row')), Number(await readout.getAttribute('data-col'))];
  const [r0, c0] = await at();
  await page.keyboard.press(c0! > 0 ? 'ArrowLeft' : 'ArrowRight');
  expect(await at()).toEqual([r0, c0! > 0 ? c0! - 1 : Math.min(cols - 1, c0! + 1)]);
  await page.keyboard.press('Home');
  expect((await at())[1]).toBe(0);
  await page.keyboard.press('ArrowDown');
  const [r1] = await at();
  expect(r1).toBe(Math.min(Number(await heatmap.getAttribute('data-rows')) - 1, r0! + 1));
  // Enter selects the cell's region, as a click does.
  const region = await readout.getAttribute('data-region');
  expect(Number(region)).toBeGreaterThanOrEqual(0);
  expect(new URL(page.url()).searchParams.get('region')).toBeNull();
  await page.keyboard.press('Enter');
  expect(await idleState(page)).toBe('ready');
  expect(new URL(page.url()).searchParams.get('region')).toBe(region);
  await expect(page.getByTestId('region-detail')).toHaveAttribute('data-region', region!);
  await screenshot(page.getByTestId('heatmap'), 'heatmap-keyboard-focus');
});

test('export PNG, SVG, a Markdown summary and the trace bytes', async ({ page }) => {
  const file = SYNTHETIC;
  await page.goto(`./?trace=samples/${file}&view=memory`);
  expect(await idleState(page)).toBe('ready');

  const png = page.waitForEvent('download');
  await page.getByTestId('export-png').click();
  const pngFile = await (await png).path();
  const pngBytes = readFileSync(pngFile);
  expect([...pngBytes.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  expect(pngBytes.readUInt32BE(16)).toBeGreaterThan(300); // IHDR width

  const svg = page.waitForEvent('download');
  await page.getByTestId('export-svg').click();
  const svgDownload = await svg;
  expect(svgDownload.suggestedFilename()).toMatch(/^partitioned-memory\.svg$/);
  const svgText = readFileSync(await svgDownload.path(), 'utf8');
  expect(svgText).toMatch(/^<svg[^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  // The view's own figure, not the timeline shared by every view; its legend is in the file.
  expect(svgText).not.toContain('Timeline of');
  expect(svgText).toMatch(/<text[^>]*>node 0<\/text>/);
  expect(svgText).toContain('Each row is a band of pages in address order');
  // The heatmap canvas is embedded as a PNG image of its pixels, at its size on the page.
  const images = [...svgText.matchAll(/<image [^>]*>/g)].map((m) => m[0]);
  expect(images).toHaveLength(1);
  const canvas = page.getByTestId('heatmap').locator('canvas');
  const box = (await canvas.boundingBox())!;
  const backing = await canvas.evaluate((c: HTMLCanvasElement) => ({ width: c.width, height: c.height }));
  expect(images[0]).toContain(`width="${Math.round(box.width)}"`);
  expect(images[0]).toContain(`height="${Math.round(box.height)}"`);
  const href = /\shref="data:image\/png;base64,([^"]+)"/.exec(images[0]!)![1]!;
  expect(images[0]).toMatch(/xlink:href="data:image\/png;base64,/);
  const embedded = Buffer.from(href, 'base64');
  expect([...embedded.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  expect([embedded.readUInt32BE(16), embedded.readUInt32BE(20)]).toEqual([backing.width, backing.height]);

  const md = page.waitForEvent('download');
  await page.getByTestId('export-markdown').click();
  const mdText = readFileSync(await (await md).path(), 'utf8');
  const e = viewExpectations(bytesOf(file));
  expect(mdText).toContain('Synthetic trace — not a measurement.');
  for (const id of e.nodeIds) {
    const s = grouped(e.nodeSamples.get(id) ?? 0);
    const f = grouped(e.nodeFaults.get(id) ?? 0);
    const a = grouped(e.nodeAccesses.get(id) ?? 0);
    expect(mdText).toMatch(new RegExp(`\\| ${id} \\| [^|]+ \\| [\\d,]+ \\| ${s} \\| ${f} \\| ${a} \\|`));
  }
  expect(mdText).toContain('### Capabilities');
  expect(mdText).toContain('### Top regions by samples');

  const saved = page.waitForEvent('download');
  await page.getByTestId('save-trace').click();
  const savedDownload = await saved;
  expect(savedDownload.suggestedFilename()).toBe(file);
  expect(Buffer.compare(readFileSync(await savedDownload.path()), Buffer.from(bytesOf(file)))).toBe(0);
});

test('the Markdown summary of a page-fault-only recording says accesses were not sampled', async ({ page }) => {
  await page.goto(`./?trace=samples/${RECORDED}`);
  expect(await idleState(page)).toBe('ready');
  const md = page.waitForEvent('download');
  await page.getByTestId('export-markdown').click();
  const text = readFileSync(await (await md).path(), 'utf8');
  expect(text).toContain('accesses **not sampled**');
  expect(text).toContain('> **Recorded**');
  expect(text).not.toContain('Synthetic');
  const e = viewExpectations(bytesOf(RECORDED));
  expect(text).toMatch(new RegExp(`\\| 0 \\| [^|]+ \\| [\\d,]+ \\| ${grouped(e.nodeSamples.get(0) ?? 0)} \\| ${grouped(e.nodeFaults.get(0) ?? 0)} \\| not sampled \\|`));
});

test.describe('dark colour scheme', () => {
  test.use({ colorScheme: 'dark' });
  for (const view of ['overview', 'memory', 'threads']) {
    test(`${view} view reads in dark mode`, async ({ page }) => {
      await page.goto(`./?trace=samples/${SYNTHETIC}&view=${view}&from=200000&to=600000`);
      expect(await idleState(page)).toBe('ready');
      await expect(page.getByTestId(`tab-${view}`)).toHaveAttribute('aria-selected', 'true');
      await screenshot(page, `view-${view}-dark`);
    });
  }
});

test('the engine views are tabs in the navigation', async ({ page }) => {
  await page.goto(`./?trace=samples/${SYNTHETIC}`);
  expect(await idleState(page)).toBe('ready');
  for (const v of ['traffic', 'compare', 'decisions', 'recommend']) await expect(page.getByTestId(`tab-${v}`)).toBeVisible();
  await screenshot(page.locator('nav.view-nav'), 'view-nav');
});
