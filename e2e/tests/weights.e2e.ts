/**
 * Weighted interleave in the app (issue 17): a recording re-targeted onto the DRAM + CXL preset
 * in Compare's machine selector shows the Weighted interleave panel, whose weights, DRAM share
 * and optimum are what `numascope-analyze analyze --policy weighted-interleave --json` prints for
 * the same file and machine (the CLI run here, as a user would run it); the chart is drawn with
 * its optimum marker. On a NUMA hinting-fault recording the access-rates select switches the
 * engine's assumption, and the page says that bandwidth-bound is the user's statement.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { expect, test } from '@playwright/test';
import { idleState, screenshot } from '../fixtures/app.js';
import { REPO_ROOT, SAMPLE_TRACES_DIR } from '../fixtures/expectations.js';

const CLI = path.join(REPO_ROOT, 'packages/policy-engine/bin/numascope-analyze.mjs');
const MACHINE = 'dram-cxl-1s';

interface CliWeights {
  nodes: number[];
  weights: number[];
  numactl: string;
  recommendation: { dramShare: number; optimum: { dramShare: number }; flat: { fromShare: number; toShare: number }; curve: unknown[]; equalWeightsTimeVsDramOnly: number; timeVsDramOnly: number };
}

/** The CLI's `weights` object of weighted-interleave for a sample file re-targeted onto MACHINE. */
function cliWeights(file: string, extra: string[] = []): CliWeights {
  const out = execFileSync(
    process.execPath,
    [CLI, 'analyze', path.join(SAMPLE_TRACES_DIR, file), '--target-machine', MACHINE, '--policy', 'weighted-interleave', '--json', ...extra],
    { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  const json = JSON.parse(out) as { policies: Array<{ policy: string; weights?: CliWeights }> };
  const w = json.policies.find((p) => p.policy === 'weighted-interleave')?.weights;
  if (!w) throw new Error(`the CLI gave no weights for ${file} on ${MACHINE}`);
  return w;
}

test(`streamcluster-hotspot re-targeted onto ${MACHINE}: the Weighted interleave panel shows the CLI's weights, and the chart its optimum`, async ({ page }) => {
  test.setTimeout(90_000);
  const file = 'streamcluster-hotspot.numascope';
  const want = cliWeights(file);
  await page.goto(`./?trace=samples/${file}&view=compare`);
  expect(await idleState(page)).toBe('ready');
  // On its own 4-node machine (one memory tier) there is nothing to weight.
  await expect(page.getByTestId('compare-weights')).toHaveCount(0);
  await expect(page.getByTestId('access-rates-select')).toHaveCount(0);

  await page.getByTestId('add-machine').selectOption(MACHINE);
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('compare-column').nth(3)).toHaveAttribute('data-spec', `observed@${MACHINE}`);
  const panel = page.getByTestId('weights-panel');
  await expect(panel).toHaveCount(1);
  await expect(panel).toHaveAttribute('data-policy', 'weighted-interleave');
  await expect(panel).toHaveAttribute('data-nodes', want.nodes.join(','));
  await expect(panel).toHaveAttribute('data-weights', want.weights.join(','));
  expect(Number(await panel.getAttribute('data-dram-share'))).toBeCloseTo(want.recommendation.dramShare, 12);
  // The words say the same weights and share, formatted as the app formats shares.
  const words = want.nodes.map((n, k) => `node ${n} ×${want.weights[k]}`).join(', ');
  await expect(panel.getByTestId('weights-words')).toHaveText(`${words}: ${(want.recommendation.dramShare * 100).toFixed(1)}% of pages on DRAM`);
  await expect(panel.getByTestId('weights-numactl')).toHaveText(want.numactl);
  await expect(panel.getByTestId('weights-note')).toContainText('system-wide');
  // Speedups against DRAM only and against equal weights, from the CLI's curve times.
  const r = want.recommendation;
  await expect(panel.getByTestId('weights-vs-dram')).toHaveText(`${(1 / r.timeVsDramOnly).toFixed(2)}×`);
  await expect(panel.getByTestId('weights-vs-equal')).toHaveText(`${(r.equalWeightsTimeVsDramOnly / r.timeVsDramOnly).toFixed(2)}×`);
  expect(Number(await panel.getByTestId('weights-optimum').getAttribute('data-value'))).toBeCloseTo(r.optimum.dramShare, 12);

  const chart = panel.getByTestId('weight-curve-weighted-interleave');
  await expect(chart).toBeVisible();
  await expect(chart).toHaveAttribute('data-points', String(r.curve.length));
  const optimum = chart.getByTestId('weight-optimum');
  await expect(optimum).toBeVisible();
  expect(Number(await optimum.getAttribute('data-share'))).toBeCloseTo(r.optimum.dramShare, 12);
  await expect(chart.getByTestId('weight-curve-line')).toBeVisible();
  await expect(chart.getByTestId('weight-flat-band')).toBeVisible();
  // The optimum sits inside the shaded band, horizontally.
  const band = (await chart.getByTestId('weight-flat-band').boundingBox())!;
  const dot = (await optimum.boundingBox())!;
  expect(dot.x + dot.width / 2).toBeGreaterThanOrEqual(band.x - 0.5);
  expect(dot.x + dot.width / 2).toBeLessThanOrEqual(band.x + band.width + 0.5);
  // The band is narrow (about 90 %–100 % on DRAM): a second chart zooms in on it, optimum included.
  await expect(panel.getByTestId('weight-curve-weighted-interleave-zoom').getByTestId('weight-optimum')).toBeVisible();
  await expect(panel.getByTestId('weights-rates')).toContainText('synthetic');
  await expect(panel.getByTestId('weights-method')).toContainText('How these weights were found');
  await expect(page).toHaveURL(new RegExp(`cmp=observed~interleave~carrefour~observed@${MACHINE}`));
  await screenshot(panel, 'weights-panel-dram-cxl');
});

test(`recorded-guest-hinting-4nodes re-targeted onto ${MACHINE}: the access-rates select switches the assumption, with its note, and the panel follows the CLI`, async ({ page }) => {
  test.setTimeout(120_000);
  const file = 'recorded-guest-hinting-4nodes.numascope';
  const typical = cliWeights(file);
  const bw = cliWeights(file, ['--access-rates', 'bandwidth-bound']);
  // The assumption changes the analysis (here the flat band), or this test could not tell them apart.
  expect(bw.recommendation.flat.fromShare).not.toBe(typical.recommendation.flat.fromShare);

  await page.goto(`./?trace=samples/${file}&view=compare&cmp=observed~weighted-interleave@${MACHINE}`);
  expect(await idleState(page)).toBe('ready');
  const select = page.getByTestId('access-rates-select');
  await expect(select).toBeVisible();
  await expect(select).toHaveValue('typical');
  await expect(page.getByTestId('access-rates-note')).toHaveCount(0);
  const panel = page.getByTestId('weights-panel');
  await expect(panel).toHaveAttribute('data-weights', typical.weights.join(','));
  const flat = panel.getByTestId('weights-flat');
  expect(Number(await flat.getAttribute('data-from'))).toBeCloseTo(typical.recommendation.flat.fromShare, 12);
  await expect(panel.getByTestId('weights-rates')).toContainText('assumed typical');

  await select.selectOption('bandwidth-bound');
  expect(await idleState(page)).toBe('ready');
  await expect(page).toHaveURL(/rates=bandwidth-bound/);
  await expect(page.getByTestId('access-rates-note')).toContainText('Assumed bandwidth-bound: your statement, not a measurement.');
  await expect(panel).toHaveAttribute('data-weights', bw.weights.join(','));
  await expect.poll(async () => Number(await flat.getAttribute('data-from'))).toBeCloseTo(bw.recommendation.flat.fromShare, 12);
  await expect(panel.getByTestId('weights-rates')).toContainText('assumed bandwidth-bound: your statement, not a measurement');
  await expect(panel.getByTestId('weight-curve-weighted-interleave').getByTestId('weight-optimum')).toBeVisible();
  await screenshot(page.getByTestId('prediction-basis'), 'access-rates-bandwidth-bound');

  // Back to typical: the note goes, the URL drops the parameter.
  await select.selectOption('typical');
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('access-rates-note')).toHaveCount(0);
  expect(page.url()).not.toContain('rates=');
});
