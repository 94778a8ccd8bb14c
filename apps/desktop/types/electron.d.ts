// The slice of Electron's API that src/main.ts and src/preload.ts use. The electron package
// cannot be installed here (its binary downloads at first use, platform.md Q7); delete this file
// once `electron` is a devDependency and its own types apply.
declare module 'electron' {
  export interface WebContents {
    send(channel: string, ...args: unknown[]): void;
    setWindowOpenHandler(h: (d: { url: string }) => { action: 'allow' | 'deny' }): void;
    on(event: 'will-navigate', l: (e: { preventDefault(): void }, url: string) => void): void;
    isDestroyed(): boolean;
  }
  export class BrowserWindow {
    constructor(opts: Record<string, unknown>);
    webContents: WebContents;
    loadFile(p: string): Promise<void>;
    static getAllWindows(): BrowserWindow[];
  }
  export const app: {
    whenReady(): Promise<void>;
    getPath(name: 'userData' | 'temp'): string;
    on(event: string, l: (...a: unknown[]) => void): void;
    quit(): void;
  };
  export interface IpcMainInvokeEvent {
    sender: WebContents;
  }
  export const ipcMain: { handle(channel: string, l: (e: IpcMainInvokeEvent, ...args: unknown[]) => unknown): void };
  export const dialog: {
    showOpenDialog(o: Record<string, unknown>): Promise<{ canceled: boolean; filePaths: string[] }>;
    showSaveDialog(o: Record<string, unknown>): Promise<{ canceled: boolean; filePath?: string }>;
  };
  export const shell: { openExternal(url: string): Promise<void> };
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
