/**
 * Apply a plan through Live mode against a real `numascope serve` and a real
 * `numascope-testload` child: load a plan JSON through the panel's file input, dry run (nothing
 * changes), apply (the worker thread is pinned to node 0's cpus, checked in /proc), roll back
 * (the previous affinity is back), and a plan for another pid (pid-mismatch shown with its code).
 * This machine has one NUMA node: the page move is to node 0 (real move_pages calls, no-ops for
 * the kernel); to make the pinning visible the worker is first narrowed to one cpu with taskset.
 */
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import { finishedLoad, idleState, screenshot, valueOf } from '../fixtures/app.js';
import { SAMPLE_TRACES_DIR } from '../fixtures/expectations.js';
import { startServe, TESTLOAD } from '../fixtures/serve.js';
import type { Serve } from '../fixtures/serve.js';

test.describe.configure({ mode: 'serial' });

let serve: Serve | null = null;
let load: ChildProcessWithoutNullStreams | null = null;
let pid = 0;
let tid = 0;
let addr = '';
let len = 0;
let node0Cpus: number[] = [];
/** The worker's allowed cpus before anything is applied (narrowed by taskset). */
let narrowed = '';

function allowedCpus(p: number, t: number): string {
  const status = readFileSync(`/proc/${p}/task/${t}/status`, 'utf8');
  return /^Cpus_allowed_list:\s*(\S+)$/m.exec(status)![1]!;
}

function cpuList(cpus: number[]): string {
  const parts: string[] = [];
  const s = [...cpus].sort((a, b) => a - b);
  let lo = s[0]!;
  let hi = lo;
  for (const c of s.slice(1)) {
    if (c === hi + 1) hi = c;
    else {
      parts.push(lo === hi ? `${lo}` : `${lo}-${hi}`);
      lo = hi = c;
    }
  }
  parts.push(lo === hi ? `${lo}` : `${lo}-${hi}`);
  return parts.join(',');
}

function plan(forPid: number) {
  return {
    format: 'numascope-plan',
    version: 1,
    createdAt: '2026-01-01T00:00:00Z',
    source: { trace: null, policy: 'manual', seed: null, summary: 'e2e: move the testload buffer to node 0 and pin its worker there' },
    target: { pid: forPid, startTimeTicks: null, command: [TESTLOAD], machine: { nodeIds: [0], distances: null } },
    pageRanges: [{ start: addr, end: `0x${(BigInt(addr) + BigInt(len)).toString(16)}`, action: 'move', toNodes: [0], expectedNodes: null, reason: 'e2e' }],
    threads: [{ tid, toNodes: [0], expectedNode: null, reason: 'e2e' }],
    expected: { pagesToMove: 0, bytesToMove: 0, pagesPerNodeAfter: { '0': len / 4096 }, threadsToPin: 1 },
  };
}

async function loadPlan(page: Page, p: object, name = 'plan.json') {
  await page.getByTestId('apply-plan-file').setInputFiles({ name, mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(p)) });
  await expect(page.getByTestId('apply-plan')).toContainText(name);
}

test.beforeAll(async () => {
  serve = await startServe();
  const child = spawn(TESTLOAD, ['--threads', '1', '--mib', '4', '--seconds', '0', '--hold', '30'], { stdio: ['pipe', 'pipe', 'pipe'] });
  load = child;
  pid = child.pid!;
  const buffer = await new Promise<string>((resolve, reject) => {
    let out = '';
    let line: string | null = null;
    const timer = setTimeout(() => reject(new Error(`the testload printed no "holding" line in 10 s:\n${out}`)), 10_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      line ??= /^buffer .*$/m.exec(out)?.[0] ?? null;
      if (line && /^holding/m.test(out)) {
        clearTimeout(timer);
        resolve(line);
      }
    });
    child.on('exit', (code) => reject(new Error(`the testload exited (${code}):\n${out}`)));
  });
  const field = (k: string) => buffer.split(/\s+/).find((w) => w.startsWith(k))!.slice(k.length);
  tid = Number(field('tid='));
  addr = field('addr=');
  len = Number(field('len='));
  const topo = (await (await fetch(`${serve.base}/api/topology`, { headers: { Authorization: `Bearer ${serve.token}` } })).json()) as {
    nodes: Array<{ id: number; cpus: number[] }>;
  };
  node0Cpus = topo.nodes.find((x) => x.id === 0)!.cpus;
  // Narrow the worker to one cpu, so that pinning it to node 0 (all cpus here) is a visible change.
  execFileSync('taskset', ['-p', '-c', String(node0Cpus[0]), String(tid)], { stdio: 'ignore' });
  narrowed = allowedCpus(pid, tid);
  expect(narrowed).toBe(String(node0Cpus[0]));
});

test.afterAll(async () => {
  if (load && load.exitCode === null && load.signalCode === null) {
    const exited = new Promise((r) => load!.once('exit', r));
    load.kill('SIGKILL');
    await exited;
  }
  load = null;
  await serve?.stop();
  serve = null;
});

test('dry run, apply and roll back a plan file through Live mode', async ({ page }) => {
  test.setTimeout(30_000);
  await page.goto(`${serve!.base}/?token=${serve!.token}`);
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
  await page.goto(`${serve!.base}/?token=${serve!.token}`);
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
  await page.goto(`${serve!.base}/?token=${serve!.token}`);
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
