/**
 * The trace's chrome leaves the screen to the views (issue 18): at 1280×800 the first figure of a
 * view is in the upper half of the window and nothing sticks out sideways; zoom breadcrumbs,
 * keyboard paging, the skip link and the view shortcuts.
 */
import { expect, test } from '@playwright/test';
import type { Locator, Page } from '@playwright/test';
import { idleState } from '../fixtures/app.js';

const TRACE = 'samples/two-groups.numascope';

test.use({ viewport: { width: 1280, height: 800 } });

async function noSidewaysOverflow(page: Page) {
  const { scroll, client } = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth }));
  expect(scroll).toBeLessThanOrEqual(client);
}

test('at 1280×800 the Memory heatmap and the Traffic graph start in the upper half, with a one-line trace header', async ({ page }) => {
  await page.goto(`./?trace=${TRACE}&view=memory`);
  expect(await idleState(page)).toBe('ready');
  // One line: the trace, that it is synthetic, and a way to the full origin and totals.
  const line = page.getByTestId('trace-line');
  const lineBox = (await line.boundingBox())!;
  expect(lineBox.height).toBeLessThan(40);
  await expect(page.getByTestId('origin-chip')).toHaveText(/Synthetic · not a measurement/);
  await expect(page.getByTestId('origin-banner')).toBeHidden();
  const heatmap = (await page.getByTestId('heatmap').boundingBox())!;
  expect(heatmap.y).toBeLessThan(400);
  expect(heatmap.x + heatmap.width).toBeLessThanOrEqual(1280);
  const timeline = (await page.getByTestId('timeline-panel').boundingBox())!;
  expect(timeline.height).toBeLessThan(120);
  await noSidewaysOverflow(page);

  // The header expands (and says so to assistive technology), then folds again.
  const toggle = page.getByTestId('trace-header-toggle');
  await expect(toggle).toHaveAttribute('aria-expanded', 'false');
  await toggle.click();
  await expect(toggle).toHaveAttribute('aria-expanded', 'true');
  await expect(page.getByTestId('origin-banner')).toBeVisible();
  await expect(page.getByTestId('total-samples')).toBeVisible();
  await toggle.click();
  await expect(page.getByTestId('origin-banner')).toBeHidden();

  await page.getByTestId('tab-traffic').click();
  expect(await idleState(page)).toBe('ready');
  const graph = (await page.getByTestId('traffic-graph').boundingBox())!;
  expect(graph.y).toBeLessThan(400);
  expect(graph.x + graph.width).toBeLessThanOrEqual(1280);
  await noSidewaysOverflow(page);
});

test('the overview keeps the full header: origin banner and totals', async ({ page }) => {
  await page.goto(`./?trace=${TRACE}`);
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('trace-view')).toHaveAttribute('data-compact', 'false');
  await expect(page.getByTestId('origin-banner')).toBeVisible();
  await expect(page.getByTestId('total-samples')).toBeVisible();
  await expect(page.getByTestId('trace-line')).toHaveCount(0);
});

function zoomOf(page: Page): string | null {
  return new URL(page.url()).searchParams.get('zoom');
}

test('zoom into a selection pushes a breadcrumb; breadcrumbs go back; both round-trip through the URL', async ({ page }) => {
  await page.goto(`./?trace=${TRACE}&view=memory`);
  expect(await idleState(page)).toBe('ready');
  const timeline = page.getByTestId('timeline');
  const windowUs = Number(await timeline.getAttribute('data-window-us'));
  const windows = Number(await timeline.getAttribute('data-windows'));
  const quarter = Math.max(1, Math.round(windows / 4));
  const wholeTotal = Number(await page.getByTestId('heatmap').getAttribute('data-total'));
  await expect(page.getByTestId('zoom-in')).toBeDisabled();

  // Half the trace in two presses: the first quarter, grown by a quarter.
  await timeline.locator('svg').focus();
  await page.keyboard.press('Home');
  await page.keyboard.press('Shift+PageDown');
  expect(await idleState(page)).toBe('ready');
  const half = `0-${2 * quarter * windowUs}`;
  await page.getByTestId('zoom-in').click();
  expect(await idleState(page)).toBe('ready');
  expect(zoomOf(page)).toBe(half);
  await expect(page.getByTestId('zoom-breadcrumbs')).toHaveAttribute('data-depth', '1');
  await expect(timeline).toHaveAttribute('data-domain-from', '0');
  await expect(timeline).toHaveAttribute('data-domain-to', String(2 * quarter * windowUs));
  // The views filter by the zoomed range.
  expect(Number(await page.getByTestId('heatmap').getAttribute('data-total'))).toBeLessThan(wholeTotal);

  // Inside the zoom, the keys step within it: End selects its last quarter; Z zooms again.
  await timeline.locator('svg').focus();
  await page.keyboard.press('End');
  await page.keyboard.press('z');
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('zoom-breadcrumbs')).toHaveAttribute('data-depth', '2');
  const deep = zoomOf(page)!;
  expect(deep.split('~')).toHaveLength(2);
  expect(deep.startsWith(`${half}~`)).toBe(true);

  // A reload keeps both levels.
  await page.reload();
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('zoom-breadcrumbs')).toHaveAttribute('data-depth', '2');
  await expect(page.getByTestId('zoom-crumb-1')).toHaveText(/0 .* – .*/);

  // The first breadcrumb goes back to the half; "Whole trace" to everything; Back undoes it.
  await page.getByTestId('zoom-crumb-1').click();
  expect(await idleState(page)).toBe('ready');
  expect(zoomOf(page)).toBe(half);
  const url = new URL(page.url());
  expect(url.searchParams.get('from')).toBe('0');
  expect(url.searchParams.get('to')).toBe(String(2 * quarter * windowUs));
  await page.getByTestId('zoom-crumb-0').click();
  expect(await idleState(page)).toBe('ready');
  expect(zoomOf(page)).toBeNull();
  expect(new URL(page.url()).searchParams.get('from')).toBeNull();
  await expect(timeline).toHaveAttribute('data-domain-to', String(windows * windowUs));
  await page.goBack();
  expect(await idleState(page)).toBe('ready');
  expect(zoomOf(page)).toBe(half);
  await expect(page.getByTestId('zoom-breadcrumbs')).toHaveAttribute('data-depth', '1');

  // An engine view replays the zoomed range; "Analyse the whole trace" leaves the zoom too.
  await page.keyboard.press('4');
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('engine-range')).toBeVisible();
  await page.getByTestId('engine-range-clear').click();
  expect(await idleState(page)).toBe('ready');
  expect(zoomOf(page)).toBeNull();
  await expect(page.getByTestId('zoom-breadcrumbs')).toHaveAttribute('data-depth', '0');
  await expect(page.getByTestId('engine-range')).toHaveCount(0);
});

test('PageDown moves the selection by its own length; Home and End go to the ends', async ({ page }) => {
  await page.goto(`./?trace=${TRACE}`);
  expect(await idleState(page)).toBe('ready');
  const timeline = page.getByTestId('timeline');
  const windowUs = Number(await timeline.getAttribute('data-window-us'));
  const windows = Number(await timeline.getAttribute('data-windows'));
  const quarter = Math.max(1, Math.round(windows / 4));
  await timeline.locator('svg').focus();
  await page.keyboard.press('Home');
  await expect(timeline).toHaveAttribute('data-to', String(quarter * windowUs));
  await page.keyboard.press('PageDown');
  await expect(timeline).toHaveAttribute('data-from', String(quarter * windowUs));
  await expect(timeline).toHaveAttribute('data-to', String(2 * quarter * windowUs));
  await page.keyboard.press('PageUp');
  await expect(timeline).toHaveAttribute('data-from', '0');
  await page.keyboard.press('End');
  await expect(timeline).toHaveAttribute('data-to', String(windows * windowUs));
  await expect(timeline).toHaveAttribute('data-from', String((windows - quarter) * windowUs));
});

test('the first Tab offers "Skip to view"; digits pick views; ? lists the shortcuts', async ({ page }) => {
  await page.goto(`./?trace=${TRACE}&view=traffic`);
  expect(await idleState(page)).toBe('ready');
  await page.keyboard.press('Tab');
  const skip = page.getByTestId('skip-link');
  await expect(skip).toBeFocused();
  await expect(skip).toHaveText('Skip to view');
  expect((await skip.boundingBox())!.y).toBeGreaterThanOrEqual(0);
  await page.keyboard.press('Enter');
  await expect(page.locator('#view-panel')).toBeFocused();
  expect(new URL(page.url()).hash).toBe('');

  await page.keyboard.press('5');
  expect(await idleState(page)).toBe('ready');
  expect(new URL(page.url()).searchParams.get('view')).toBe('compare');
  await expect(page.getByTestId('tab-compare')).toHaveAttribute('aria-selected', 'true');
  await page.keyboard.press('2');
  expect(await idleState(page)).toBe('ready');
  expect(new URL(page.url()).searchParams.get('view')).toBe('memory');

  await page.keyboard.press('?');
  const help = page.getByTestId('keyboard-help');
  await expect(help).toBeVisible();
  await expect(help.getByTestId('keyboard-help-global')).toContainText('Compare view');
  await expect(help.getByTestId('keyboard-help-timeline')).toContainText('PageUp PageDown');
  // Digits typed while the help is open do not switch views; Escape closes it.
  await page.keyboard.press('3');
  expect(new URL(page.url()).searchParams.get('view')).toBe('memory');
  await page.keyboard.press('Escape');
  await expect(help).toBeHidden();

  // A digit typed into a field is the field's.
  await page.getByTestId('tab-traffic').click();
  expect(await idleState(page)).toBe('ready');
  await page.getByTestId('window-select').focus();
  await page.keyboard.press('1');
  expect(new URL(page.url()).searchParams.get('view')).toBe('traffic');
});

type Box = { x: number; y: number; width: number; height: number };
const overlaps = (a: Box, b: Box) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
function boxHitsCircle(b: Box, c: Box): boolean {
  const r = c.width / 2;
  const cx = c.x + r;
  const cy = c.y + c.height / 2;
  const dx = Math.max(b.x - cx, 0, cx - (b.x + b.width));
  const dy = Math.max(b.y - cy, 0, cy - (b.y + b.height));
  return Math.hypot(dx, dy) < r;
}

test('Compare at 1280×800: one table, fastest first, a why line per column; 8-node graphs without overlapping names; nothing clipped', async ({ page }) => {
  test.setTimeout(60_000);
  await page.goto(`./?trace=${TRACE}&view=compare&cmp=observed~interleave~carrefour~asymsched`);
  expect(await idleState(page)).toBe('ready');
  const table = page.getByTestId('compare-table');
  await expect(table).toBeVisible();
  expect((await table.boundingBox())!.y).toBeLessThan(800);

  // Columns of the table: fastest first, each speedup the one its column shows.
  const heads = table.getByTestId('compare-table-col');
  await expect(heads).toHaveCount(4);
  const specs = await heads.evaluateAll((els) => els.map((e) => e.getAttribute('data-spec')!));
  const speedups = (await heads.evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-speedup'))))) as number[];
  expect([...speedups].sort((a, b) => b - a)).toEqual(speedups);
  expect(speedups[0]!).toBeGreaterThan(speedups[3]!);
  for (const [i, spec] of specs.entries()) {
    const shown = Number(await page.locator(`[data-testid="compare-column"][data-spec="${spec}"] [data-testid="column-speedup"]`).getAttribute('data-value'));
    expect(shown).toBeCloseTo(speedups[i]!, 9);
  }
  // One line of why per column: the baseline says it is, the others win, lose or tie with their reasons.
  const why = table.getByTestId('compare-why');
  await expect(why).toHaveCount(4);
  for (const [i, spec] of specs.entries()) {
    const line = (await why.nth(i).textContent())!;
    if (spec === 'observed') expect(line).toMatch(/^The baseline/);
    else expect(line).toMatch(/^(Wins|Loses|About the same) \(\d+\.\d\d×\): \S/);
  }
  await expect(why.nth(0)).toContainText('Wins');

  // Metric rows say their unit and direction.
  await expect(table.getByTestId('compare-row-memoryLatencyNs').getByTestId('metric-unit')).toHaveText('ns per access · lower is better');

  // Nothing clipped: the page and the table fit the width.
  await noSidewaysOverflow(page);
  const wrap = await table.evaluate((t) => ({ scroll: t.parentElement!.scrollWidth, client: t.parentElement!.clientWidth }));
  expect(wrap.scroll).toBeLessThanOrEqual(wrap.client);

  // Each 8-node graph: names apart from each other and from every mark, inside the figure.
  const graphs = page.getByTestId('compare-column').getByTestId('traffic-graph');
  await expect(graphs).toHaveCount(4);
  for (let g = 0; g < 4; g++) {
    const graph = graphs.nth(g);
    const svg = (await graph.locator('svg').boundingBox())!;
    const labels = (await graph.getByTestId('node-label').evaluateAll((els) => els.map((e) => e.getBoundingClientRect().toJSON()))) as Box[];
    const marks = (await graph.locator('[data-testid="node-mark"] circle').evaluateAll((els) => els.map((e) => e.getBoundingClientRect().toJSON()))) as Box[];
    expect(labels).toHaveLength(8);
    for (const [i, a] of labels.entries()) {
      expect(a.x).toBeGreaterThanOrEqual(svg.x - 0.5);
      expect(a.x + a.width).toBeLessThanOrEqual(svg.x + svg.width + 0.5);
      for (const m of marks) expect(boxHitsCircle(a, m), `graph ${g}: name ${i} on a mark`).toBe(false);
      for (const [j, b] of labels.entries()) if (j > i) expect(overlaps(a, b), `graph ${g}: names ${i} and ${j}`).toBe(false);
    }
  }
});

/**
 * Every text of a traffic graph (names, shares, memory-only details) as the browser draws it:
 * inside the graph, on no mark, and on no other text (a node's share on its own name included).
 */
async function expectReadableGraph(graph: Locator, what: string, nodes: number) {
  const svg = (await graph.locator('svg').boundingBox())!;
  const rects = (loc: Locator) => loc.evaluateAll((els) => els.map((e) => e.getBoundingClientRect().toJSON())) as Promise<Box[]>;
  const marks = await rects(graph.locator('[data-testid="node-mark"] circle'));
  const names = await rects(graph.getByTestId('node-label'));
  const shares = await rects(graph.getByTestId('node-share'));
  const tiers = await rects(graph.getByTestId('node-tier'));
  expect(marks, what).toHaveLength(nodes);
  expect(names, what).toHaveLength(nodes);
  expect(shares, what).toHaveLength(nodes);
  const texts = [...names.map((b, i) => ['name', i, b] as const), ...shares.map((b, i) => ['share', i, b] as const), ...tiers.map((b, i) => ['tier', i, b] as const)];
  for (const [k, [kind, i, a]] of texts.entries()) {
    expect(a.width, `${what}: ${kind} ${i} drawn`).toBeGreaterThan(0);
    expect(a.x, `${what}: ${kind} ${i} inside`).toBeGreaterThanOrEqual(svg.x - 0.5);
    expect(a.x + a.width, `${what}: ${kind} ${i} inside`).toBeLessThanOrEqual(svg.x + svg.width + 0.5);
    expect(a.y, `${what}: ${kind} ${i} inside`).toBeGreaterThanOrEqual(svg.y - 0.5);
    expect(a.y + a.height, `${what}: ${kind} ${i} inside`).toBeLessThanOrEqual(svg.y + svg.height + 0.5);
    for (const [j, m] of marks.entries()) expect(boxHitsCircle(a, m), `${what}: ${kind} ${i} on mark ${j}`).toBe(false);
    for (const [kind2, j, b] of texts.slice(k + 1)) expect(overlaps(a, b), `${what}: ${kind} ${i} on ${kind2} ${j}`).toBe(false);
  }
}

test('traffic graphs of 2-, 4- and 8-node machines (and memory-only nodes) keep every name and share off the marks and off each other', async ({ page }) => {
  test.setTimeout(90_000);
  // Interleave: every link carries traffic, so every arrow is drawn.
  const machines: Array<[string, number]> = [
    ['intel-spr-2s', 2],
    ['amd-opteron-8385-4p', 4],
    ['intel-xeon-x7560-4s', 4],
    ['amd-asymsched-machine-a', 8],
    ['dram-cxl-1s', 2],
    ['intel-xeon-max-snc4-flat', 8],
  ];
  for (let i = 0; i < machines.length; i += 3) {
    const group = machines.slice(i, i + 3);
    await page.goto(`./?trace=${TRACE}&view=compare&cmp=${group.map(([m]) => `interleave@${m}`).join('~')}`);
    expect(await idleState(page)).toBe('ready');
    for (const [machine, nodes] of group) {
      const graph = page.locator(`[data-testid="compare-column"][data-spec="interleave@${machine}"]`).getByTestId('traffic-graph');
      await expect(graph).toHaveCount(1);
      await expectReadableGraph(graph, machine, nodes);
    }
  }
  // Traffic's own, larger graph of the recording's machine.
  await page.goto(`./?trace=${TRACE}&view=traffic&policy=interleave`);
  expect(await idleState(page)).toBe('ready');
  await expectReadableGraph(page.getByTestId('traffic-view').getByTestId('traffic-graph'), 'Traffic view', await page.getByTestId('node-mark').count());
});

test('Compare of a page-fault-only recording says "no access samples" once, not per column', async ({ page }) => {
  await page.goto('./?trace=samples/recorded-testload-4threads.numascope&view=compare');
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('compare-column')).toHaveCount(3);
  await expect(page.getByTestId('estimate-banner')).toHaveCount(1);
  await expect(page.getByTestId('estimate-banner')).toContainText('no memory-access samples');
});

test('every number says what it is: units, better direction, provenance per metric; axes carry units', async ({ page }) => {
  await page.goto('./?trace=samples/streamcluster-hotspot.numascope&view=traffic');
  expect(await idleState(page)).toBe('ready');
  const cards = page.getByTestId('metric-cards').locator('.metric-card');
  const n = await cards.count();
  expect(n).toBeGreaterThanOrEqual(7);
  const tooltips = new Set<string>();
  for (let i = 0; i < n; i++) {
    const card = cards.nth(i);
    await expect(card.getByTestId('metric-unit')).toHaveText(/ · (higher|lower) is better$/);
    tooltips.add((await card.locator('[role="tooltip"]').textContent())!);
  }
  // One provenance text per metric, each naming what it is computed from.
  expect(tooltips.size).toBe(n);
  await expect(page.getByTestId('metric-memoryLatencyNs').locator('[role="tooltip"]')).toContainText('latencies');
  await expect(page.getByTestId('metric-localAccessRatio').getByTestId('metric-unit')).toHaveText('% of accesses · higher is better');
  // The definition is read out with the name.
  await expect(page.getByTestId('metric-localAccessRatio').locator('dt .ns-sr-only')).toContainText('served by the node of the thread');
  await expect(page.getByTestId('timeline-y-unit')).toHaveText(/^samples per .+ window$/);

  // The totals of the overview: each says how it was obtained, and from what.
  await page.getByTestId('tab-overview').click();
  expect(await idleState(page)).toBe('ready');
  const synthetic = (await page.getByTestId('origin-banner').getAttribute('data-origin')) === 'synthetic';
  const provs = await page.locator('[data-testid^="total-prov-"]').evaluateAll((els) => els.map((e) => [e.textContent, e.getAttribute('title')]));
  expect(provs).toHaveLength(9);
  for (const [p] of provs) expect(synthetic ? ['synthetic'] : ['measured', 'sampled', 'estimated']).toContain(p);
  expect(new Set(provs.map(([, t]) => t)).size).toBe(9);
  await expect(page.getByTestId('total-card-lost')).toContainText('lower is better');
  await expect(page.getByTestId('node-chart-unit')).toHaveText('pages (4 KiB)');
});
