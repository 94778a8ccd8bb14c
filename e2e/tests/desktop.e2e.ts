/**
 * Desktop mode in Chromium: the page gets a `window.numascopeDesktop` like the Electron preload's,
 * backed over a test bridge (page.exposeFunction → the desktop app's real main-process modules,
 * apps/desktop/src/main-logic, with the real napi addon). The web UI detects desktop mode, records
 * a real child process through the native API (no `numascope serve`), streams live windows, and
 * opens the trace. Electron itself cannot run here (no binary, docs/platform notes Q7).
 */
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CHANNELS } from '../../apps/desktop/src/channels.js';
import { loadAddon } from '../../apps/desktop/src/main-logic/addon.js';
import { createMainLogic } from '../../apps/desktop/src/main-logic/handlers.js';
import type { MainLogic } from '../../apps/desktop/src/main-logic/handlers.js';
import { finishedLoad, idleState, valueOf } from '../fixtures/app.js';
import { expectationsFor } from '../fixtures/expectations.js';
import { TESTLOAD } from '../fixtures/serve.js';

type Wire = { __bytes: string } | unknown;
const toWire = (v: unknown): Wire => (v instanceof Uint8Array ? { __bytes: Buffer.from(v).toString('base64') } : v);
const fromWire = (v: unknown): unknown =>
  v && typeof v === 'object' && '__bytes' in v ? new Uint8Array(Buffer.from(String((v as { __bytes: string }).__bytes), 'base64')) : v;

/** Installs the bridge: what the preload would expose, with ipcRenderer replaced by exposeFunction. */
async function installBridge(page: Page, dir: string): Promise<MainLogic> {
  const logic = createMainLogic({
    addon: loadAddon(),
    dialogs: { showOpen: async () => null, showSave: async () => null },
    recentFilesPath: path.join(dir, 'recent.json'),
    workDir: path.join(dir, 'recordings'),
    rollback: async () => {
      throw new Error('rollback is not part of this test');
    },
    openExternal: async () => {},
    sendLive: (envelope) => {
      page.evaluate((e) => (window as unknown as { __numascopeLive(e: unknown): void }).__numascopeLive(e), envelope).catch(() => {});
    },
  });
  await page.exposeFunction('__numascopeInvoke', async (channel: string, args: unknown[]) => {
    try {
      return { ok: toWire(await logic.dispatch(channel, args.map(fromWire))) };
    } catch (e) {
      return { error: `${(e as Error).name}: ${(e as Error).message}` };
    }
  });
  await page.addInitScript((channels: Record<string, string>) => {
    type Env = { id: string; message: unknown };
    const listeners = new Set<(e: Env) => void>();
    const w = window as unknown as Record<string, unknown>;
    w.__numascopeLive = (e: Env) => listeners.forEach((l) => l(e));
    const b64 = (u: Uint8Array) => btoa(Array.from(u, (c) => String.fromCharCode(c)).join(''));
    const unb64 = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
    const invoke = async (channel: string, ...args: unknown[]) => {
      const wire = args.map((a) => (a instanceof Uint8Array ? { __bytes: b64(a) } : a));
      const r = (await (w.__numascopeInvoke as (c: string, a: unknown[]) => Promise<{ ok?: unknown; error?: string }>)(channel, wire));
      if (r.error !== undefined) throw new Error(`Error invoking remote method '${channel}': ${r.error}`);
      const ok = r.ok as { __bytes?: string } | undefined;
      return ok && typeof ok === 'object' && typeof ok.__bytes === 'string' ? unb64(ok.__bytes) : ok;
    };
    const api: Record<string, unknown> = { isDesktop: true };
    for (const [method, channel] of Object.entries(channels)) api[method] = (...args: unknown[]) => invoke(channel, ...args);
    api.onLiveWindow = (id: string, cb: (m: unknown) => void) => {
      const l = (e: Env) => {
        if (e.id === id) cb(e.message);
      };
      listeners.add(l);
      return () => listeners.delete(l);
    };
    w.numascopeDesktop = Object.freeze(api);
  }, CHANNELS as Record<string, string>);
  return logic;
}

test('desktop mode: record a real child through the native API, live windows, trace opens', async ({ page }) => {
  test.setTimeout(30_000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'numascope-desktop-e2e-'));
  try {
    const logic = await installBridge(page, dir);
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
    expect(await valueOf(page.getByTestId('live-elapsed'))).toBeGreaterThan(firstElapsed);
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
