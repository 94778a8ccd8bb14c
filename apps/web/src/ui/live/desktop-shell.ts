/**
 * Desktop mode, the shell part: native open/save dialogs and the application menu's commands
 * (apps/desktop/src/api.ts: openTrace, openRecent, saveTrace, onCommand; the commands are sent by
 * apps/desktop/src/main-logic/menu.ts and launch.ts). Outside the desktop app none of this is
 * used: the file input, downloads and the header buttons behave as on the web.
 *
 * App registers the open handler (setDesktopOpenHandler): the Open buttons and the menu's Open
 * both end there, so a native dialog's file goes through the same load path as a picked file.
 */

import { desktopCommand } from '@numascope/protocol';
import type { DesktopShellBridge, OpenedTrace } from '@numascope/protocol';

/** The part of NumascopeDesktopApi (apps/desktop/src/api.ts) this module uses. */
export type { DesktopShellBridge };

/** The trace views a command can switch to (apps/web/src/ui/url-state.ts VIEWS). */
export const COMMAND_VIEWS = ['overview', 'memory', 'threads', 'traffic', 'compare', 'decisions', 'recommend', 'diagnose', 'machine', 'code'] as const;
export type CommandView = (typeof COMMAND_VIEWS)[number];

export type DesktopCommand =
  | { command: 'open' | 'save' | 'export-png' | 'export-svg' | 'export-markdown' | 'view-live' }
  | { command: 'view'; view: CommandView }
  | { command: 'open-path'; path: string };

/** The desktop shell bridge when the page runs inside the Electron app (with the file API), else null. */
export function desktopShell(): DesktopShellBridge | null {
  if (typeof window === 'undefined') return null;
  const b = (window as unknown as { numascopeDesktop?: Partial<DesktopShellBridge> }).numascopeDesktop;
  if (!b || b.isDesktop !== true) return null;
  if (typeof b.openTrace !== 'function' || typeof b.saveTrace !== 'function' || typeof b.onCommand !== 'function' || typeof b.openRecent !== 'function')
    return null;
  return b as DesktopShellBridge;
}

/**
 * Checks a command from the main process with the protocol's schema (main validated it before
 * sending; the page checks again, as it does live messages) and maps `view-NAME` to a view.
 * Unknown or malformed commands give null.
 */
export function parseDesktopCommand(raw: unknown): DesktopCommand | null {
  const r = desktopCommand.safeParse(raw);
  if (!r.success) return null;
  const c = r.data;
  if (c.command === 'open-path') return { command: 'open-path', path: c.path };
  if (c.command === 'view-live') return { command: 'view-live' };
  if (c.command.startsWith('view-')) {
    const view = c.command.slice(5);
    return (COMMAND_VIEWS as readonly string[]).includes(view) ? { command: 'view', view: view as CommandView } : null;
  }
  return { command: c.command as 'open' };
}

let openHandler: (() => void) | null = null;

/** App's "open through the native dialog" (set once on mount). */
export function setDesktopOpenHandler(h: (() => void) | null): void {
  openHandler = h;
}

/**
 * What an Open button does in desktop mode: App's handler, or (no App, e.g. a component test)
 * the dialog directly, handing the file to `onFile`.
 */
export function requestDesktopOpen(onFile: (f: File) => void): void {
  if (openHandler) return openHandler();
  const shell = desktopShell();
  if (!shell) return;
  void shell.openTrace().then(
    (t) => t && onFile(openedToFile(t)),
    () => {},
  );
}

/** An opened trace as a File, so it takes the same load path as a picked or dropped file. */
export function openedToFile(t: OpenedTrace): File {
  return new File([t.bytes.slice()], t.name, { type: 'application/x-numascope' });
}

/**
 * Saves trace bytes: through the native save dialog in desktop mode (returns the path, or null
 * when cancelled), else with `download` (returns null).
 */
export async function saveTraceBytes(bytes: ArrayBuffer | Uint8Array, fileName: string, download: (b: Blob, name: string) => void): Promise<string | null> {
  const shell = desktopShell();
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  if (shell) return shell.saveTrace(u8, fileName);
  download(new Blob([u8.slice()], { type: 'application/octet-stream' }), fileName);
  return null;
}
