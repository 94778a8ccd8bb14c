/**
 * The Code view on the real recording with call stacks (recorded-code-sites.numascope): the
 * function table names each buffer's first-touch line, the flame graph is drawn and reads out a
 * frame on hover and from the keyboard, the object filter, the function → object link into the
 * Memory view's Objects panel and its "touched by" link back; a synthetic trace says it has no
 * code locations. Expected lines come from the test program's TOUCH:/OBJECT: markers and its
 * buffer size, not from the engine.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { strFromU8, unzipSync } from 'fflate';
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import { REPO_ROOT } from '../fixtures/expectations.js';
import { grouped, idleState, screenshot } from '../fixtures/app.js';

const FILE = 'recorded-code-sites.numascope';
const SOURCE = readFileSync(path.join(REPO_ROOT, 'native/collector/crates/cli/tests/fixtures/code_sites.c'), 'utf8').split('\n');
const lineOf = (marker: string) => SOURCE.findIndex((l) => l.includes(marker)) + 1;
/** Each buffer is BYTES = 4 MiB, one first touch per 4 KiB page, every fault sampled (weight 1). */
const PAGES = (4 << 20) / 4096;
const BUFFERS = [
  { fn: 'init_alpha', touch: lineOf('TOUCH:alpha'), object: lineOf('OBJECT:alpha') },
  { fn: 'init_beta', touch: lineOf('TOUCH:beta'), object: lineOf('OBJECT:beta') },
  { fn: 'init_gamma', touch: lineOf('TOUCH:gamma'), object: lineOf('OBJECT:gamma') },
];

const fnRow = (page: Page, fn: string) => page.locator(`[data-testid="code-fn-row"][data-function="${fn}"]`);

test.beforeAll(() => {
  for (const b of BUFFERS) {
    expect(b.touch).toBeGreaterThan(0);
    expect(b.object).toBeGreaterThan(0);
  }
});

test(`${FILE}: the function table names each buffer's first-touch line with its weighted first touches`, async ({ page }) => {
  await page.goto(`./?trace=samples/${FILE}&view=code`);
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('tab-code')).toHaveAttribute('aria-selected', 'true');
  for (const b of BUFFERS) {
    const row = fnRow(page, b.fn);
    await expect(row).toHaveCount(1);
    await expect(row.getByTestId('code-fn-location')).toHaveText(`code_sites.c:${b.touch}`);
    await expect(row.getByTestId('code-fn-first-touches')).toHaveAttribute('data-value', String(PAGES));
    await expect(row.getByTestId('code-fn-first-touches')).toContainText(grouped(PAGES));
    await expect(row.getByTestId('code-fn-pages')).toHaveAttribute('data-value', String(PAGES));
  }
  // Sortable: by name (ascending), and by first touches (descending: the three buffers first).
  const names = () => page.getByTestId('code-fn-row').evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.function!));
  await page.getByTestId('code-sort-function').click();
  await expect(page.getByTestId('code-sort-function').locator('..')).toHaveAttribute('aria-sort', 'ascending');
  const byName = await names();
  expect(byName).toEqual([...byName].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
  await page.getByTestId('code-sort-firstTouches').click();
  await expect(page.getByTestId('code-sort-firstTouches').locator('..')).toHaveAttribute('aria-sort', 'descending');
  expect((await names()).slice(0, 3)).toEqual(BUFFERS.map((b) => b.fn));
  await screenshot(page, 'view-code-recorded-code-sites');
  await screenshot(page.locator('#code-functions'), 'view-code-functions');
});

test(`${FILE}: the flame graph is drawn; hover and keyboard focus read out init_gamma with its weight`, async ({ page }) => {
  await page.goto(`./?trace=samples/${FILE}&view=code`);
  expect(await idleState(page)).toBe('ready');
  const canvas = page.getByTestId('flame-graph-canvas').locator('canvas');
  await expect(canvas).toBeVisible();
  const painted = await canvas.evaluate((c: HTMLCanvasElement) => {
    const d = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 3; i < d.length; i += 4) if (d[i]! > 0) n++;
    return n;
  });
  expect(painted).toBeGreaterThan(1000);

  // Keyboard: focus the graph, go down to the first init_ frame, then right to init_gamma.
  await canvas.focus();
  const frame = page.getByTestId('flame-graph-frame');
  await expect(frame).toHaveAttribute('data-name', 'all');
  for (let i = 0; i < 12 && !(await frame.getAttribute('data-name'))!.startsWith('init_'); i++) await page.keyboard.press('ArrowDown');
  for (let i = 0; i < 4 && (await frame.getAttribute('data-name')) !== 'init_gamma'; i++) await page.keyboard.press('ArrowRight');
  await expect(frame).toHaveAttribute('data-name', 'init_gamma');
  await expect(frame).toHaveAttribute('data-total', String(PAGES));
  await expect(frame).toContainText(`init_gamma (code_sites.c:${BUFFERS[2]!.touch}): total ${grouped(PAGES)}`);

  // Hover: the same frame (where the keyboard outlines it) in the tooltip.
  const box = (await page.getByTestId('flame-graph-focus').boundingBox())!;
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  const tip = page.getByTestId('flame-graph-canvas').locator('.ns-timeline__tooltip');
  await expect(tip).toContainText('init_gamma');
  await expect(tip).toContainText(`total ${grouped(PAGES)}`);
  await screenshot(page.getByTestId('flame-graph'), 'view-code-flame-graph');

  // Enter zooms into it; Reset zoom goes back.
  await canvas.focus();
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('flame-graph')).not.toHaveAttribute('data-zoom', '0');
  await expect(page.getByTestId('flame-graph-zoomed')).toContainText('zoomed into init_gamma');
  await page.getByTestId('flame-graph-reset').click();
  await expect(page.getByTestId('flame-graph')).toHaveAttribute('data-zoom', '0');
});

test(`${FILE}: filtering by an object leaves its function; function → object → "touched by" → back`, async ({ page }) => {
  const beta = BUFFERS[1]!;
  const object = `main code_sites.c:${beta.object}`;
  await page.goto(`./?trace=samples/${FILE}&view=code`);
  expect(await idleState(page)).toBe('ready');
  await page.getByTestId('code-object').selectOption(object);
  expect(await idleState(page)).toBe('ready');
  expect(new URL(page.url()).searchParams.get('cobj')).toBe(object);
  await expect(page.getByTestId('code-fn-row')).toHaveCount(1);
  await expect(fnRow(page, beta.fn)).toHaveCount(1);
  // The tree and the flame graph are filtered alike.
  await expect(page.getByTestId('flame-graph')).toHaveAttribute('data-total', String(PAGES));

  // A function's objects, each linking to the object in the Memory view's Objects panel.
  await page.goto(`./?trace=samples/${FILE}&view=code`);
  expect(await idleState(page)).toBe('ready');
  await fnRow(page, beta.fn).getByTestId('code-fn-select').click();
  const obj = page.getByTestId('code-fn-detail').getByTestId('code-fn-object');
  await expect(obj).toHaveCount(1);
  await expect(obj).toHaveAttribute('data-site', object);
  const allocation = await obj.getAttribute('data-allocation');
  const region = await obj.getAttribute('data-region');
  await obj.getByTestId('code-fn-object-link').click();
  expect(await idleState(page)).toBe('ready');
  const url = new URL(page.url());
  expect([url.searchParams.get('view'), url.searchParams.get('region'), url.searchParams.get('obj')]).toEqual(['memory', region, allocation]);
  await expect(page.getByTestId('region-detail')).toHaveAttribute('data-region', region!);
  const selected = page.locator(`[data-testid="object-row"][data-allocation="${allocation}"]`);
  await expect(selected).toHaveAttribute('aria-selected', 'true');
  await expect(selected.getByTestId('object-select')).toHaveText(object);
  await expect(page.getByTestId('object-stack')).toHaveAttribute('data-allocation', allocation!);

  // Its "touched by" lists init_beta, linking back to the Code view filtered to the object.
  const touched = page.getByTestId('object-touched-by');
  await expect(touched).toHaveAttribute('data-object', object);
  await expect(touched.getByTestId('object-touched-by-fn')).toHaveCount(1);
  await expect(touched.getByTestId('object-touched-by-fn')).toHaveAttribute('data-first-touches', String(PAGES));
  await screenshot(page.getByTestId('region-detail'), 'view-memory-object-touched-by');
  await touched.getByTestId('object-touched-by-link').click();
  expect(await idleState(page)).toBe('ready');
  const back = new URL(page.url());
  expect([back.searchParams.get('view'), back.searchParams.get('cobj'), back.searchParams.get('cfn')]).toEqual(['code', object, beta.fn]);
  await expect(page.getByTestId('code-fn-row')).toHaveCount(1);
  await expect(page.getByTestId('code-fn-detail')).toHaveAttribute('data-function', beta.fn);
});

test('a synthetic trace (no call stacks) says there are no code locations, with the capability’s reason, and draws nothing', async ({ page }) => {
  const manifest = JSON.parse(strFromU8(unzipSync(new Uint8Array(readFileSync(path.join(REPO_ROOT, 'sample-traces/two-groups.numascope'))))['manifest.json']!)) as { capture: { capabilities: Array<{ metric: string; status: string; reason: string }> } };
  const cap = manifest.capture.capabilities.find((c) => c.metric === 'code-locations')!;
  expect(cap.status).toBe('unavailable');
  await page.goto('./?trace=samples/two-groups.numascope&view=code');
  expect(await idleState(page)).toBe('ready');
  const none = page.getByTestId('code-none');
  await expect(none).toContainText('No code locations in this trace');
  await expect(none).toContainText(cap.reason);
  await expect(none.locator('.ns-badge[data-status="unavailable"] .ns-badge__status')).toHaveText('unavailable');
  await expect(page.getByTestId('flame-graph')).toHaveCount(0);
  await expect(page.getByTestId('code-functions')).toHaveCount(0);
  // The key 0 opens the Code view from another view.
  await page.getByTestId('tab-overview').click();
  expect(await idleState(page)).toBe('ready');
  await page.keyboard.press('0');
  expect(await idleState(page)).toBe('ready');
  expect(new URL(page.url()).searchParams.get('view')).toBe('code');
});

/**
 * perf c2c's Shared Data Cache Line Table in the Code view, on the real Zen 4 `perf c2c record`
 * file imported by the collector: the lines, their records and HITMs are the committed
 * `perf c2c report` output's (read here from the report, not from the engine), and a line opens
 * into its offsets with the code of their loads and stores.
 */
test('an imported perf c2c file: the shared cache lines of perf c2c report, with their offsets and code', async ({ page }) => {
  const { execFileSync } = await import('node:child_process');
  const { mkdtempSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { BIN } = await import('../fixtures/serve.js');
  const shared = process.env.NUMASCOPE_SHARED ?? path.join(REPO_ROOT, '../shared');
  const name = 'amd-zen4-epyc9254_ibs-op-c2c-phys-addr_ring';
  const out = path.join(mkdtempSync(path.join(tmpdir(), 'numascope-c2c-')), 'zen4.numascope');
  execFileSync(BIN, ['import', path.join(shared, 'data/perfdata', `${name}.perf.data`), '-o', out], { stdio: 'pipe' });
  const report = readFileSync(path.join(shared, 'data/perfdata', `${name}.c2c-report.txt`), 'utf8');
  const table = report.slice(report.indexOf('Shared Data Cache Line Table'), report.indexOf('Shared Cache Line Distribution Pareto'));
  // Index, Address, Node, PA cnt, Hitm %, Tot Hitm, Lcl Hitm, Rmt Hitm, Total records, ...
  const rows = table
    .split('\n')
    .filter((l) => /^\s+\d+\s+0x[0-9a-f]+\s/.test(l))
    .map((l) => l.trim().split(/\s+/));
  expect(rows.length).toBeGreaterThan(0);

  await page.goto('./');
  await page.getByTestId('landing').getByTestId('file-input').setInputFiles({ name: 'zen4.numascope', mimeType: 'application/octet-stream', buffer: readFileSync(out) });
  expect(await idleState(page)).toBe('ready');
  await page.getByTestId('tab-code').click();
  expect(await idleState(page)).toBe('ready');
  const panel = page.getByTestId('code-c2c');
  await expect(panel).toHaveAttribute('data-available', 'true');
  await expect(page.getByTestId('code-c2c-totals')).toHaveAttribute('data-lines', String(rows.length));
  const lines = page.getByTestId('code-c2c-line');
  await expect(lines).toHaveCount(rows.length);
  for (const [i, r] of rows.entries()) {
    const line = lines.nth(i);
    await expect(line).toHaveAttribute('data-address', r[1]!);
    await expect(line).toHaveAttribute('data-hitm', r[5]!);
    await expect(line).toHaveAttribute('data-records', r[8]!);
    await expect(line.getByTestId('code-c2c-hitm')).toHaveText(`${r[5]} (${r[6]} / ${r[7]})`);
  }
  // Line 0 opens into its offsets, each with the code of its loads and stores.
  await lines.first().getByTestId('code-c2c-open').click();
  await expect(lines.first().getByTestId('code-c2c-open')).toHaveAttribute('aria-expanded', 'true');
  const offsets = page.getByTestId('code-c2c-detail').getByTestId('code-c2c-offset');
  expect(await offsets.count()).toBeGreaterThan(0);
  await expect(page.getByTestId('code-c2c-detail').getByTestId('code-c2c-code').first()).not.toHaveText('–');
  await screenshot(panel, 'view-code-c2c');
});

test('a trace without IBS or PEBS samples shows no perf c2c table', async ({ page }) => {
  await page.goto(`./?trace=samples/${FILE}&view=code`);
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('code-view')).toHaveAttribute('data-available', 'true');
  await expect(page.getByTestId('code-c2c')).toHaveCount(0);
});
