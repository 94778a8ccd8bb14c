/**
 * "Launch with this plan" in Live mode against a real `numascope serve`: the plan's object entry
 * names the shared buffer's allocation site of `numascope-testload` (its frames recorded by the
 * allocation shim in an earlier run, as `numascope debug alloc-frames` prints them) and binds it to
 * node 0; a thread entry pins the worker by name. The panel posts `/api/runs`, the server starts
 * the program with the shim preloaded (`numascope run --plan`), and the panel shows the report
 * when it exits: the site matched once, its bytes placed, the worker pinned. This machine has one
 * NUMA node, so node 0 is where the pages would be anyway: the panel says so, and what the test
 * checks is that the site matched in the launched process and the thread was pinned.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import { idleState, screenshot } from '../fixtures/app.js';
import { BIN, startServe, TESTLOAD } from '../fixtures/serve.js';
import type { Serve } from '../fixtures/serve.js';

test.describe.configure({ mode: 'serial' });

const ARGS = ['--threads', '1', '--mib', '1', '--shared-mib', '3', '--seconds', '0.05'];
/** The shared buffer's mmap: 3 MiB, 2 MiB of slack for alignment, two guard pages. */
const SHARED_BYTES = (3 << 20) + (2 << 20) + 8192;

let serve: Serve | null = null;
let frames: unknown[] = [];

function plan(objects: boolean) {
  return {
    format: 'numascope-plan',
    version: 1,
    createdAt: '2026-01-01T00:00:00Z',
    source: { trace: null, policy: 'manual', seed: null, summary: 'e2e: bind the testload shared buffer to node 0 from its first allocation, pin the worker' },
    target: { pid: 1, startTimeTicks: null, command: [TESTLOAD, ...ARGS], machine: { nodeIds: [0], distances: null } },
    pageRanges: [],
    threads: [{ tid: 2, order: 1, name: 'testload-w0', toNodes: [0], expectedNode: null, reason: 'e2e' }],
    objects: objects ? [{ site: 'testload shared buffer', frames, size: { min: SHARED_BYTES, max: SHARED_BYTES }, policy: 'bind', nodes: [0], weights: null, reason: 'e2e' }] : [],
  };
}

async function loadPlan(page: Page, p: object, name: string) {
  await page.getByTestId('apply-plan-file').setInputFiles({ name, mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(p)) });
  await expect(page.getByTestId('apply-plan')).toContainText(name);
}

test.beforeAll(async () => {
  serve = await startServe();
  // One run under the allocation shim gives the site's frames (module + ELF offsets: the same in every run).
  const dir = mkdtempSync(path.join(os.tmpdir(), 'numascope-e2e-launch-'));
  try {
    const shim = path.join(path.dirname(BIN), 'libnumascope_allocshim.so');
    execFileSync(TESTLOAD, ARGS, { env: { ...process.env, LD_PRELOAD: shim, NUMASCOPE_ALLOC_DIR: dir, NUMASCOPE_ALLOC_SAMPLE_BYTES: '0' }, stdio: 'ignore' });
    const out = execFileSync(BIN, ['debug', 'alloc-frames', dir, '--min-bytes', '4000000'], { encoding: 'utf8' });
    const site = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { size: number; frames: unknown[] })
      .find((e) => e.size === SHARED_BYTES);
    expect(site, out).toBeTruthy();
    frames = site!.frames.slice(0, 3);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.afterAll(async () => {
  await serve?.stop();
  serve = null;
});

test('a plan with object entries launches the program through Live mode and shows what matched and was pinned', async ({ page }) => {
  test.setTimeout(60_000);
  await page.goto(`${serve!.base}/?token=${serve!.token}&view=live`);
  expect(await idleState(page)).toBe('ready');
  const launch = page.getByTestId('apply-launch');
  await expect(launch).toBeDisabled(); // no plan yet

  // Without object entries there is nothing to place at launch: the button stays off and says why.
  await loadPlan(page, plan(false), 'threads-only.plan.json');
  await expect(launch).toBeDisabled();
  await expect(launch).toHaveAttribute('title', /no object entries/);

  await loadPlan(page, plan(true), 'launch.plan.json');
  await expect(page.getByTestId('apply-plan')).toContainText('1 object entry');
  await expect(launch).toBeEnabled();
  await launch.click();
  const result = page.getByTestId('apply-launch-result');
  await expect(result).toBeVisible({ timeout: 30_000 });
  expect(await idleState(page)).toBe('ready');
  await expect(result).toHaveAttribute('data-exit-code', '0');
  await expect(result).toContainText('exit code 0');
  const pid = Number(await page.getByTestId('apply-launch-pid').textContent());
  expect(pid).toBeGreaterThan(1);
  const object = page.getByTestId('apply-launch-object-0');
  await expect(object).toHaveAttribute('data-matches', '1');
  await expect(object).toContainText('bind → node 0');
  await expect(object).toContainText(`node 0: ${SHARED_BYTES.toLocaleString('en-US')}`); // the whole mapping, page-aligned
  await expect(page.getByTestId('apply-launch-unmatched')).toHaveCount(0);
  await expect(page.getByTestId('apply-launch-threads').locator('li').first()).toHaveAttribute('data-pinned', '1');
  await expect(page.getByTestId('apply-launch-threads')).toContainText('testload-w0');
  // One node here: the panel says the placement is node 0 either way.
  await expect(page.getByTestId('apply-launch-one-node')).toContainText('one NUMA node');
  await screenshot(page.getByTestId('apply-panel'), 'apply-launch');

  // The server's own record of the run agrees.
  const runs = (await (await fetch(`${serve!.base}/api/runs`, { headers: { Authorization: `Bearer ${serve!.token}` } })).json()) as {
    runs: Array<{ pid: number; status: string; report: { objects: Array<{ matches: number }> } }>;
  };
  const mine = runs.runs.find((r) => r.pid === pid);
  expect(mine?.status).toBe('exited');
  expect(mine?.report.objects[0]?.matches).toBe(1);
});

test('a launch the server refuses shows its code and message', async ({ page }) => {
  await page.goto(`${serve!.base}/?token=${serve!.token}&view=live`);
  expect(await idleState(page)).toBe('ready');
  const other = plan(true);
  other.target.machine.nodeIds = [0, 1];
  await loadPlan(page, other, 'two-nodes.plan.json');
  await page.getByTestId('apply-launch').click();
  const err = page.getByTestId('apply-launch-error');
  await expect(err).toHaveAttribute('data-code', 'run-refused');
  await expect(err).toContainText('nodes [0, 1]');
});
