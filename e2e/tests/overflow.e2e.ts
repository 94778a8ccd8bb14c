/**
 * Nothing sticks out sideways (issue 35): at 1280×800, every view of every bundled sample trace
 * (found in sample-traces/ when the tests run), the landing page, and Compare with every policy
 * added keep the page as wide as the window (`scrollWidth <= clientWidth` on the root); a wide
 * table scrolls inside its own box. One page per sample: the views are switched by their tabs.
 */
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import { sampleTraceFiles } from '../fixtures/expectations.js';
import { idleState, screenshot } from '../fixtures/app.js';

/** The views in tab order, as the app lists them (apps/web/src/ui/url-state.ts VIEWS). */
const VIEWS = ['overview', 'memory', 'threads', 'traffic', 'compare', 'decisions', 'recommend', 'diagnose', 'machine', 'code'] as const;

test.use({ viewport: { width: 1280, height: 800 } });

/** How far the page is wider than the window, and the widest elements sticking out (for the failure message). */
async function sideways(page: Page): Promise<{ over: number; culprits: string[] }> {
  return page.evaluate(() => {
    const root = document.documentElement;
    const width = root.clientWidth;
    const culprits: string[] = [];
    if (root.scrollWidth > width) {
      for (const el of Array.from(document.querySelectorAll<HTMLElement>('body *'))) {
        const r = el.getBoundingClientRect();
        if (r.right <= width + 0.5 || r.width === 0) continue;
        // Only the outermost: an element whose parent also sticks out is not named again.
        const parent = el.parentElement?.getBoundingClientRect();
        if (parent && parent.right > width + 0.5) continue;
        const id = el.dataset.testid ? `[data-testid=${el.dataset.testid}]` : el.className ? `.${String(el.className).split(' ')[0]}` : '';
        culprits.push(`${el.tagName.toLowerCase()}${id} right=${Math.round(r.right)}`);
        if (culprits.length >= 5) break;
      }
    }
    return { over: root.scrollWidth - width, culprits };
  });
}

async function expectNoSidewaysOverflow(page: Page, where: string) {
  const { over, culprits } = await sideways(page);
  expect.soft(over, `${where}: the page is ${over} px wider than the window (${culprits.join('; ')})`).toBeLessThanOrEqual(0);
}

const files = sampleTraceFiles();

test('the landing page fits 1280 px', async ({ page }) => {
  await page.goto('./');
  expect(await idleState(page)).toBe('empty');
  await expect(page.getByTestId('sample-list')).toBeVisible();
  await expectNoSidewaysOverflow(page, 'landing');
});

for (const file of files) {
  test(`${file}: every view fits 1280 px`, async ({ page }) => {
    test.setTimeout(90_000);
    await page.goto(`./?trace=samples/${file}`);
    expect(await idleState(page)).toBe('ready');
    for (const view of VIEWS) {
      await page.getByTestId(`tab-${view}`).click();
      await expect(page.getByTestId(`tab-${view}`)).toHaveAttribute('aria-selected', 'true');
      expect.soft(await idleState(page), `${file} ${view}`).toBe('ready');
      await expectNoSidewaysOverflow(page, `${file} ${view}`);
    }
  });
}

test('Compare with every policy added: the table scrolls inside its box with the metric names in view, and a full Compare says why it takes no more', async ({ page }) => {
  test.setTimeout(90_000);
  await page.goto('./?trace=samples/two-groups.numascope&view=compare&cmp=observed');
  expect(await idleState(page)).toBe('ready');
  const adds = page.locator('[data-testid^="add-policy-"]');
  const ids = await adds.evaluateAll((els) => els.map((e) => e.getAttribute('data-testid')!));
  expect(ids.length).toBeGreaterThan(5);
  for (const id of ids) {
    await page.getByTestId(id).click();
    expect(await idleState(page)).toBe('ready');
  }
  const table = page.getByTestId('compare-table');
  await expect(table.getByTestId('compare-table-col')).toHaveCount(ids.length + 1);
  await expectNoSidewaysOverflow(page, 'compare, every policy');
  // Wider than its box: the box scrolls, the page does not; the metric names stay at its left edge.
  const wrap = table.locator('xpath=..');
  const sizes = await wrap.evaluate((w) => ({ scroll: w.scrollWidth, client: w.clientWidth, overflow: getComputedStyle(w).overflowX }));
  expect(sizes.overflow).toBe('auto');
  expect(sizes.scroll).toBeGreaterThan(sizes.client);
  await wrap.evaluate((w) => w.scrollTo({ left: w.scrollWidth }));
  const name = table.getByTestId('compare-row-predictedUs').locator('th');
  await expect.poll(async () => Math.round((await name.boundingBox())!.x - (await wrap.boundingBox())!.x)).toBe(0);
  await expectNoSidewaysOverflow(page, 'compare, scrolled table');
  await screenshot(page, 'compare-every-policy');

  // Filled up to the cap (cheap columns: the shared analysis' policies again): the add controls are disabled and say why.
  const columns = page.getByTestId('compare-view');
  while ((await page.getByTestId('compare-full').count()) === 0) {
    const before = Number(await columns.getAttribute('data-columns'));
    await page.getByTestId('add-policy-interleave').click();
    await expect(columns).toHaveAttribute('data-columns', String(before + 1));
  }
  expect(await idleState(page)).toBe('ready');
  const reason = (await page.getByTestId('compare-full').textContent())!;
  expect(reason).toMatch(/^At most (\d+) columns: /);
  await expect(columns).toHaveAttribute('data-columns', /^\d+$/);
  expect(Number(await columns.getAttribute('data-columns'))).toBe(Number(/^At most (\d+)/.exec(reason)![1]));
  for (const id of [...ids, 'add-machine', 'add-recording']) {
    const control = page.getByTestId(id);
    await expect(control).toBeDisabled();
    await expect(control).toHaveAttribute('title', reason);
    await expect(control).toHaveAccessibleDescription(reason);
  }
  await expectNoSidewaysOverflow(page, 'compare, full');
});
