/**
 * The Electron shell: the only module that imports 'electron' at run time besides the preload.
 * Window security (contextIsolation, no nodeIntegration, sandbox, strict CSP, no navigation away,
 * new windows → system browser), and one ipcMain.handle per channel through the validating
 * dispatch of main-logic/handlers.ts. Not loaded by tests except with vi.mock('electron').
 */
import { app, BrowserWindow, dialog, ipcMain, session, shell } from 'electron';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { INVOKE_CHANNELS, LIVE_CHANNEL } from './channels';
import { loadAddon } from './main-logic/addon';
import { cliRollback } from './main-logic/apply';
import { createMainLogic } from './main-logic/handlers';
import type { MainLogic } from './main-logic/handlers';

/** No remote content: scripts, styles, workers and fetches from the app's own files only. */
export const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "worker-src 'self' blob:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const here = path.dirname(fileURLToPath(import.meta.url));

export function isExternalUrl(url: string): boolean {
  try {
    const u = new URL(url);
    return u.protocol === 'https:' || u.protocol === 'http:';
  } catch {
    return false;
  }
}

export const WEB_PREFERENCES = {
  contextIsolation: true,
  nodeIntegration: false,
  sandbox: true,
  webSecurity: true,
  allowRunningInsecureContent: false,
  webviewTag: false,
  spellcheck: false,
} as const;

export function createWindow(opts: { preload: string; index: string }): BrowserWindow {
  const win = new BrowserWindow({
    width: 1400,
    height: 900,
    title: 'numascope',
    webPreferences: { ...WEB_PREFERENCES, preload: opts.preload },
  });
  win.webContents.setWindowOpenHandler(({ url }) => {
    if (isExternalUrl(url)) void shell.openExternal(url);
    return { action: 'deny' };
  });
  win.webContents.on('will-navigate', (e, url) => {
    e.preventDefault();
    if (isExternalUrl(url)) void shell.openExternal(url);
  });
  void win.loadFile(opts.index);
  return win;
}

export function wireIpc(logic: MainLogic): void {
  for (const channel of INVOKE_CHANNELS) ipcMain.handle(channel, (_e, ...args) => logic.dispatch(channel, args));
}

export function setupSession(): void {
  session.defaultSession.webRequest.onHeadersReceived((d, cb) =>
    cb({ responseHeaders: { ...(d.responseHeaders ?? {}), 'Content-Security-Policy': [CSP] } }),
  );
  session.defaultSession.setPermissionRequestHandler((_wc, _permission, cb) => cb(false));
}

export async function main(): Promise<void> {
  await app.whenReady();
  setupSession();
  const logic = createMainLogic({
    addon: loadAddon(),
    dialogs: {
      showOpen: async (o) => {
        const r = await dialog.showOpenDialog({ ...o, properties: ['openFile'] });
        return r.canceled ? null : (r.filePaths[0] ?? null);
      },
      showSave: async (o) => {
        const r = await dialog.showSaveDialog(o);
        return r.canceled || !r.filePath ? null : r.filePath;
      },
    },
    recentFilesPath: path.join(app.getPath('userData'), 'recent-files.json'),
    workDir: path.join(app.getPath('temp'), 'numascope-recordings'),
    rollback: cliRollback(process.env.NUMASCOPE_BIN ?? 'numascope'),
    openExternal: async (url) => {
      if (isExternalUrl(url)) await shell.openExternal(url);
    },
    sendLive: (envelope) => {
      for (const w of BrowserWindow.getAllWindows()) if (!w.webContents.isDestroyed()) w.webContents.send(LIVE_CHANNEL, envelope);
    },
  });
  wireIpc(logic);
  createWindow({
    preload: path.join(here, 'preload.cjs'),
    index: process.env.NUMASCOPE_WEB_INDEX ?? path.join(here, '..', '..', 'web', 'dist', 'index.html'),
  });
  app.on('window-all-closed', () => {
    void logic.recordings.stopAll().finally(() => app.quit());
  });
}

if (process.env.NUMASCOPE_DESKTOP_NO_AUTOSTART !== '1') void main();
