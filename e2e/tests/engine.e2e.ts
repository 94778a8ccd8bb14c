/**
 * The policy-engine views (Traffic per policy, Compare, Recommendations & plan) on the sample
 * traces: every number checked here is read from the UI's data-value attributes and compared
 * with `analyze` run in Node on the same file.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, test } from '@playwright/test';
import { analyze, readTrace, validatePlan } from '@numascope/policy-engine';
import { idleState, screenshot, valueOf } from '../fixtures/app.js';
import { SAMPLE_TRACES_DIR } from '../fixtures/expectations.js';

const HOTSPOT = 'streamcluster-hotspot.numascope';
const FAULTS_ONLY = 'recorded-testload-4threads.numascope';
const POLICIES = ['observed', 'first-touch', 'interleave', 'autonuma', 'carrefour', 'asymsched'];

const hotspot = analyze(readTrace(new Uint8Array(readFileSync(path.join(SAMPLE_TRACES_DIR, HOTSPOT)))), { windowMs: 100, policies: POLICIES });
const metric = (policy: string) => hotspot.policies.find((p) => p.policy === policy)!;

test('traffic graph: first-touch has a hot node 0, interleave evens the load (numbers match the engine)', async ({ page }) => {
  await page.goto(`./?trace=samples/${HOTSPOT}&view=traffic&policy=first-touch`);
  expect(await idleState(page)).toBe('ready');
  const view = page.getByTestId('traffic-view');
  const imbalance = await valueOf(view.getByTestId('metric-mcImbalancePct').locator('dd'));
  expect(imbalance).toBeCloseTo(metric('first-touch').mcImbalancePct, 6);
  expect(imbalance).toBeGreaterThan(100);
  expect(await valueOf(view.getByTestId('metric-localAccessRatio').locator('dd'))).toBeCloseTo(metric('first-touch').localAccessRatio, 6);
  expect(await valueOf(view.getByTestId('metric-memoryLatencyNs').locator('dd'))).toBeCloseTo(metric('first-touch').memoryLatencyNs, 6);
  const hot = view.locator('[data-testid="node-mark"][data-node="0"]');
  await expect(hot).toHaveAttribute('data-hot', 'true');
  const share = await valueOf(hot.getByTestId('node-share'));
  expect(share).toBeGreaterThan(0.5);
  await expect(hot.getByTestId('node-share')).toHaveText(`${Math.round(share * 100)}%`);
  await expect(view.getByTestId('metric-badge').first()).toHaveAttribute('data-badge', /estimated|synthetic/);
  await screenshot(view.getByTestId('traffic-graph'), 'traffic-streamcluster-first-touch');
  await screenshot(page, 'traffic-view');

  await view.getByTestId('policy-interleave').click();
  expect(await idleState(page)).toBe('ready');
  const il = await valueOf(view.getByTestId('metric-mcImbalancePct').locator('dd'));
  expect(il).toBeCloseTo(metric('interleave').mcImbalancePct, 6);
  expect(il).toBeLessThan(35);
  await expect(view.getByTestId('traffic-graph')).toHaveAttribute('data-hot-node', '');
  await screenshot(view.getByTestId('traffic-graph'), 'traffic-streamcluster-interleave');
});

test('compare: 3 columns with deltas against the baseline, a machine in one click, share link round trip', async ({ page }) => {
  await page.goto(`./?trace=samples/${HOTSPOT}&view=compare`);
  expect(await idleState(page)).toBe('ready');
  const cols = page.getByTestId('compare-column');
  await expect(cols).toHaveCount(3);
  const second = cols.nth(1);
  await expect(second).toHaveAttribute('data-spec', 'interleave');
  // The first column is the baseline: what actually ran (observed).
  await expect(cols.nth(0)).toHaveAttribute('data-spec', 'observed');
  const d = await valueOf(second.getByTestId('delta-mcImbalancePct').locator('td'));
  expect(d).toBeCloseTo(metric('interleave').mcImbalancePct - metric('observed').mcImbalancePct, 6);
  const speedup = await valueOf(second.getByTestId('column-speedup'));
  const observed = metric('observed');
  const il = metric('interleave');
  // A ratio of the headline predicted times, the policy's own speedup against the baseline.
  expect(speedup).toBeCloseTo(observed.predictedUs / il.predictedUs, 6);
  expect(speedup).toBeCloseTo(il.predictedSpeedup, 9);
  await expect(second.getByTestId('delta-mcImbalancePct')).toHaveAttribute('data-verdict', 'better');
  await screenshot(page, 'compare-3-columns');

  await page.getByTestId('add-machine').selectOption('amd-genoa-2s-nps4');
  expect(await idleState(page)).toBe('ready');
  await expect(cols).toHaveCount(4);
  await expect(cols.nth(3)).toHaveAttribute('data-spec', 'observed@amd-genoa-2s-nps4');
  await expect(cols.nth(3).getByTestId('traffic-graph')).toBeVisible();
  await expect(page.getByTestId('compare-row-mcImbalancePct').locator('td[data-spec="observed@amd-genoa-2s-nps4"]')).not.toHaveText('…');
  const url = page.url();
  expect(url).toContain('cmp=observed~interleave~carrefour~observed@amd-genoa-2s-nps4');

  const other = await page.context().newPage();
  await other.goto(url);
  expect(await idleState(other)).toBe('ready');
  await expect(other.getByTestId('compare-column')).toHaveCount(4);
  expect(await other.getByTestId('compare-column').evaluateAll((els) => els.map((e) => e.getAttribute('data-spec')))).toEqual([
    'observed',
    'interleave',
    'carrefour',
    'observed@amd-genoa-2s-nps4',
  ]);
  expect(await valueOf(other.getByTestId('compare-column').nth(1).getByTestId('delta-mcImbalancePct').locator('td'))).toBeCloseTo(d, 9);
});

test('a recorded trace opened without live mode says where a plan can be applied', async ({ page }) => {
  await page.goto('./?trace=samples/recorded-guest-hinting-4nodes.numascope&view=recommend');
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('apply-note')).toContainText('Apply needs live mode (numascope serve) or the desktop app');
  await expect(page.getByTestId('apply-synthetic')).toHaveCount(0);
  // Each recommendation says why its confidence is what it is, on the page (not only in a tooltip).
  await expect(page.getByTestId('confidence-why').first()).toContainText('NUMA hinting faults, no hardware access sampling');
});

test('plan: build from a recommendation, preview, export validates and its totals match the preview', async ({ page }) => {
  await page.goto(`./?trace=samples/${HOTSPOT}&view=recommend`);
  expect(await idleState(page)).toBe('ready');
  // A synthetic trace's pid is made up: Apply is not offered, and the page says why.
  await expect(page.getByTestId('apply-synthetic')).toContainText('This trace is synthetic');
  await expect(page.getByTestId('apply-through-live')).toHaveCount(0);
  const planable = page.getByTestId('recommendation').locator('input[type=checkbox]:not([disabled])');
  await planable.first().check();
  await page.getByTestId('build-plan').click();
  await expect(page.getByTestId('plan-preview')).toBeVisible();
  // The preview lists the plan's ranges (at most 12, then "… and N more").
  const ranges = page.getByTestId('plan-range');
  expect(await ranges.count()).toBeGreaterThan(0);
  expect(await ranges.count()).toBeLessThanOrEqual(12);
  await expect(ranges.first()).toContainText(/0x[0-9a-f]+–0x[0-9a-f]+/);
  const pages = await valueOf(page.getByTestId('plan-pages'));
  const bytes = await valueOf(page.getByTestId('plan-bytes'));
  const threads = await valueOf(page.getByTestId('plan-threads'));
  expect(pages + threads).toBeGreaterThan(0);
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-plan').click()]);
  const file = await download.path();
  const plan = validatePlan(JSON.parse(readFileSync(file, 'utf8')));
  expect(plan.expected.pagesToMove).toBe(pages);
  expect(plan.expected.bytesToMove).toBe(bytes);
  expect(plan.expected.threadsToPin).toBe(threads);
  const perNode = await page.getByTestId('plan-node').evaluateAll((els) => els.map((e) => [e.getAttribute('data-node'), Number(e.getAttribute('data-value'))]));
  for (const [node, after] of perNode) expect(plan.expected.pagesPerNodeAfter[node!] ?? 0).toBe(after);
  await screenshot(page, 'recommendations-plan');
});

test('page-fault-only recording: the placement-only estimate up front, labelled ESTIMATED, not a refusal', async ({ page }) => {
  await page.goto(`./?trace=samples/${FAULTS_ONLY}&view=traffic`);
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('no-access-data')).toHaveCount(0);
  await expect(page.getByTestId('engine-error')).toHaveCount(0);
  const banner = page.getByTestId('estimate-banner');
  await expect(banner).toContainText('ESTIMATED');
  await expect(banner).toContainText('this recording has no memory-access samples');
  await expect(banner).toHaveAttribute('data-auto', 'true');
  expect(page.url()).not.toContain('est=uniform');
  const unavailable = page.getByTestId('unavailable-policies');
  for (const p of ['carrefour', 'asymsched', 'autonuma']) await expect(unavailable.locator(`[data-policy="${p}"]`)).toContainText('cannot run on an access estimate');
  await expect(page.getByTestId('policy-carrefour')).toBeDisabled();
  const est = analyze(readTrace(new Uint8Array(readFileSync(path.join(SAMPLE_TRACES_DIR, FAULTS_ONLY)))), {
    windowMs: 100,
    accessEstimate: 'uniform',
    policies: ['observed', 'first-touch', 'interleave'],
  });
  const observed = est.policies.find((p) => p.policy === 'observed')!;
  expect(await valueOf(page.getByTestId('metric-mcImbalancePct').locator('dd'))).toBeCloseTo(observed.mcImbalancePct, 6);
  await screenshot(page, 'traffic-estimate');
  await page.getByTestId('tab-compare').click();
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('compare-column').nth(2).getByTestId('column-unavailable')).toContainText('cannot run on an access estimate');
});

test('a recording with NUMA hinting faults (no PMU): the banner, the engine’s window, Carrefour’s numbers', async ({ page }) => {
  const GUEST = 'recorded-guest-hinting-4nodes.numascope';
  const direct = analyze(readTrace(new Uint8Array(readFileSync(path.join(SAMPLE_TRACES_DIR, GUEST)))), { policies: POLICIES });
  expect(direct.accessSource).toBe('hinting-faults');
  await page.goto(`./?trace=samples/${GUEST}&view=traffic&policy=carrefour`);
  expect(await idleState(page)).toBe('ready');
  const view = page.getByTestId('traffic-view');
  const banner = view.getByTestId('hinting-banner');
  await expect(banner).toContainText('NUMA HINTING FAULTS');
  await expect(banner).toContainText(`Windows of ${direct.windowMs} ms span several scan passes`);
  await expect(view.getByTestId('estimate-banner')).toHaveCount(0);
  const c = direct.policies.find((p) => p.policy === 'carrefour')!;
  expect(await valueOf(view.getByTestId('metric-mcImbalancePct').locator('dd'))).toBeCloseTo(c.mcImbalancePct, 6);
  expect(await valueOf(view.getByTestId('metric-localAccessRatio').locator('dd'))).toBeCloseTo(c.localAccessRatio, 6);
  await screenshot(page, 'traffic-hinting-faults');
});
