/**
 * Desktop mode keeps the live loop (issue 35 item 2): after a recording of a launched command that
 * was left running, the loop panel is saved by the desktop app's main-process store (the real
 * apps/desktop/src/main-logic/loops.ts behind the real preload, fixtures/desktop-bridge.ts) as a
 * JSON file in its loop directory, and a window reload brings the panel back from it.
 */
import { expect, test } from '@playwright/test';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { installDesktop } from '../fixtures/desktop-bridge.js';
import { finishedLoad, idleState } from '../fixtures/app.js';
import { TESTLOAD } from '../fixtures/serve.js';

test('desktop mode: the loop is kept by the app and a reload brings it back', async ({ page }) => {
  test.setTimeout(60_000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'numascope-desktop-loop-e2e-'));
  let pid = 0;
  try {
    const { logic } = await installDesktop(page, dir);
    await page.goto('/');
    expect(await idleState(page)).toBe('ready');
    await page.getByTestId('live-mode-command').check();
    await page.getByTestId('live-command').fill(`${TESTLOAD} --threads 1 --mib 4 --seconds 0.2 --hold 40`);
    await page.getByTestId('live-start').click();
    await expect(page.getByTestId('live-status')).toContainText('Recording…');
    await page.waitForFunction(() => Number(document.body.dataset.liveSeq) >= 2);
    const id = (await page.getByTestId('live-recording').getAttribute('data-recording'))!;
    await page.getByTestId('live-stop').click();
    expect(await finishedLoad(page, 2)).toBe('ready');

    await page.getByTestId('open-live').click();
    const loop = page.getByTestId('loop');
    await expect(loop).toBeVisible();
    pid = Number(await loop.getAttribute('data-pid'));
    expect(pid).toBeGreaterThan(0);
    await expect(page.getByTestId('loop-kept')).toHaveAttribute('data-kept', 'saved');
    await expect(page.getByTestId('loop-kept')).toContainText('Kept by the desktop app');
    await expect(page.getByTestId('loop-kept')).not.toContainText('keeps no loop');
    // One JSON file for the recording in the app's loop directory.
    expect(await logic.loops.list()).toEqual([id]);
    const kept = JSON.parse(fs.readFileSync(path.join(logic.loops.dir, `${id}.json`), 'utf8')) as { format: string; before: { pid: number } };
    expect(kept).toMatchObject({ format: 'numascope-loop', before: { pid } });

    await page.reload();
    expect(await idleState(page)).toBe('ready');
    await expect(page.getByTestId('loop')).toHaveAttribute('data-pid', String(pid));
    await expect(page.getByTestId('loop-kept')).toHaveAttribute('data-restored', /^\d{4}-/);
    await expect(page.getByTestId('loop-kept')).toContainText('Brought back from the desktop app');
  } finally {
    if (pid > 0) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
