// The Electron shell (src/main.ts) with electron mocked: window security settings, the CSP, external
// links, and one validated ipcMain.handle per channel.
import { describe, expect, it, vi } from 'vitest';

const m = vi.hoisted(() => ({
  handles: new Map<string, (e: unknown, ...a: unknown[]) => unknown>(),
  windows: [] as { opts: Record<string, unknown>; openHandler?: (d: { url: string }) => unknown; navigate?: (e: { preventDefault(): void }, url: string) => void }[],
  openExternal: vi.fn(async (_u: string) => {}),
}));

vi.mock('electron', () => {
  class BrowserWindow {
    webContents: Record<string, unknown>;
    constructor(opts: Record<string, unknown>) {
      const rec: (typeof m.windows)[number] = { opts };
      m.windows.push(rec);
      this.webContents = {
        setWindowOpenHandler: (h: (d: { url: string }) => unknown) => (rec.openHandler = h),
        on: (_ev: string, l: (e: { preventDefault(): void }, url: string) => void) => (rec.navigate = l),
      };
    }
    loadFile() {
      return Promise.resolve();
    }
    static getAllWindows() {
      return [];
    }
  }
  return {
    app: { whenReady: () => new Promise(() => {}), getPath: () => '/tmp', on: () => {}, quit: () => {} },
    BrowserWindow,
    ipcMain: { handle: (c: string, l: (e: unknown, ...a: unknown[]) => unknown) => m.handles.set(c, l) },
    shell: { openExternal: m.openExternal },
    dialog: {},
    session: {},
  };
});

process.env.NUMASCOPE_DESKTOP_NO_AUTOSTART = '1';
const main = await import('../src/main');
const { INVOKE_CHANNELS } = await import('../src/channels');

describe('Electron shell', () => {
  it('creates windows with isolation, sandbox and no node integration', () => {
    main.createWindow({ preload: '/p/preload.cjs', index: '/w/index.html' });
    const prefs = m.windows[0]!.opts.webPreferences as Record<string, unknown>;
    expect(prefs).toMatchObject({ contextIsolation: true, nodeIntegration: false, sandbox: true, webSecurity: true, webviewTag: false });
    expect(prefs.preload).toBe('/p/preload.cjs');
  });

  it('opens links in the system browser and never in the app', () => {
    const w = m.windows[0]!;
    expect(w.openHandler!({ url: 'https://example.org/' })).toEqual({ action: 'deny' });
    expect(m.openExternal).toHaveBeenCalledWith('https://example.org/');
    m.openExternal.mockClear();
    expect(w.openHandler!({ url: 'file:///etc/passwd' })).toEqual({ action: 'deny' });
    const prevent = vi.fn();
    w.navigate!({ preventDefault: prevent }, 'https://evil.example/');
    expect(prevent).toHaveBeenCalled();
    expect(m.openExternal).toHaveBeenCalledTimes(1);
  });

  it('has a strict CSP: no remote content, no inline or eval scripts', () => {
    expect(main.CSP).toContain("default-src 'self'");
    expect(main.CSP).toContain("script-src 'self';");
    expect(main.CSP).not.toMatch(/unsafe-eval|https?:|\*/);
    expect(main.CSP).toContain("object-src 'none'");
  });

  it('wires every channel to the validating dispatch', async () => {
    const dispatch = vi.fn(async () => 'r');
    main.wireIpc({ dispatch } as never);
    expect([...m.handles.keys()].sort()).toEqual([...INVOKE_CHANNELS].sort());
    await m.handles.get(INVOKE_CHANNELS[0]!)!({ sender: {} }, 1, 2);
    expect(dispatch).toHaveBeenCalledWith(INVOKE_CHANNELS[0], [1, 2]);
  });
});
