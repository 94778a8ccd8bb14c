// The slice of Electron's API that src/main.ts and src/preload.ts use. The electron package is not
// a dependency (its binary downloads at install, and it needs Node >= 22.12; `npm run desktop`
// installs it on a machine with internet, docs/desktop.md), so tsc checks against this slice.
// Delete this file if `electron` ever becomes a devDependency and its own types apply.
declare namespace NodeJS {
  interface Process {
    /** Electron: true when started as `electron APP_PATH` (development). */
    defaultApp?: boolean;
    /** Electron: the packaged app's resources directory. */
    resourcesPath: string;
  }
}

declare module 'electron' {
  export interface WebContents {
    send(channel: string, ...args: unknown[]): void;
    setWindowOpenHandler(h: (d: { url: string }) => { action: 'allow' | 'deny' }): void;
    on(event: 'will-navigate', l: (e: { preventDefault(): void }, url: string) => void): void;
    on(event: 'did-finish-load', l: () => void): void;
    isDestroyed(): boolean;
  }
  export class BrowserWindow {
    constructor(opts: Record<string, unknown>);
    webContents: WebContents;
    loadFile(p: string): Promise<void>;
    loadURL(url: string): Promise<void>;
    on(event: 'closed', l: () => void): void;
    isMinimized(): boolean;
    restore(): void;
    focus(): void;
    static getAllWindows(): BrowserWindow[];
  }
  export const app: {
    whenReady(): Promise<void>;
    getPath(name: 'userData' | 'temp'): string;
    getName(): string;
    readonly isPackaged: boolean;
    requestSingleInstanceLock(): boolean;
    on(event: 'open-file', l: (e: { preventDefault(): void }, path: string) => void): void;
    on(event: 'second-instance', l: (e: unknown, argv: string[], workingDirectory: string) => void): void;
    on(event: 'before-quit', l: (e: { preventDefault(): void }) => void): void;
    on(event: 'window-all-closed', l: () => void): void;
    quit(): void;
  };
  export interface IpcMainInvokeEvent {
    sender: WebContents;
  }
  export const ipcMain: { handle(channel: string, l: (e: IpcMainInvokeEvent, ...args: unknown[]) => unknown): void };
  export const dialog: {
    showOpenDialog(o: Record<string, unknown>): Promise<{ canceled: boolean; filePaths: string[] }>;
    showSaveDialog(o: Record<string, unknown>): Promise<{ canceled: boolean; filePath?: string }>;
    showErrorBox(title: string, content: string): void;
  };
  export const shell: { openExternal(url: string): Promise<void>; openPath(path: string): Promise<string> };
  export interface MenuItemConstructorOptions {
    id?: string;
    label?: string;
    role?: string;
    type?: 'normal' | 'separator' | 'submenu';
    accelerator?: string;
    enabled?: boolean;
    submenu?: MenuItemConstructorOptions[];
    click?: () => void;
  }
  export class Menu {
    static buildFromTemplate(template: MenuItemConstructorOptions[]): Menu;
    static setApplicationMenu(menu: Menu | null): void;
  }
  export const protocol: {
    registerSchemesAsPrivileged(schemes: { scheme: string; privileges: Record<string, boolean> }[]): void;
    handle(scheme: string, handler: (req: Request) => Response | Promise<Response>): void;
  };
  export const session: {
    defaultSession: {
      webRequest: {
        onHeadersReceived(
          l: (d: { responseHeaders?: Record<string, string[]> }, cb: (r: { responseHeaders: Record<string, string[]> }) => void) => void,
        ): void;
      };
      setPermissionRequestHandler(h: (wc: unknown, permission: string, cb: (ok: boolean) => void) => void): void;
    };
  };
  export interface IpcRendererEvent {
    sender: unknown;
  }
  export const ipcRenderer: {
    invoke(channel: string, ...args: unknown[]): Promise<unknown>;
    on(channel: string, l: (e: IpcRendererEvent, ...args: unknown[]) => void): void;
    removeListener(channel: string, l: (e: IpcRendererEvent, ...args: unknown[]) => void): void;
  };
  export const contextBridge: { exposeInMainWorld(key: string, api: unknown): void };
}
