/**
 * The typed API the preload exposes to the renderer as `window.numascopeDesktop`. Shared by
 * src/preload.ts and the main-process handlers. Every request and response crosses IPC and is
 * validated by src/ipc-schema.ts. Types only (no runtime code).
 *
 * The shapes it exchanges about recordings, live windows, processes, the probe and plans, and the
 * parts of this API the web app calls (DesktopLiveBridge, DesktopShellBridge), are defined once in
 * @numascope/protocol: the desktop app sends the same messages as `numascope serve`, less serve's
 * URLs. Declaring NumascopeDesktopApi as an extension of those bridges is what keeps it and the web
 * app's calls in step.
 */
import type { DesktopBenchBridge, DesktopLiveBridge, DesktopShellBridge } from '@numascope/protocol';
import type { DesktopCommand } from '@numascope/protocol/commands';

export interface RecentFile {
  path: string;
  name: string;
  openedAtUnixMs: number;
}

export interface NumascopeDesktopApi extends DesktopLiveBridge, DesktopShellBridge, DesktopBenchBridge {
  recentFiles(): Promise<RecentFile[]>;
  /** Opens an http(s) URL in the system browser. */
  openExternal(url: string): Promise<void>;
  /**
   * Subscribes to the main process's commands (menus, shortcuts, files handed to the app); returns
   * the unsubscribe function. Commands sent before the first subscriber are kept and delivered to it.
   */
  onCommand(cb: (cmd: DesktopCommand) => void): () => void;
}

/** The method names of the API that are requests over ipcRenderer.invoke (all but the two subscriptions). */
export type InvokeMethod = Exclude<keyof NumascopeDesktopApi, 'onLiveWindow' | 'onCommand' | 'isDesktop'>;
