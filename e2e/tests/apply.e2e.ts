/**
 * Apply a plan through Live mode against a real `numascope serve` and a real
 * `numascope-testload` child: load a plan JSON through the panel's file input, dry run (nothing
 * changes), apply (the worker thread is pinned to node 0's cpus, checked in /proc), roll back
 * (the previous affinity is back), and a plan for another pid (pid-mismatch shown with its code).
 * This machine has one NUMA node: the page move is to node 0 (real move_pages calls, no-ops for
 * the kernel); to make the pinning visible the worker is first narrowed to one cpu with taskset.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { expect, test } from '@playwright/test';
import { finishedLoad, idleState, screenshot, valueOf } from '../fixtures/app.js';
import { SAMPLE_TRACES_DIR } from '../fixtures/expectations.js';
import { allowedCpus, bufferPlan, cpuList, loadPlan, node0Cpus as readNode0Cpus, startHeldLoad } from '../fixtures/live-load.js';
import type { HeldLoad } from '../fixtures/live-load.js';
import { startServe } from '../fixtures/serve.js';
import type { Serve } from '../fixtures/serve.js';

test.describe.configure({ mode: 'serial' });

let serve: Serve | null = null;
let load: HeldLoad | null = null;
let pid = 0;
let tid = 0;
let addr = '';
let len = 0;
let node0Cpus: number[] = [];
/** The worker's allowed cpus before anything is applied (narrowed by taskset). */
let narrowed = '';

const plan = (forPid: number) => bufferPlan(load!, forPid, 'e2e: move the testload buffer to node 0 and pin its worker there');

test.beforeAll(async () => {
  serve = await startServe();
  load = await startHeldLoad(4, 30);
  ({ pid, tid, addr, len } = load);
  node0Cpus = await readNode0Cpus(serve);
  // Narrow the worker to one cpu, so that pinning it to node 0 (all cpus here) is a visible change.
  execFileSync('taskset', ['-p', '-c', String(node0Cpus[0]), String(tid)], { stdio: 'ignore' });
  narrowed = allowedCpus(pid, tid);
  expect(narrowed).toBe(String(node0Cpus[0]));
});

test.afterAll(async () => {
  await load?.stop();
  load = null;
  await serve?.stop();
  serve = null;
});

test('dry run, apply and roll back a plan file through Live mode', async ({ page }) => {
  test.setTimeout(30_000);
  await page.goto(`${serve!.base}/?token=${serve!.token}&view=live`);
  expect(await idleState(page)).toBe('ready');
  const panel = page.getByTestId('apply-panel');
  await expect(panel).toBeVisible();
  await expect(page.getByTestId('apply-dry-run')).toBeDisabled();

  await page.getByTestId('apply-pid').selectOption(String(pid));
  await loadPlan(page, plan(pid));
  await expect(page.getByTestId('apply-run')).toBeDisabled(); // dry run first

  // Dry run: the operations, and nothing changes.
  await page.getByTestId('apply-dry-run').click();
  await expect(page.getByTestId('apply-dry-status')).toHaveText('dry-run');
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('apply-dry-ranges')).toContainText(addr);
  await expect(page.getByTestId('apply-dry-ranges')).toContainText('move → node 0');
  const dryThread = page.getByTestId(`apply-dry-thread-${tid}`);
  await expect(dryThread).toHaveAttribute('data-cpus', cpuList(node0Cpus));
  await expect(dryThread).toContainText(narrowed); // its current affinity
  expect(await valueOf(page.getByTestId('apply-dry-node-0').locator('td').nth(1))).toBe(len / 4096);
  expect(allowedCpus(pid, tid)).toBe(narrowed);
  await screenshot(panel, 'apply-dry-run');

  // Apply: complete, the thread pinned to node 0's cpus (checked in /proc).
  await page.getByTestId('apply-run').click();
  await expect(page.getByTestId('apply-result-status')).toHaveText('complete');
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId(`apply-result-thread-${tid}`)).toHaveAttribute('data-pinned', 'true');
  await expect(page.getByTestId(`apply-result-thread-${tid}`)).toContainText('pinned');
  expect(await valueOf(page.getByTestId('apply-result-on-target'))).toBe(len / 4096);
  expect(await valueOf(page.getByTestId('apply-result-node-0').locator('td').nth(2))).toBe(len / 4096);
  expect(allowedCpus(pid, tid)).toBe(cpuList(node0Cpus));
  await expect(page.getByTestId('apply-run')).toBeDisabled(); // applied once; roll back or load again
  await screenshot(panel, 'apply-complete');

  // Rollback: the previous affinity is back.
  await page.getByTestId('apply-rollback').click();
  await expect(page.getByTestId('apply-rollback-result')).toBeVisible();
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('apply-rollback-result-status')).toHaveText('complete');
  expect(allowedCpus(pid, tid)).toBe(narrowed);
  await expect(page.getByTestId('apply-rollback')).toBeDisabled();
});

test('a plan for another pid is refused with pid-mismatch, and nothing changes', async ({ page }) => {
  await page.goto(`${serve!.base}/?token=${serve!.token}&view=live`);
  expect(await idleState(page)).toBe('ready');
  await page.getByTestId('apply-pid').selectOption(String(pid));
  await loadPlan(page, plan(pid + 100_000), 'other-pid.plan.json');
  await expect(page.getByTestId('apply-pid-warning')).toContainText('pid-mismatch');
  await page.getByTestId('apply-dry-run').click();
  const err = page.getByTestId('apply-dry-error');
  await expect(err).toHaveAttribute('data-code', 'pid-mismatch');
  await expect(err).toContainText('pid-mismatch');
  await expect(err).toContainText(String(pid + 100_000));
  await expect(page.getByTestId('apply-run')).toBeDisabled();
  expect(allowedCpus(pid, tid)).toBe(narrowed);
  await screenshot(page.getByTestId('apply-panel'), 'apply-pid-mismatch');

  // A file that is not a plan is refused in the page.
  await page.getByTestId('apply-plan-file').setInputFiles({ name: 'nope.json', mimeType: 'application/json', buffer: Buffer.from('{"format":"x"}') });
  await expect(page.getByTestId('apply-file-error')).toContainText('not "numascope-plan"');
});

test('Recommendations, when connected: "Apply through live mode" hands the built plan to the panel', async ({ page }) => {
  test.setTimeout(30_000);
  await page.goto(`${serve!.base}/?token=${serve!.token}&view=live`);
  expect(await idleState(page)).toBe('ready');
  // A recorded trace from another machine (the guest sample), opened through the file input.
  await page.getByTestId('file-input').setInputFiles(path.join(SAMPLE_TRACES_DIR, 'recorded-guest-hinting-4nodes.numascope'));
  expect(await finishedLoad(page, 2)).toBe('ready');
  await page.getByTestId('tab-recommend').click();
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('apply-note')).toHaveCount(0);
  await expect(page.getByTestId('apply-through-live')).toBeDisabled(); // build a plan first
  await page.getByTestId('recommendation').locator('input[type=checkbox]:not([disabled])').first().check();
  await page.getByTestId('build-plan').click();
  await expect(page.getByTestId('plan-preview')).toBeVisible();
  await screenshot(page.getByTestId('recommend-view'), 'recommendations-apply-live');
  await page.getByTestId('apply-through-live').click();

  await expect(page.getByTestId('live')).toBeVisible();
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('apply-plan')).toContainText('from the Recommendations view');
  await expect(page.getByTestId('apply-plan')).toContainText('recorded-guest-hinting-4nodes.plan.json');
  // The plan names the sample's pid and its 4-node machine: the server refuses it before anything changes.
  await page.getByTestId('apply-dry-run').click();
  await expect(page.getByTestId('apply-dry-error')).toHaveAttribute('data-code', /^(wrong-machine|no-process|pid-reused|invalid-plan)$/);
  expect(page.url()).not.toContain('plan');
});
