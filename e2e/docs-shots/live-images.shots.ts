/**
 * Retakes the live-mode pictures of docs/images against a real `numascope serve` (the debug
 * collector binary, as the live tests use) and real `numascope-testload` children: a recording
 * running, the record → recommend → apply → record again loop, a plan applied through the Apply
 * panel, and Recommendations offering "Apply through live mode". Nothing is faked: on a one-node
 * machine the loop's plan is the placement check (nothing to move, trivially satisfied) and the
 * applied plan moves pages to node 0, where they already are, and pins a thread, which is what
 * the pictures show. Run with the other pictures: `npm run screenshots -w e2e`.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import { finishedLoad, idleState, valueOf } from '../fixtures/app.js';
import { SAMPLE_TRACES_DIR } from '../fixtures/expectations.js';
import { bufferPlan, loadPlan, node0Cpus, procState, startHeldLoad } from '../fixtures/live-load.js';
import type { HeldLoad } from '../fixtures/live-load.js';
import { TESTLOAD, startServe } from '../fixtures/serve.js';
import type { Serve } from '../fixtures/serve.js';
import { shot } from './shot.js';

test.describe.configure({ mode: 'serial' });

let serve: Serve | null = null;
/** Processes these pictures left running (the loop's testload), ended after the last one. */
const leftRunning: number[] = [];
let held: HeldLoad | null = null;

test.beforeAll(async () => {
  serve = await startServe();
});

test.afterAll(async () => {
  for (const pid of leftRunning) if (procState(pid) !== null) process.kill(pid, 'SIGKILL');
  await held?.stop();
  held = null;
  await serve?.stop();
  serve = null;
});

async function openLive(page: Page): Promise<void> {
  await page.goto(`${serve!.base}/?token=${serve!.token}&view=live`);
  expect(await idleState(page)).toBe('ready');
}

/** Waits until the recording has pages and at least `seq` live windows (never sleeps). */
const recordingUnderWay = (page: Page, seq: number) =>
  page.waitForFunction(
    (minSeq) => Number(document.querySelector('[data-testid="live-pages"]')?.getAttribute('data-value') ?? 0) > 0 && Number(document.body.dataset.liveSeq) >= minSeq,
    seq,
    { timeout: 60_000 },
  );

test('live-running: a launched command recording, its windows growing', async ({ page }) => {
  test.setTimeout(60_000);
  await openLive(page);
  await page.getByTestId('live-command').fill(`${TESTLOAD} --threads 2 --mib 8 --seconds 10`);
  await page.getByTestId('live-start').click();
  await expect(page.getByTestId('live-status')).toContainText('Recording…');
  // A few 250 ms windows in, so the graph has bars and the thread table its workers.
  await recordingUnderWay(page, 8);
  await expect(page.getByTestId('live-threads').locator('tbody tr')).not.toHaveCount(0);
  await shot(page.getByTestId('live-recording'), 'live-running');
  await page.getByTestId('live-stop').click();
  expect(await finishedLoad(page, 2)).toBe('ready');
});

test('loop-before-after: record, recommend, dry run, apply, record the same pid again', async ({ page }) => {
  test.setTimeout(180_000);
  await openLive(page);
  // The workers touch their own buffers 20 s after the start, during the second recording.
  await page.getByTestId('live-command').fill(`${TESTLOAD} --threads 2 --mib 4 --shared-mib 4 --delay 20 --seconds 0.2 --hold 60`);
  await page.getByTestId('live-start').click();
  await expect(page.getByTestId('live-status')).toContainText('Recording…');
  await recordingUnderWay(page, 4);
  const firstPages = await valueOf(page.getByTestId('live-pages'));
  await page.getByTestId('live-stop').click();
  expect(await finishedLoad(page, 2)).toBe('ready');
  await page.getByTestId('open-live').click();
  const loop = page.getByTestId('loop');
  await expect(loop).toBeVisible();
  leftRunning.push(Number(await loop.getAttribute('data-pid')));

  await page.getByTestId('loop-recommend').click();
  await expect(page.getByTestId('loop-plan')).toBeVisible({ timeout: 30_000 });
  expect(await idleState(page)).toBe('ready');
  await page.getByTestId('loop-dry-run').click();
  await expect(page.getByTestId('loop-dry-verdict').or(page.getByTestId('loop-dry-refused'))).toBeVisible();
  expect(await idleState(page)).toBe('ready');
  await page.getByTestId('loop-apply').click();
  await expect(page.getByTestId('loop-apply-verdict').or(page.getByTestId('loop-apply-refused'))).toBeVisible();
  expect(await idleState(page)).toBe('ready');

  await page.getByTestId('loop-duration').fill('60');
  await page.getByTestId('loop-record-again').click();
  await expect(page.getByTestId('live-status')).toContainText('Recording…');
  // Until the workers' buffers are in (more pages than the first recording saw).
  await page.waitForFunction(
    (n) => Number(document.querySelector('[data-testid="live-pages"]')?.getAttribute('data-value') ?? 0) > n,
    firstPages,
    { timeout: 60_000 },
  );
  await page.getByTestId('live-stop').click();
  // The second recording stays on Live and fills in "after".
  await expect(page.getByTestId('loop-open-after')).toBeVisible({ timeout: 30_000 });
  await expect(page.getByTestId('live-status')).toContainText('Stopped on request.');
  await expect(page.getByTestId('loop-local').locator('td').nth(1)).not.toHaveText('…', { timeout: 30_000 });
  expect(await idleState(page)).toBe('ready');
  await shot(loop, 'loop-before-after');
});

test('home-with-token: samples, this server\'s recordings and Live side by side', async ({ page }) => {
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(`${serve!.base}/?token=${serve!.token}`);
  expect(await idleState(page)).toBe('empty');
  await expect(page.getByTestId('live-recent-item').first()).toBeVisible();
  await shot(page, 'home-with-token');
});

test('apply-complete: a plan file dry run, then applied and verified', async ({ page }) => {
  test.setTimeout(60_000);
  held = await startHeldLoad(4, 60);
  const cpus = await node0Cpus(serve!);
  // One cpu first, so that pinning the worker to node 0 (every cpu here) is a change to show.
  execFileSync('taskset', ['-p', '-c', String(cpus[0]), String(held.tid)], { stdio: 'ignore' });
  await openLive(page);
  await page.getByTestId('apply-pid').selectOption(String(held.pid));
  await loadPlan(page, bufferPlan(held, held.pid, 'move the testload buffer to node 0 and pin its worker there'), 'testload.plan.json');
  await page.getByTestId('apply-dry-run').click();
  await expect(page.getByTestId('apply-dry-status')).toHaveText('dry-run');
  expect(await idleState(page)).toBe('ready');
  await page.getByTestId('apply-run').click();
  await expect(page.getByTestId('apply-result-status')).toHaveText('complete');
  expect(await idleState(page)).toBe('ready');
  await shot(page.getByTestId('apply-panel'), 'apply-complete');
});

test('recommendations-apply-live: a recorded trace, a plan built, Apply through live mode offered', async ({ page }) => {
  test.setTimeout(60_000);
  await openLive(page);
  // A recording from another machine (the 4-node guest sample): its plan names that machine, so
  // this server would refuse it at the dry run; the picture is of the offer.
  await page.getByTestId('file-input').setInputFiles(path.join(SAMPLE_TRACES_DIR, 'recorded-guest-hinting-4nodes.numascope'));
  expect(await finishedLoad(page, 2)).toBe('ready');
  await page.getByTestId('tab-recommend').click();
  expect(await idleState(page)).toBe('ready');
  await page.getByTestId('recommendation').locator('input[type=checkbox]:not([disabled])').first().check();
  await page.getByTestId('build-plan').click();
  await expect(page.getByTestId('plan-preview')).toBeVisible();
  await expect(page.getByTestId('apply-through-live')).toBeEnabled();
  await shot(page.getByTestId('recommend-view'), 'recommendations-apply-live');
});
