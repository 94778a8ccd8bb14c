/**
 * Diagnostics (issue #16): the overview opens with the diagnosis summary, and the Diagnostics view
 * lists the issues ranked, with the fix and its predicted gain: the same issues and numbers as the
 * engine's diagnosis of the same file (what `numascope-analyze diagnose --json` prints).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, test } from '@playwright/test';
import { analyze, diagnose, diagnoseAnalysis, diagnosisJson, planFromFix, readTrace } from '@numascope/policy-engine';
import { idleState, screenshot } from '../fixtures/app.js';
import { SAMPLE_TRACES_DIR } from '../fixtures/expectations.js';

const FILE = 'shared-readmostly.numascope';

function engineDiagnosis() {
  const trace = readTrace(new Uint8Array(readFileSync(path.join(SAMPLE_TRACES_DIR, FILE))));
  return diagnosisJson(diagnoseAnalysis(trace, analyze(trace, { policies: ['observed', 'first-touch'] })));
}

test(`${FILE}: the overview's diagnosis summary and the Diagnostics view show the engine's issues`, async ({ page }) => {
  const d = engineDiagnosis();
  expect(d.issues.length).toBeGreaterThan(0);
  await page.goto(`./?trace=samples/${FILE}`);
  expect(await idleState(page)).toBe('ready');
  const summary = page.getByTestId('diagnosis-summary');
  await expect(summary).toBeVisible();
  const finding = summary.getByTestId('diagnosis-finding').first();
  await expect(finding).toHaveAttribute('data-kind', d.issues[0]!.kind);
  await expect(finding).toContainText(d.issues[0]!.fix.text);
  await screenshot(page, 'overview-diagnosis-summary');

  await summary.getByTestId('diagnosis-all').click();
  expect(await idleState(page)).toBe('ready');
  await expect(page).toHaveURL(/view=diagnose/);
  const rows = page.getByTestId('issue');
  await expect(rows).toHaveCount(d.issues.length);
  for (let k = 0; k < d.issues.length; k++) {
    const want = d.issues[k]!;
    const row = rows.nth(k);
    await expect(row).toHaveAttribute('data-kind', want.kind);
    await expect(row).toHaveAttribute('data-fix', want.fix.kind);
    expect(Number(await row.getAttribute('data-score'))).toBeCloseTo(want.score, 6);
    expect(Number(await row.getAttribute('data-speedup'))).toBeCloseTo(want.fix.predictedSpeedup!, 6);
  }
  await expect(page.getByTestId('cache-line-unavailable')).toContainText('IBS or PEBS');
  await screenshot(page.getByTestId('diagnose-view'), 'view-diagnostics');
});

test('two-groups.numascope: a planable fix has "Preview plan": the engine\'s plan of that fix alone, previewed with the Apply note; a code change says why it has none', async ({ page }) => {
  const file = 'two-groups.numascope';
  const trace = readTrace(new Uint8Array(readFileSync(path.join(SAMPLE_TRACES_DIR, file))));
  const d = diagnosisJson(diagnoseAnalysis(trace, analyze(trace, { policies: ['observed', 'first-touch'] })));
  const fix = d.issues.find((i) => i.fix.planable)!.fix;
  const want = planFromFix(trace, diagnose(trace), fix.id, { createdAt: '2026-01-01T00:00:00Z' });
  await page.goto(`./?trace=samples/${file}&view=diagnose`);
  expect(await idleState(page)).toBe('ready');
  const cell = page.locator(`td[data-fix-id="${fix.id}"]`);
  await cell.getByTestId('preview-fix-plan').click();
  const box = page.getByTestId('fix-plan');
  await expect(box).toHaveAttribute('data-fix-id', fix.id);
  await expect(box.getByTestId('plan-pages')).toHaveAttribute('data-value', String(want.expected.pagesToMove));
  await expect(box.getByTestId('plan-threads')).toHaveAttribute('data-value', String(want.expected.threadsToPin));
  await expect(box.getByTestId('fix-plan-summary')).toHaveText(want.source.summary);
  // A synthetic trace: nothing here to apply to, which the Recommendations view's note says too.
  await expect(box.getByTestId('apply-synthetic')).toBeVisible();
  await screenshot(box, 'diagnostics-fix-plan');

  await page.goto(`./?trace=samples/${FILE}&view=diagnose`);
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('fix-no-plan').first()).toContainText('replication is a code change');
  await expect(page.getByTestId('preview-fix-plan')).toHaveCount(0);
});
