/**
 * Desktop mode in Chromium: the page runs the desktop app's real preload (bundled for Chromium
 * with an 'electron' shim, fixtures/desktop-bridge.ts), whose IPC reaches the real main-process
 * modules (apps/desktop/src/main-logic, the real napi addon) over page.exposeFunction. The web UI
 * detects desktop mode, records a real child process through the native API (no `numascope
 * serve`), streams live windows and opens the trace; opens and saves traces through the native
 * dialogs; follows the application menu's commands; opens files handed over on the command line.
 * Electron itself cannot run here (no binary; docs/desktop.md).
 */
import { expect, test } from '@playwright/test';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createAppHandler, CSP } from '../../apps/desktop/src/main-logic/app-protocol.js';
import { installDesktop } from '../fixtures/desktop-bridge.js';
import { finishedLoad, idleState, valueOf } from '../fixtures/app.js';
import { expectationsFor, REPO_ROOT, SAMPLE_TRACES_DIR } from '../fixtures/expectations.js';
import { TESTLOAD } from '../fixtures/serve.js';

test('desktop mode: record a real child through the native API, live windows, trace opens', async ({ page }) => {
  test.setTimeout(30_000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'numascope-desktop-e2e-'));
  try {
    const { logic } = await installDesktop(page, dir);
    await page.goto('/');
    // Desktop mode opens on Live and is connected without any token.
    expect(await idleState(page)).toBe('ready');
    await expect(page.getByTestId('live-capabilities')).toBeVisible();

    // Bad payloads are refused by the main-process validation, naming the field.
    const refused = await page.evaluate(() =>
      (window as unknown as { numascopeDesktop: { startRecording(o: unknown): Promise<unknown> } }).numascopeDesktop
        .startRecording({ pid: 'self', output: '/etc/passwd' })
        .then(() => 'accepted', (e: Error) => e.message),
    );
    expect(refused).toMatch(/numascope:start-recording: opts\.pid: /);

    await page.getByTestId('live-mode-command').check();
    await page.getByTestId('live-command').fill(`${TESTLOAD} --threads 2 --mib 8 --seconds 10`);
    await page.getByTestId('live-start').click();
    await expect(page.getByTestId('live-status')).toContainText('Recording…');
    await page.waitForFunction(() => Number(document.body.dataset.liveSeq) >= 1);
    const firstElapsed = await valueOf(page.getByTestId('live-elapsed'));
    await page.waitForFunction(() => Number(document.body.dataset.liveSeq) >= 4);
    // The elapsed time shown advances (polled: a window can arrive before the display ticks).
    await expect.poll(() => valueOf(page.getByTestId('live-elapsed')), { timeout: 10_000 }).toBeGreaterThan(firstElapsed);
    expect(await valueOf(page.getByTestId('live-faults'))).toBeGreaterThan(0);
    expect(await valueOf(page.getByTestId('live-pages'))).toBeGreaterThan(0);
    await expect(page.getByTestId('live-threads').locator('tbody tr')).not.toHaveCount(0);

    const id = (await page.getByTestId('live-recording').getAttribute('data-recording'))!;
    await page.getByTestId('live-stop').click();
    expect(await finishedLoad(page, 2)).toBe('ready');
    await expect(page.getByTestId('trace-source')).toHaveText(`numascope-${id}.numascope`);

    // The views show the trace file the collector wrote.
    const rec = await logic.recordings.settled(id);
    expect(rec.summary?.stopReason).toBe('signal');
    const e = expectationsFor(new Uint8Array(await logic.recordings.trace(id)));
    expect(await valueOf(page.getByTestId('total-threads'))).toBe(e.threads);
    expect(await valueOf(page.getByTestId('total-samples'))).toBe(e.samples);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('desktop mode: native open and save dialogs, menu commands, files from the command line', async ({ page }) => {
  test.setTimeout(60_000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'numascope-desktop-e2e-'));
  try {
    const desktop = await installDesktop(page, dir);
    const sample = path.join(SAMPLE_TRACES_DIR, 'two-groups.numascope');
    // A command sent before the page loaded (a file on the command line) waits for it.
    await desktop.opener.openArgv(['/opt/numascope/numascope-desktop', '--no-sandbox', sample, path.join(dir, 'missing.numascope')], {
      defaultApp: false,
      cwd: dir,
    });
    expect(desktop.errors).toEqual([`${path.join(dir, 'missing.numascope')}: no such file`]);
    expect(desktop.commands.pending).toEqual([{ command: 'open-path', path: sample }]);
    await page.goto('/');
    // (Desktop mode opens on Live; the trace replaces it when the command arrives.)
    await expect(page.getByTestId('trace-source')).toHaveText('two-groups.numascope');
    expect(await idleState(page)).toBe('ready');
    const e = expectationsFor(new Uint8Array(fs.readFileSync(sample)));
    expect(await valueOf(page.getByTestId('total-samples'))).toBe(e.samples);

    // The header's Open is the native dialog, not a file input.
    await expect(page.locator('header [data-testid="file-input"]')).toHaveCount(0);
    const partitioned = path.join(SAMPLE_TRACES_DIR, 'partitioned.numascope');
    desktop.dialogs.open = partitioned;
    await page.locator('header').getByTestId('open-native').click();
    await expect(page.getByTestId('trace-source')).toHaveText('partitioned.numascope');
    expect(await idleState(page)).toBe('ready');
    expect((await desktop.logic.files.recent()).map((r) => r.name)).toEqual(['partitioned.numascope', 'two-groups.numascope']);

    // Save trace: the native save dialog writes the same bytes.
    const saved = path.join(dir, 'saved copy.numascope');
    desktop.dialogs.save = saved;
    await page.getByTestId('save-trace').click();
    await expect.poll(() => fs.existsSync(saved)).toBe(true);
    expect(fs.readFileSync(saved).equals(fs.readFileSync(partitioned))).toBe(true);

    // View menu: each item switches the view (the same command path for all; Compare, which starts
    // the policy engine, is left out to keep the run light).
    await desktop.click('view-memory');
    await expect(page.getByTestId('tab-memory')).toHaveAttribute('aria-selected', 'true');
    await desktop.click('view-threads');
    await expect(page.getByTestId('tab-threads')).toHaveAttribute('aria-selected', 'true');
    await desktop.click('view-overview');
    await expect(page.getByTestId('tab-overview')).toHaveAttribute('aria-selected', 'true');

    // File ▸ Export View ▸ As SVG does what the SVG button does.
    const download = page.waitForEvent('download');
    await desktop.click('export-svg');
    expect((await download).suggestedFilename()).toMatch(/^partitioned-overview.*\.svg$/);

    // Open Recent: the saved copy (the most recent file now) opens through the validated openRecent.
    const recent = (await desktop.menu()).flatMap((m) => m.submenu ?? []).find((i) => i.id === 'open-recent')!.submenu!;
    expect(recent[0]!.label).toBe(`saved copy.numascope — ${dir}`);
    await desktop.click('recent-0');
    await expect(page.getByTestId('trace-source')).toHaveText('saved copy.numascope');
    expect(await idleState(page)).toBe('ready');

    // File ▸ Open with the dialog cancelled changes nothing; a file that cannot be read is an error view.
    desktop.dialogs.open = null;
    await desktop.click('open');
    await expect(page.getByTestId('trace-source')).toHaveText('saved copy.numascope');
    fs.rmSync(saved);
    await desktop.click('recent-0');
    await expect(page.getByTestId('error-view')).toBeVisible();
    await expect(page.getByTestId('error-message')).toContainText('no such file');

    // The renderer cannot open a file it was not handed.
    const refused = await page.evaluate(() =>
      (window as unknown as { numascopeDesktop: { openRecent(p: string): Promise<unknown> } }).numascopeDesktop
        .openRecent('/etc/passwd')
        .then(() => 'opened', (err: Error) => err.message),
    );
    expect(refused).toMatch(/is not a recent file/);

    // View ▸ Live.
    await desktop.click('view-live');
    await expect(page.getByTestId('live-capabilities')).toBeVisible();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("the built web UI works under the desktop app's CSP, served by its app:// handler", async ({ page }) => {
  test.setTimeout(60_000);
  // The handler main.ts gives protocol.handle('app'), behind a loopback HTTP server (Chromium
  // cannot load app:// outside Electron): same files, same headers, same-origin rules.
  const handler = createAppHandler(path.join(REPO_ROOT, 'apps', 'web', 'dist'), CSP);
  const server = http.createServer((req, res) => {
    void handler(new Request(`app://numascope${req.url ?? '/'}`, { method: req.method })).then(async (r) => {
      res.writeHead(r.status, Object.fromEntries(r.headers));
      res.end(Buffer.from(await r.arrayBuffer()));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'numascope-desktop-e2e-'));
  const violations: string[] = [];
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
  });
  try {
    await installDesktop(page, dir);
    await page.addInitScript(() =>
      document.addEventListener('securitypolicyviolation', (e) => console.error(`Refused to load: CSP ${e.violatedDirective} ${e.blockedURI} at ${e.sourceFile}:${e.lineNumber}:${e.columnNumber} ${e.sample}`)),
    );
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const res = await page.goto(`${base}/index.html?trace=samples/two-groups.numascope`);
    expect(res!.headers()['content-security-policy']).toBe(CSP);
    // Scripts, the trace Worker and the fetch of a bundled sample all run under the CSP.
    expect(await finishedLoad(page, 1)).toBe('ready');
    await expect(page.getByTestId('trace-source')).toHaveText('samples/two-groups.numascope');
    for (const v of ['memory', 'threads', 'traffic']) {
      await page.getByTestId(`tab-${v}`).click();
      await expect(page.getByTestId(`tab-${v}`)).toHaveAttribute('aria-selected', 'true');
      expect(await idleState(page)).toBe('ready');
    }
    // What the page may not do: load remote content.
    const remote = await page.evaluate(() => fetch('https://example.org/').then(() => 'loaded', (e: Error) => e.name));
    expect(remote).toBe('TypeError');
    await expect.poll(() => violations.some((v) => v.includes('example.org'))).toBe(true);
    // Nothing was blocked but eval: zod (policy-engine) probes `new Function` once for its JIT and
    // falls back when the CSP refuses it (the views above work).
    expect(violations.filter((v) => !v.includes('example.org') && !/CSP script-src eval /.test(v))).toEqual([]);
  } finally {
    server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
