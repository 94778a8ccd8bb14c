/**
 * The Electron shell: the only module that imports 'electron' at run time besides the preload.
 * Window security (contextIsolation, no nodeIntegration, sandbox, strict CSP, no navigation away,
 * new windows → system browser), the renderer served from app://numascope/ (main-logic/app-protocol),
 * one ipcMain.handle per channel through the validating dispatch of main-logic/handlers.ts, the
 * application menu (main-logic/menu), and trace files handed to the app (main-logic/launch:
 * argv, second instance, open-file). Not loaded by tests except with vi.mock('electron').
 */
import { app, BrowserWindow, dialog, ipcMain, Menu, protocol, session, shell } from 'electron';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DesktopCommand } from '@numascope/protocol/commands';
import type { RecentFile } from './api';
import { COMMAND_CHANNEL, INVOKE_CHANNELS, LIVE_CHANNEL } from './channels';
import { loadAddon } from './main-logic/addon';
import { APP_INDEX_URL, APP_SCHEME, APP_SCHEME_PRIVILEGES, createAppHandler, CSP } from './main-logic/app-protocol';
import { cliRollback } from './main-logic/apply';
import { createMainLogic } from './main-logic/handlers';
import type { MainLogic } from './main-logic/handlers';
import { RendererCommands, ShellOpener } from './main-logic/launch';
import { buildMenuTemplate, HELP_DOCS } from './main-logic/menu';
import type { HelpDoc } from './main-logic/menu';
import { appPaths } from './main-logic/paths';

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

export function createWindow(opts: { preload: string; url: string; commands?: RendererCommands }): BrowserWindow {
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
  const commands = opts.commands;
  if (commands) {
    // The preload keeps commands until the page subscribes, so sending after the load is enough.
    win.webContents.on('did-finish-load', () => commands.attach((c: DesktopCommand) => win.webContents.send(COMMAND_CHANNEL, c)));
    win.on('closed', () => commands.detach());
  }
  void win.loadURL(opts.url);
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

/** The application menu over the current recent files. */
export function setMenu(logic: MainLogic, commands: RendererCommands, recent: readonly RecentFile[], docsDir: string): void {
  const template = buildMenuTemplate({
    platform: process.platform,
    appName: app.getName(),
    recent,
    send: (c) => commands.send(c),
    openDoc: (file: HelpDoc) => {
      if (HELP_DOCS.some((d) => d.file === file)) void shell.openPath(path.join(docsDir, file));
    },
    openExternal: (url) => {
      if (isExternalUrl(url)) void shell.openExternal(url);
    },
    homepage: process.env.NUMASCOPE_HOMEPAGE ?? null,
    clearRecent: () => void logic.files.clearRecent(),
    devTools: !app.isPackaged,
  });
  Menu.setApplicationMenu(Menu.buildFromTemplate(template));
}

export async function main(): Promise<void> {
  // One app instance: a second launch (a .numascope file opened from the desktop) hands its argv
  // to this one and quits.
  if (!app.requestSingleInstanceLock()) {
    app.quit();
    return;
  }
  protocol.registerSchemesAsPrivileged([{ scheme: APP_SCHEME, privileges: { ...APP_SCHEME_PRIVILEGES } }]);
  const paths = appPaths({ here, isPackaged: app.isPackaged, resourcesPath: process.resourcesPath, env: process.env });
  // The addon's recorder finds the allocation-site shim through NUMASCOPE_ALLOC_SHIM first (beside
  // the addon second): name the packaged (resources/native) or built copy explicitly.
  if (paths.allocShim && !process.env.NUMASCOPE_ALLOC_SHIM) process.env.NUMASCOPE_ALLOC_SHIM = paths.allocShim;

  let logic: MainLogic;
  try {
    logic = createMainLogic({
      addon: loadAddon(paths.bindingDir ?? undefined),
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
      loopDir: path.join(app.getPath('userData'), 'loops'),
      workDir: path.join(app.getPath('temp'), 'numascope-recordings'),
      rollback: cliRollback(paths.cliBin),
      openExternal: async (url) => {
        if (isExternalUrl(url)) await shell.openExternal(url);
      },
      sendLive: (envelope) => {
        for (const w of BrowserWindow.getAllWindows()) if (!w.webContents.isDestroyed()) w.webContents.send(LIVE_CHANNEL, envelope);
      },
    });
  } catch (e) {
    dialog.showErrorBox('numascope cannot start', e instanceof Error ? e.message : String(e));
    app.quit();
    return;
  }

  const commands = new RendererCommands();
  let win: BrowserWindow | null = null;
  const opener = new ShellOpener({
    grant: (f) => logic.files.grant(f),
    send: (c) => commands.send(c),
    showError: (m) => dialog.showErrorBox('numascope', m),
    focus: () => {
      if (!win) return;
      if (win.isMinimized()) win.restore();
      win.focus();
    },
  });
  // macOS hands files over with open-file, possibly before 'ready' (queued in `commands`).
  app.on('open-file', (e, file) => {
    e.preventDefault();
    void opener.openPaths([file]);
  });
  app.on('second-instance', (_e, argv, workingDirectory) => {
    void opener.openArgv(argv, { defaultApp: process.defaultApp === true, cwd: workingDirectory });
  });

  await app.whenReady();
  setupSession();
  protocol.handle(APP_SCHEME, createAppHandler(paths.rendererDir, CSP));
  wireIpc(logic);
  logic.files.onRecentChange = (recent) => setMenu(logic, commands, recent, paths.docsDir);
  setMenu(logic, commands, await logic.files.recent(), paths.docsDir);
  win = createWindow({ preload: paths.preload, url: APP_INDEX_URL, commands });
  win.on('closed', () => (win = null));
  void opener.openArgv(process.argv, { defaultApp: process.defaultApp === true, cwd: process.cwd() });

  // Recordings are stopped (their traces written) and a benchmark run told to stop before the app exits, however it is quit.
  let stopped = false;
  app.on('before-quit', (e) => {
    if (stopped) return;
    e.preventDefault();
    logic.bench.stopAll();
    void logic.recordings.stopAll().finally(() => {
      stopped = true;
      app.quit();
    });
  });
  app.on('window-all-closed', () => app.quit());
}

if (process.env.NUMASCOPE_DESKTOP_NO_AUTOSTART !== '1') void main();
