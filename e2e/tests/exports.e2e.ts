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

test('Compare exports every column\'s graph; Recommendations has no figure and says to use the Markdown summary', async ({ page }) => {
  await page.goto(`./?trace=samples/${TRACE}&view=compare`);
  expect(await idleState(page)).toBe('ready');
  const columns = await page.getByTestId('traffic-graph').count();
  expect(columns).toBeGreaterThan(1);
  const svg = await downloadText(page, 'export-svg');
  for (const t of await page.getByTestId('traffic-graph').evaluateAll((els) => els.map((e) => e.getAttribute('data-export-title')))) {
    expect(svg.text).toContain(`>${t}</text>`);
  }
  await page.getByTestId('tab-recommend').click();
  expect(await idleState(page)).toBe('ready');
  await page.getByTestId('export-png').click();
  await expect(page.getByRole('alert')).toContainText('this view has no figure to export: use the Markdown summary');
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
