/** Each view exports its own figure (with title and legend) and its own Markdown numbers. */
import { readFileSync } from 'node:fs';
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import { idleState } from '../fixtures/app.js';

const TRACE = 'streamcluster-hotspot.numascope';

async function downloadText(page: Page, testId: string): Promise<{ name: string; text: string; bytes: Buffer }> {
  const pending = page.waitForEvent('download');
  await page.getByTestId(testId).click();
  const d = await pending;
  const bytes = readFileSync(await d.path());
  return { name: d.suggestedFilename(), text: bytes.toString('utf8'), bytes };
}

test('Traffic exports its traffic graph with its title and legend, not the timeline', async ({ page }) => {
  await page.goto(`./?trace=samples/${TRACE}&view=traffic`);
  expect(await idleState(page)).toBe('ready');
  const graph = page.getByTestId('traffic-graph').first();
  const title = await graph.getAttribute('data-export-title');
  expect(title).toMatch(/ on /);
  const svg = await downloadText(page, 'export-svg');
  expect(svg.name).toBe('streamcluster-hotspot-traffic.svg');
  expect(svg.text).toContain(`>${title}</text>`);
  expect(svg.text).toContain('colour: utilisation 0 → 100 %');
  expect(svg.text).not.toContain('Timeline of');
  // Its node marks: one circle per node of the machine.
  const nodes = await page.getByTestId('traffic-graph').first().getByTestId('node-mark').count();
  expect((svg.text.match(/<circle /g) ?? []).length).toBeGreaterThanOrEqual(nodes);
  const png = await downloadText(page, 'export-png');
  // Wider and taller than the graph alone (title and legend around it), and not the 168 px timeline strip.
  const box = (await graph.locator('svg').boundingBox())!;
  const scale = await page.evaluate(() => devicePixelRatio);
  expect(png.bytes.readUInt32BE(16) / scale).toBeGreaterThan(box.width);
  expect(png.bytes.readUInt32BE(20) / scale).toBeGreaterThan(box.height + 40);
});

test('Compare exports its aligned table (policies, speedups, why) above every column\'s graph; the Markdown carries the same cells', async ({ page }) => {
  await page.goto(`./?trace=samples/${TRACE}&view=compare&cmp=observed~interleave~carrefour`);
  expect(await idleState(page)).toBe('ready');
  const table = page.getByTestId('compare-table');
  await expect(table.getByTestId('compare-why')).toHaveCount(3);
  // The table as the page shows it: columns fastest first, the speedup row, the why row.
  const titles = (await table.getByTestId('compare-table-col').allTextContents()).map((t) => t.replace(/^\s*baseline\s*/, '').trim());
  expect(titles).toHaveLength(3);
  const speedups = (await page.getByTestId('compare-row-predictedSpeedup').locator('td').allTextContents()).map((t) => t.trim());
  expect(speedups).toHaveLength(3);
  for (const x of speedups) expect(x).toMatch(/^\d+\.\d+×$/);
  const whyFirstWords = (await table.getByTestId('compare-why').allTextContents()).map((t) => t.trim().split(/\s+/).slice(0, 2).join(' '));

  const svg = await downloadText(page, 'export-svg');
  expect(svg.name).toBe('streamcluster-hotspot-compare.svg');
  expect(svg.text).toContain(`samples/${TRACE} · compare</text>`);
  expect(svg.text).toMatch(/>Compare: metrics across columns, fastest first \(speedup against Observed\)<\/text>/);
  const texts = [...svg.text.matchAll(/<text [^>]*>([^<]*)<\/text>/g)].map((m) => m[1]!);
  // Header cells in the page's order (fastest first), the baseline marked.
  const header = texts.filter((t) => titles.some((title) => t === title || t === `${title} (baseline)`));
  expect(header.slice(0, 3).map((t) => t.replace(/ \(baseline\)$/, ''))).toEqual(titles);
  expect(texts).toContain('Observed (baseline)');
  for (const x of speedups) expect(texts).toContain(x);
  expect(texts).toContain('Why');
  for (const w of whyFirstWords) expect(texts.some((t) => t.startsWith(w))).toBe(true);
  expect(svg.text).toContain('Speedup: the first column’s predicted time ÷ the column’s.');
  // Row labels carry their units; each column's graph follows under its title, with its legend.
  expect(texts.some((t) => t.startsWith('Local access ratio (% of accesses'))).toBe(true);
  for (const t of await page.getByTestId('traffic-graph').evaluateAll((els) => els.map((e) => e.getAttribute('data-export-title')))) {
    expect(svg.text).toContain(`>${t}</text>`);
  }
  expect((svg.text.match(/colour: utilisation 0 → 100 %/g) ?? []).length).toBe(3);
  expect(svg.text.indexOf('>Why</text>')).toBeLessThan(svg.text.indexOf('<svg', 10));

  // The PNG: the table and a row of graphs, so taller than the table plus one graph and as wide as the table.
  const png = await downloadText(page, 'export-png');
  expect(png.name).toBe('streamcluster-hotspot-compare.png');
  const scale = await page.evaluate(() => devicePixelRatio);
  const tableBox = (await table.boundingBox())!;
  const graphBox = (await page.getByTestId('traffic-graph').first().locator('svg').boundingBox())!;
  expect(png.bytes.readUInt32BE(16) / scale).toBeGreaterThanOrEqual(Math.floor(tableBox.width));
  expect(png.bytes.readUInt32BE(20) / scale).toBeGreaterThan(tableBox.height + graphBox.height + 40);

  // The Markdown summary: the same table, cell for cell, first.
  const md = (await downloadText(page, 'export-markdown')).text;
  expect(md).toContain('- **View:** Compare policies');
  expect(md).toContain('### Compare: metrics across columns, fastest first (speedup against Observed)');
  expect(md).toContain(`| metric | ${titles.map((t, i) => (t === 'Observed' ? `${t} (baseline)` : t)).join(' | ')} |`);
  expect(md).toMatch(new RegExp(`\\| Speedup vs the first column \\([^|]*\\) \\| ${speedups.join(' \\| ')} \\|`));
  // The first column is Observed, the engine's baseline: the per-policy table below has the same speedups.
  titles.forEach((t, i) => expect(md).toMatch(new RegExp(`\\| ${t}( \\(baseline\\))? \\| [^|]+ \\| ${speedups[i]} \\|`)));
  expect(md.indexOf('### Compare: metrics')).toBeLessThan(md.indexOf('### Predicted by the policy engine'));
});

test('Recommendations export their table: PNG and SVG hold every recommendation as the page shows it', async ({ page }) => {
  await page.goto(`./?trace=samples/${TRACE}&view=recommend`);
  expect(await idleState(page)).toBe('ready');
  const png = await downloadText(page, 'export-png');
  expect(png.name).toMatch(/-recommend\.png$/);
  const svg = (await downloadText(page, 'export-svg')).text;
  expect(svg).toContain('Recommendations: actions predicted at least 2% faster than');
  const first = (await page.getByTestId('recommendation').first().locator('td').nth(1).innerText()).split('\n')[0]!.trim();
  // The SVG wraps long cells into lines: its first words are there, escaped as XML.
  const words = first.split(' ').slice(0, 3).join(' ').replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  expect(svg).toContain(words);
  await expect(page.getByRole('alert')).toHaveCount(0);
});

test('the Markdown summary differs per view and carries the view\'s numbers', async ({ page }) => {
  await page.goto(`./?trace=samples/${TRACE}&view=recommend`);
  expect(await idleState(page)).toBe('ready');
  const rec = (await downloadText(page, 'export-markdown')).text;
  expect(rec).toContain('- **View:** Recommendations');
  expect(rec).toContain('### Predicted by the policy engine (steady state');
  expect(rec).toContain('### Recommendations');
  // The first recommendation's speedup, as the page shows it.
  const shown = (await page.getByTestId('recommendation').first().locator('td').nth(2).textContent())!.trim().split(/\s/)[0]!;
  expect(rec).toContain(`**${shown}**`);
  // Each policy's predicted speedup, as the Compare/Traffic cards show them, is in the table.
  expect(rec).toMatch(/\| Interleave \| [\d.]+ (ms|s) \| [\d.]+× \|/);

  await page.getByTestId('tab-memory').click();
  expect(await idleState(page)).toBe('ready');
  const mem = (await downloadText(page, 'export-markdown')).text;
  expect(mem).toContain('- **View:** Memory');
  expect(mem).not.toContain('### Predicted by the policy engine');
  expect(mem).not.toBe(rec);
});

/** The views in tab order (apps/web/src/ui/url-state.ts VIEWS). */
const ALL_VIEWS = ['overview', 'memory', 'threads', 'traffic', 'compare', 'decisions', 'recommend', 'diagnose', 'machine', 'code'] as const;

test('every view offers PNG and SVG only where it has a figure, and there they export', async ({ page }) => {
  test.setTimeout(180_000);
  const offered: string[] = [];
  for (const view of ALL_VIEWS) {
    await page.goto(`./?trace=samples/${TRACE}&view=${view}`);
    expect(await idleState(page)).toBe('ready');
    // What the exporter would draw: a marked chart or a marked table with rows (not the timeline).
    const has = await page.evaluate(() =>
      [...document.querySelectorAll('[data-export]')].some(
        (c) => c.getAttribute('data-export') !== 'timeline' && (c instanceof HTMLTableElement ? c.rows.length > 0 : c.querySelector('svg, canvas') !== null),
      ),
    );
    await expect(page.getByTestId('export-png'), view).toHaveCount(has ? 1 : 0);
    await expect(page.getByTestId('export-svg'), view).toHaveCount(has ? 1 : 0);
    await expect(page.getByTestId('export-markdown'), view).toHaveCount(1);
    if (!has) continue;
    offered.push(view);
    const png = await downloadText(page, 'export-png');
    expect(png.name, view).toMatch(new RegExp(`-${view}\\.png$`));
    expect(png.bytes.subarray(1, 4).toString('latin1'), view).toBe('PNG');
    const svg = await downloadText(page, 'export-svg');
    expect(svg.text, view).toContain('<svg');
    await expect(page.getByText(/export failed/), view).toHaveCount(0);
  }
  // Not vacuous either way: the chart views offer them, and some views (Decisions, Diagnostics,
  // Machine, Code on this sample) have no figure and do not.
  for (const v of ['traffic', 'compare', 'recommend']) expect(offered).toContain(v);
  expect(offered.length).toBeLessThan(ALL_VIEWS.length);
});
