// The Electron shell (src/main.ts) with electron mocked: window security settings, the CSP, external
// links, one validated ipcMain.handle per channel, and main(): the single-instance lock, the
// app:// scheme, the application menu (rebuilt when the recent files change), files from the
// command line / a second instance / open-file reaching the renderer as `open-path` commands once
// the page has loaded, and recordings stopped before quitting.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';

type Listener = (...a: unknown[]) => unknown;
interface FakeWindow {
  opts: Record<string, unknown>;
  url?: string;
  openHandler?: (d: { url: string }) => unknown;
  wc: Map<string, Listener>;
  win: Map<string, Listener>;
  sent: [string, unknown][];
  focused: number;
}

const m = vi.hoisted(() => ({
  handles: new Map<string, (e: unknown, ...a: unknown[]) => unknown>(),
  windows: [] as FakeWindow[],
  openExternal: vi.fn(async (_u: string) => {}),
  openPath: vi.fn(async (_p: string) => ''),
  appOn: new Map<string, Listener>(),
  lock: true,
  quit: vi.fn(),
  schemes: [] as unknown[],
  protocolHandlers: new Map<string, (req: Request) => Promise<Response>>(),
  menus: [] as unknown[][],
  errors: [] as [string, string][],
  userData: '',
}));

vi.mock('electron', () => {
  class BrowserWindow {
    webContents: Record<string, unknown>;
    private rec: FakeWindow;
    constructor(opts: Record<string, unknown>) {
      const rec: FakeWindow = { opts, wc: new Map(), win: new Map(), sent: [], focused: 0 };
      this.rec = rec;
      m.windows.push(rec);
      this.webContents = {
        setWindowOpenHandler: (h: (d: { url: string }) => unknown) => (rec.openHandler = h),
        on: (ev: string, l: Listener) => rec.wc.set(ev, l),
        send: (c: string, v: unknown) => rec.sent.push([c, v]),
        isDestroyed: () => false,
      };
    }
    on(ev: string, l: Listener) {
      const prev = this.rec.win.get(ev);
      this.rec.win.set(ev, prev ? (...a: unknown[]) => (prev(...a), l(...a)) : l);
    }
    loadURL(url: string) {
      this.rec.url = url;
      return Promise.resolve();
    }
    isMinimized() {
      return false;
    }
    restore() {}
    focus() {
      this.rec.focused++;
    }
    static getAllWindows() {
      return [];
    }
  }
  return {
    app: {
      whenReady: () => Promise.resolve(),
      getPath: () => m.userData,
      getName: () => 'numascope',
      isPackaged: false,
      requestSingleInstanceLock: () => m.lock,
      on: (ev: string, l: Listener) => m.appOn.set(ev, l),
      quit: m.quit,
    },
    BrowserWindow,
    ipcMain: { handle: (c: string, l: (e: unknown, ...a: unknown[]) => unknown) => m.handles.set(c, l) },
    shell: { openExternal: m.openExternal, openPath: m.openPath },
    dialog: { showErrorBox: (t: string, c: string) => m.errors.push([t, c]) },
    Menu: {
      buildFromTemplate: (t: unknown[]) => ({ template: t }),
      setApplicationMenu: (menu: { template: unknown[] }) => m.menus.push(menu.template),
    },
    protocol: {
      registerSchemesAsPrivileged: (s: unknown[]) => m.schemes.push(...s),
      handle: (scheme: string, h: (req: Request) => Promise<Response>) => m.protocolHandlers.set(scheme, h),
    },
    session: {
      defaultSession: {
        webRequest: { onHeadersReceived: () => {} },
        setPermissionRequestHandler: () => {},
      },
    },
  };
});

// A stand-in addon: main() must not need a built collector to start (the real one is tested elsewhere).
vi.mock('../src/main-logic/addon', () => ({
  loadAddon: () => ({
    probe: async () => ({}),
    topology: async () => ({ nodes: [] }),
    startRecording: () => ({ result: new Promise(() => {}), stop: () => {} }),
    apply: async () => ({}),
  }),
  bindingDir: () => '/nonexistent',
}));

const { tmpdir } = await import('./helpers');
const dir = tmpdir();
m.userData = path.join(dir, 'user');
const renderer = path.join(dir, 'renderer');
fs.mkdirSync(renderer, { recursive: true });
fs.writeFileSync(path.join(renderer, 'index.html'), '<!doctype html><title>numascope</title>');
const trace = path.join(dir, 'first.numascope');
fs.writeFileSync(trace, 'first');
const second = path.join(dir, 'second.numascope');
fs.writeFileSync(second, 'second');
process.env.NUMASCOPE_WEB_DIR = renderer;
process.env.NUMASCOPE_DESKTOP_NO_AUTOSTART = '1';
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
  delete process.env.NUMASCOPE_WEB_DIR;
});

const main = await import('../src/main');
const { CSP } = await import('../src/main-logic/app-protocol');
const { CHANNELS, COMMAND_CHANNEL, INVOKE_CHANNELS } = await import('../src/channels');
const { findItem } = await import('../src/main-logic/menu');
type Item = import('../src/main-logic/menu').MenuItemTemplate;

describe('Electron shell', () => {
  it('creates windows with isolation, sandbox and no node integration', () => {
    main.createWindow({ preload: '/p/preload.cjs', url: 'app://numascope/index.html' });
    const prefs = m.windows[0]!.opts.webPreferences as Record<string, unknown>;
    expect(prefs).toMatchObject({ contextIsolation: true, nodeIntegration: false, sandbox: true, webSecurity: true, webviewTag: false });
    expect(prefs.preload).toBe('/p/preload.cjs');
    expect(m.windows[0]!.url).toBe('app://numascope/index.html');
  });

  it('opens links in the system browser and never in the app', () => {
    const w = m.windows[0]!;
    expect(w.openHandler!({ url: 'https://example.org/' })).toEqual({ action: 'deny' });
    expect(m.openExternal).toHaveBeenCalledWith('https://example.org/');
    m.openExternal.mockClear();
    expect(w.openHandler!({ url: 'file:///etc/passwd' })).toEqual({ action: 'deny' });
    const prevent = vi.fn();
    w.wc.get('will-navigate')!({ preventDefault: prevent }, 'https://evil.example/');
    expect(prevent).toHaveBeenCalled();
    expect(m.openExternal).toHaveBeenCalledTimes(1);
    w.wc.get('will-navigate')!({ preventDefault: prevent }, 'app://numascope/');
    expect(prevent).toHaveBeenCalledTimes(2);
    expect(m.openExternal).toHaveBeenCalledTimes(1);
  });

  it('has a strict CSP: no remote content, no inline or eval scripts (WebAssembly compiles: the ZSTD decoder)', () => {
    expect(CSP).toContain("default-src 'self'");
    expect(CSP).toContain("script-src 'self' 'wasm-unsafe-eval';");
    expect(CSP).toContain("connect-src 'self' data:;");
    expect(CSP).not.toMatch(/'unsafe-eval'|https?:|\*/);
    expect(CSP.split('; ').find((d) => d.startsWith('script-src'))).not.toMatch(/'unsafe-inline'|'unsafe-eval'/);
    expect(CSP).toContain("object-src 'none'");
  });

  it('wires every channel to the validating dispatch', async () => {
    const dispatch = vi.fn(async () => 'r');
    main.wireIpc({ dispatch } as never);
    expect([...m.handles.keys()].sort()).toEqual([...INVOKE_CHANNELS].sort());
    await m.handles.get(INVOKE_CHANNELS[0]!)!({ sender: {} }, 1, 2);
    expect(dispatch).toHaveBeenCalledWith(INVOKE_CHANNELS[0], [1, 2]);
  });
});

describe('main()', () => {
  it('a second launch hands over to the first and quits', async () => {
    m.lock = false;
    await main.main();
    expect(m.quit).toHaveBeenCalledTimes(1);
    expect(m.schemes).toEqual([]);
    m.lock = true;
    m.quit.mockClear();
  });

  it('starts: app:// scheme, menu, window; a file on the command line opens once the page has loaded', async () => {
    m.windows.length = 0;
    m.handles.clear();
    const argv = process.argv;
    process.argv = ['/opt/numascope/numascope-desktop', '--no-sandbox', trace, path.join(dir, 'missing.numascope')];
    try {
      await main.main();
    } finally {
      process.argv = argv;
    }
    expect(m.schemes).toEqual([{ scheme: 'app', privileges: expect.objectContaining({ standard: true, secure: true, supportFetchAPI: true }) }]);
    const win = m.windows[0]!;
    expect(win.url).toBe('app://numascope/index.html');
    expect(win.opts.webPreferences).toMatchObject({ sandbox: true, contextIsolation: true });

    // The renderer is served by the app:// handler, with the CSP.
    const res = await m.protocolHandlers.get('app')!(new Request('app://numascope/index.html'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toBe(CSP);

    // The missing file is reported; the good one waits for the page.
    await vi.waitFor(() => expect(m.errors).toEqual([['numascope', `${path.join(dir, 'missing.numascope')}: no such file`]]));
    expect(win.sent).toEqual([]);
    win.wc.get('did-finish-load')!();
    expect(win.sent).toEqual([[COMMAND_CHANNEL, { command: 'open-path', path: trace }]]);

    // The renderer opens it through the validating openRecent channel; the menu then lists it.
    const menusBefore = m.menus.length;
    const opened = (await m.handles.get(CHANNELS.openRecent)!({}, trace)) as { name: string };
    expect(opened.name).toBe('first.numascope');
    await vi.waitFor(() => expect(m.menus.length).toBeGreaterThan(menusBefore));
    const template = m.menus[m.menus.length - 1] as Item[];
    const recent = findItem(template, 'open-recent')!.submenu!;
    expect(recent[0]!.label).toBe(`first.numascope — ${dir}`);
    await expect(m.handles.get(CHANNELS.openRecent)!({}, second)).rejects.toThrow(/not a recent file/);
  });

  it('menu clicks reach the renderer as commands; Help opens the bundled documents', () => {
    const win = m.windows[0]!;
    win.sent.length = 0;
    const template = m.menus[m.menus.length - 1] as Item[];
    findItem(template, 'open')!.click!();
    findItem(template, 'view-compare')!.click!();
    findItem(template, 'recent-0')!.click!();
    expect(win.sent).toEqual([
      [COMMAND_CHANNEL, { command: 'open' }],
      [COMMAND_CHANNEL, { command: 'view-compare' }],
      [COMMAND_CHANNEL, { command: 'open-path', path: trace }],
    ]);
    findItem(template, 'help-user-guide')!.click!();
    expect(m.openPath).toHaveBeenCalledWith(expect.stringMatching(/docs\/user-guide\.md$/));
  });

  it('a second instance with a file, and macOS open-file, open it in this window', async () => {
    const win = m.windows[0]!;
    win.sent.length = 0;
    m.appOn.get('second-instance')!({}, ['/opt/numascope/numascope-desktop', '--original-process-start-time=1', 'second.numascope'], dir);
    await vi.waitFor(() => expect(win.sent).toEqual([[COMMAND_CHANNEL, { command: 'open-path', path: second }]]));
    expect(win.focused).toBeGreaterThan(0);
    expect(((await m.handles.get(CHANNELS.openRecent)!({}, second)) as { name: string }).name).toBe('second.numascope');
    const prevent = vi.fn();
    m.appOn.get('open-file')!({ preventDefault: prevent }, trace);
    expect(prevent).toHaveBeenCalled();
    await vi.waitFor(() => expect(win.sent[win.sent.length - 1]).toEqual([COMMAND_CHANNEL, { command: 'open-path', path: trace }]));
  });

  it('commands wait while no window is loaded (closed), and flow again after the next load', async () => {
    const win = m.windows[0]!;
    win.win.get('closed')!();
    win.sent.length = 0;
    const template = m.menus[m.menus.length - 1] as Item[];
    findItem(template, 'save')!.click!();
    expect(win.sent).toEqual([]);
    win.wc.get('did-finish-load')!();
    expect(win.sent).toEqual([[COMMAND_CHANNEL, { command: 'save' }]]);
  });

  it('quitting stops the recordings first, then quits', async () => {
    const prevent = vi.fn();
    m.appOn.get('before-quit')!({ preventDefault: prevent });
    expect(prevent).toHaveBeenCalledTimes(1);
    await vi.waitFor(() => expect(m.quit).toHaveBeenCalledTimes(1));
    m.appOn.get('before-quit')!({ preventDefault: prevent });
    expect(prevent).toHaveBeenCalledTimes(1);
  });
});
