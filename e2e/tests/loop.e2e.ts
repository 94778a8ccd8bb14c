/**
 * The live loop against a real `numascope serve` and a real `numascope-testload` it launches:
 * record the command, stop (it keeps running: the collector leaves it running), recommend, dry
 * run, apply and verify on the same pid, record that pid again (attached), and see before/after
 * side by side. This machine has one NUMA node: the engine recommends nothing, the plan is the
 * placement check, its dry run finds every page already on node 0 and applying it is trivially
 * satisfied, all asserted as the app says them.
 */
import { expect, test } from '@playwright/test';
import { finishedLoad, idleState, screenshot, valueOf } from '../fixtures/app.js';
import { apiJson, procState } from '../fixtures/live-load.js';
import { TESTLOAD, startServe, type Serve } from '../fixtures/serve.js';

test.describe.configure({ mode: 'serial' });

let serve: Serve | null = null;
let pid = 0;

test.beforeAll(async () => {
  serve = await startServe();
});

test.afterAll(async () => {
  // The testload was left running by design: end it here.
  if (pid > 0 && procState(pid) !== null) process.kill(pid, 'SIGKILL');
  await serve?.stop();
  serve = null;
});

test('record, stop (it keeps running), recommend, dry run, apply, record the same pid again, before/after', async ({ page }) => {
  test.setTimeout(150_000);
  const api = (apiPath: string) => apiJson(serve!, apiPath);
  const topo = await api('/api/topology');
  const nodeIds = (topo.nodes as Array<{ id: number }>).map((x) => x.id);

  await page.goto(`${serve!.base}/?token=${serve!.token}&view=live`);
  expect(await idleState(page)).toBe('ready');

  // 1. Record a launched command: its main thread touches the shared buffer at once; the workers
  // map and touch their own buffers 25 s later (during the second recording), then all hold.
  await page.getByTestId('live-command').fill(`${TESTLOAD} --threads 2 --mib 4 --shared-mib 4 --delay 25 --seconds 0.2 --hold 60`);
  await page.getByTestId('live-start').click();
  await expect(page.getByTestId('live-status')).toContainText('Recording…');
  // Pages in, and the workers holding (the default sampling is adaptive: not every page is sampled).
  await page.waitForFunction(
    () => Number(document.querySelector('[data-testid="live-pages"]')?.getAttribute('data-value') ?? 0) > 0 && Number(document.body.dataset.liveSeq) >= 4,
  );
  await page.getByTestId('live-stop').click();
  expect(await finishedLoad(page, 2)).toBe('ready');

  // 2. Back on Live: the process is still running, not stopped, and the loop is offered.
  await page.getByTestId('open-live').click();
  await expect(page.getByTestId('live-status')).toContainText('Stopped on request.');
  await expect(page.getByTestId('live-apply-note')).toContainText('still running');
  const loop = page.getByTestId('loop');
  await expect(loop).toBeVisible();
  pid = Number(await loop.getAttribute('data-pid'));
  expect(pid).toBeGreaterThan(0);
  expect(['S', 'R']).toContain(procState(pid));
  await expect(page.getByTestId('loop-left-running')).toContainText(`pid ${pid} is still running`);
  const first = (await api('/api/recordings')).recordings[0];
  expect(first.summary.leftRunning).toBe(true);
  expect(first.summary.pid).toBe(pid);

  // 3. Recommend: the engine on this recording. One node: nothing to recommend, a placement check instead.
  await page.getByTestId('loop-recommend').click();
  await expect(page.getByTestId('loop-plan')).toBeVisible({ timeout: 30_000 });
  expect(await idleState(page)).toBe('ready');
  const planKind = await page.getByTestId('loop-plan').getAttribute('data-kind');
  if (nodeIds.length === 1) {
    expect(planKind).toBe('check');
    await expect(page.getByTestId('loop-why')).toContainText('one NUMA node');
  }
  await expect(page.getByTestId('loop-plan')).toContainText(`for pid ${pid}`);
  expect(Number(await page.getByTestId('loop-plan').getAttribute('data-ranges'))).toBeGreaterThan(0);
  await expect(page.getByTestId('loop-local').locator('td').first()).not.toHaveText('…');

  // 4. Dry run on the running process: nothing to move, every page on node 0 (or a refusal, said as such).
  await page.getByTestId('loop-dry-run').click();
  const dry = page.getByTestId('loop-dry-verdict').or(page.getByTestId('loop-dry-refused'));
  await expect(dry).toBeVisible();
  expect(await idleState(page)).toBe('ready');
  if (nodeIds.length === 1) {
    await expect(page.getByTestId('loop-dry-verdict')).toContainText(`Nothing to move: every page is already on node ${nodeIds[0]}`);
    await expect(page.getByTestId('loop-dry-verdict')).toHaveAttribute('data-status', 'dry-run');
  }

  // One count per thing: the dry run's pages to move are the plan's, or the verdict names the
  // difference (a page whose node the recording did not get counts as one to move in the plan,
  // and the dry run finds it on its node: seen in CI as plan 1, dry run 0).
  const dryToMove = Number(await page.getByTestId('loop-dry-verdict').getAttribute('data-to-move'));
  const planPages = Number(await page.getByTestId('loop-plan-pages').getAttribute('data-value'));
  if (dryToMove !== planPages) {
    await expect(page.getByTestId('loop-dry-verdict')).toContainText(`The plan counted ${planPages.toLocaleString('en-US')} page`);
    await expect(page.getByTestId('loop-dry-verdict')).toContainText(`${dryToMove.toLocaleString('en-US')} now`);
  }

  // 5. Apply and verify: trivially satisfied here.
  await page.getByTestId('loop-apply').click();
  await expect(page.getByTestId('loop-apply-verdict').or(page.getByTestId('loop-apply-refused'))).toBeVisible();
  expect(await idleState(page)).toBe('ready');
  if (nodeIds.length === 1) {
    await expect(page.getByTestId('loop-apply-verdict')).toContainText('Trivially satisfied: nothing needed to change');
    await expect(page.getByTestId('loop-apply-verdict')).toContainText('Verified:');
    await expect(page.getByTestId('loop-apply-verdict')).toHaveAttribute('data-status', 'complete');
  }
  // The apply's pages to move are the dry run's, and it accounts for each: moved, not moved, not attempted.
  const applied = page.getByTestId('loop-apply-verdict');
  if ((await applied.count()) > 0) {
    const attr = async (name: string) => Number(await applied.getAttribute(name));
    expect(await attr('data-to-move')).toBe(dryToMove);
    expect((await attr('data-moved')) + (await attr('data-not-moved')) + (await attr('data-not-attempted'))).toBe(dryToMove);
  }
  expect(['S', 'R']).toContain(procState(pid));
  await screenshot(loop, 'loop-applied');

  // The loop is kept with the server (issue 35): a reload, and a new tab on the same server,
  // bring back the panel with its plan, dry run and apply, from the record the server keeps.
  const verdicts = async (p: typeof page) => [await p.getByTestId('loop-dry-verdict').innerText(), await p.getByTestId('loop-apply-verdict').innerText()];
  const beforeReload = await verdicts(page);
  await expect(page.getByTestId('loop-kept')).toHaveAttribute('data-kept', 'saved');
  expect(new URL(page.url()).searchParams.get('loop')).toBe(first.id);
  await page.reload();
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('loop')).toHaveAttribute('data-pid', String(pid));
  await expect(page.getByTestId('loop-kept')).toHaveAttribute('data-restored', /^\d{4}-/);
  await expect(page.getByTestId('loop-plan-pages')).toHaveAttribute('data-value', String(planPages));
  expect(await verdicts(page)).toEqual(beforeReload);
  // A new tab opens on the home page, which names the loop and links back to it.
  const tab = await page.context().newPage();
  await tab.goto(`${serve!.base}/?token=${serve!.token}`);
  expect(await idleState(tab)).toBe('empty'); // the home page: no trace open
  await expect(tab.getByTestId('home-loop')).toHaveAttribute('data-recording', first.id);
  await expect(tab.getByTestId('home-loop')).toContainText(`pid ${pid}`);
  await tab.getByTestId('home-open-loop').click();
  expect(await idleState(tab)).toBe('ready');
  await expect(tab.getByTestId('loop')).toHaveAttribute('data-pid', String(pid));
  expect(await verdicts(tab)).toEqual(beforeReload);
  await tab.close();

  // 6. Record the same pid again (attached) until the workers have faulted their buffers in.
  await page.getByTestId('loop-duration').fill('60');
  await page.getByTestId('loop-record-again').click();
  await expect(page.getByTestId('live-recording')).toContainText(`pid ${pid}`);
  await expect(page.getByTestId('live-status')).toContainText('Recording…');
  await page.waitForFunction(() => Number(document.querySelector('[data-testid="live-pages"]')?.getAttribute('data-value') ?? 0) > 0, null, {
    timeout: 60_000,
  });
  await page.getByTestId('live-stop').click();
  // The second recording stays on Live: it fills in "after", the views do not take the screen.
  await expect(page.getByTestId('loop-open-after')).toBeVisible({ timeout: 30_000 });
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('live-status')).toContainText('Stopped on request.');
  await expect(page.getByTestId('live-status')).toContainText("the loop's second recording");
  await expect(page.getByTestId('loop-compare')).toBeVisible();
  const recs = (await api('/api/recordings')).recordings as Array<Record<string, any>>;
  expect(recs).toHaveLength(2);
  expect(recs[1]!.target).toEqual({ pid });
  expect(recs[1]!.summary.leftRunning).toBe(true);

  // 7. Before and after, side by side, from the same process.
  const compare = page.getByTestId('loop-compare');
  await expect(compare).toContainText(`(${recs[1]!.id})`);
  // The plan's pages per node, asked with move_pages before the apply and after the second recording.
  let placedBefore = 0;
  for (const node of nodeIds) {
    const cells = page.getByTestId(`loop-placed-${node}`).locator('td');
    await expect(cells.nth(1)).not.toHaveText('…');
    placedBefore += await valueOf(cells.nth(0));
    if (nodeIds.length === 1) expect(await valueOf(cells.nth(1))).toBe(await valueOf(cells.nth(0)));
    // Pages touched during each recording (live, measured): the first one faulted its buffers in.
    expect(await valueOf(page.getByTestId(`loop-pages-${node}`).locator('td').nth(0))).toBeGreaterThan(0);
    expect(await valueOf(page.getByTestId(`loop-pages-${node}`).locator('td').nth(1))).toBeGreaterThanOrEqual(0);
  }
  expect(placedBefore).toBeGreaterThan(0);
  const local = page.getByTestId('loop-local').locator('td');
  await expect(local.nth(1)).not.toHaveText('…', { timeout: 30_000 });
  expect(await idleState(page)).toBe('ready');
  if (nodeIds.length === 1) {
    // One node: every access is local, before and after.
    expect(await valueOf(local.nth(0))).toBe(1);
    expect(await valueOf(local.nth(1))).toBe(1);
  }
  expect(['S', 'R']).toContain(procState(pid));
  await screenshot(loop, 'loop-before-after');

  // After a reload the before/after table is back, the same cells, and "after" opens its trace.
  // The table fits its panel at this window's width: the row names wrap, nothing scrolls sideways.
  const fit = await compare.evaluate((t) => ({ table: t.getBoundingClientRect().width, panel: t.closest('[data-testid="loop"]')!.clientWidth }));
  expect(fit.table).toBeLessThanOrEqual(fit.panel);
  const table = await compare.innerText();
  await page.reload();
  expect(await idleState(page)).toBe('ready');
  await expect(page.getByTestId('loop-compare')).toContainText(`(${recs[1]!.id})`);
  await expect(page.getByTestId('loop-local').locator('td').nth(1)).not.toHaveText('…');
  expect(await page.getByTestId('loop-compare').innerText()).toBe(table);
  await page.getByTestId('loop-open-after').click();
  expect(await idleState(page)).toBe('ready');
  expect(new URL(page.url()).searchParams.get('recording')).toBe(recs[1]!.id);
});
