/**
 * The application menu as a plain template (no Electron): src/main.ts passes it to
 * Menu.buildFromTemplate and rebuilds it when the recent files change. Items that concern the
 * renderer (open, save, export, views) send one validated DesktopCommand; Quit, the Edit items,
 * zoom and full screen are Electron roles; Help opens the bundled documents outside the app.
 *
 * Shortcuts (CmdOrCtrl = Ctrl on Linux, Cmd on macOS): Open O, Save Trace As S, export PNG Shift+P,
 * SVG Shift+G, Markdown Shift+M, Overview 1, Memory 2, Threads 3, Traffic 4, Compare K,
 * Recommendations 5, Decisions 6, Diagnostics 7, Machine 8, Code 9, Live L, Quit Q.
 */
import path from 'node:path';
import type { DesktopCommand, DesktopCommandName } from '@numascope/protocol/commands';
import type { RecentFile } from '../api';

/** The Electron menu roles this template uses. */
export type MenuRole =
  | 'about'
  | 'services'
  | 'hide'
  | 'hideOthers'
  | 'unhide'
  | 'quit'
  | 'undo'
  | 'redo'
  | 'cut'
  | 'copy'
  | 'paste'
  | 'selectAll'
  | 'resetZoom'
  | 'zoomIn'
  | 'zoomOut'
  | 'togglefullscreen'
  | 'reload'
  | 'toggleDevTools'
  | 'help';

/** The subset of Electron's MenuItemConstructorOptions this template uses. */
export interface MenuItemTemplate {
  id?: string;
  label?: string;
  role?: MenuRole;
  type?: 'normal' | 'separator' | 'submenu';
  accelerator?: string;
  enabled?: boolean;
  submenu?: MenuItemTemplate[];
  click?: () => void;
}

/** Documents the Help menu opens (files of docs/, shipped with the packages). */
export const HELP_DOCS = [
  { id: 'help-user-guide', label: 'User Guide', file: 'user-guide.md' },
  { id: 'help-desktop', label: 'The Desktop App', file: 'desktop.md' },
  { id: 'help-trace-format', label: 'Trace Format', file: 'trace-format.md' },
  { id: 'help-plan-format', label: 'Plan Format', file: 'plan-format.md' },
] as const;

export type HelpDoc = (typeof HELP_DOCS)[number]['file'];

export interface MenuDeps {
  platform: NodeJS.Platform;
  appName: string;
  recent: readonly RecentFile[];
  /** Sends a command to the renderer (RendererCommands.send). */
  send(cmd: DesktopCommand): void;
  /** Opens one of HELP_DOCS outside the app (main.ts: shell.openPath of the bundled file). */
  openDoc(file: HelpDoc): void;
  /** Opens an http(s) URL in the system browser; the project's homepage when one is known. */
  openExternal(url: string): void;
  homepage?: string | null;
  clearRecent(): void;
  /** Adds Reload and Developer Tools to the View menu (development builds only). */
  devTools: boolean;
}

/** View menu entries: label, command, shortcut. */
export const VIEW_ITEMS: readonly { label: string; command: DesktopCommandName; accelerator: string }[] = [
  { label: 'Overview', command: 'view-overview', accelerator: 'CmdOrCtrl+1' },
  { label: 'Memory', command: 'view-memory', accelerator: 'CmdOrCtrl+2' },
  { label: 'Threads', command: 'view-threads', accelerator: 'CmdOrCtrl+3' },
  { label: 'Traffic per Policy', command: 'view-traffic', accelerator: 'CmdOrCtrl+4' },
  { label: 'Compare', command: 'view-compare', accelerator: 'CmdOrCtrl+K' },
  { label: 'Decisions', command: 'view-decisions', accelerator: 'CmdOrCtrl+6' },
  { label: 'Recommendations && Plan', command: 'view-recommend', accelerator: 'CmdOrCtrl+5' },
  { label: 'Diagnostics', command: 'view-diagnose', accelerator: 'CmdOrCtrl+7' },
  { label: 'Machine', command: 'view-machine', accelerator: 'CmdOrCtrl+8' },
  { label: 'Code', command: 'view-code', accelerator: 'CmdOrCtrl+9' },
  { label: 'Live', command: 'view-live', accelerator: 'CmdOrCtrl+L' },
];

/** The Open Recent label: `name — directory` (`&` doubled: a single one marks a mnemonic). */
export function recentLabel(r: RecentFile): string {
  return `${r.name} — ${path.dirname(r.path)}`.replace(/&/g, '&&');
}

export function buildMenuTemplate(deps: MenuDeps): MenuItemTemplate[] {
  const cmd = (command: DesktopCommandName) => () => deps.send({ command });
  const mac = deps.platform === 'darwin';
  const recentItems: MenuItemTemplate[] =
    deps.recent.length === 0
      ? [{ id: 'recent-none', label: 'No Recent Traces', enabled: false }]
      : [
          ...deps.recent.map((r, i) => ({
            id: `recent-${i}`,
            label: recentLabel(r),
            click: () => deps.send({ command: 'open-path', path: r.path }),
          })),
          { type: 'separator' as const },
          { id: 'recent-clear', label: 'Clear Recent', click: () => deps.clearRecent() },
        ];

  const file: MenuItemTemplate = {
    label: '&File',
    submenu: [
      { id: 'open', label: '&Open Trace…', accelerator: 'CmdOrCtrl+O', click: cmd('open') },
      { id: 'open-recent', label: 'Open &Recent', submenu: recentItems },
      { type: 'separator' },
      { id: 'save', label: '&Save Trace As…', accelerator: 'CmdOrCtrl+S', click: cmd('save') },
      {
        id: 'export',
        label: '&Export View',
        submenu: [
          { id: 'export-png', label: 'As &PNG…', accelerator: 'CmdOrCtrl+Shift+P', click: cmd('export-png') },
          { id: 'export-svg', label: 'As &SVG…', accelerator: 'CmdOrCtrl+Shift+G', click: cmd('export-svg') },
          { id: 'export-markdown', label: 'As &Markdown Summary…', accelerator: 'CmdOrCtrl+Shift+M', click: cmd('export-markdown') },
        ],
      },
      ...(mac ? [] : [{ type: 'separator' as const }, { id: 'quit', label: '&Quit', role: 'quit' as const, accelerator: 'CmdOrCtrl+Q' }]),
    ],
  };

  const edit: MenuItemTemplate = {
    label: '&Edit',
    submenu: [
      { role: 'undo' },
      { role: 'redo' },
      { type: 'separator' },
      { role: 'cut' },
      { role: 'copy' },
      { role: 'paste' },
      { role: 'selectAll' },
    ],
  };

  const view: MenuItemTemplate = {
    label: '&View',
    submenu: [
      ...VIEW_ITEMS.map((v) => ({ id: v.command, label: v.label, accelerator: v.accelerator, click: cmd(v.command) })),
      { type: 'separator' },
      { role: 'resetZoom' },
      { role: 'zoomIn' },
      { role: 'zoomOut' },
      { type: 'separator' },
      { role: 'togglefullscreen' },
      ...(deps.devTools ? [{ type: 'separator' as const }, { role: 'reload' as const }, { role: 'toggleDevTools' as const }] : []),
    ],
  };

  const help: MenuItemTemplate = {
    label: '&Help',
    role: 'help',
    submenu: [
      ...HELP_DOCS.map((d) => ({ id: d.id, label: d.label, click: () => deps.openDoc(d.file) })),
      ...(deps.homepage && /^https?:\/\//.test(deps.homepage)
        ? [{ type: 'separator' as const }, { id: 'help-homepage', label: 'numascope on the Web', click: () => deps.openExternal(deps.homepage!) }]
        : []),
    ],
  };

  const appMenu: MenuItemTemplate[] = mac
    ? [
        {
          label: deps.appName,
          submenu: [
            { role: 'about' },
            { type: 'separator' },
            { role: 'services' },
            { type: 'separator' },
            { role: 'hide' },
            { role: 'hideOthers' },
            { role: 'unhide' },
            { type: 'separator' },
            { id: 'quit', role: 'quit' },
          ],
        },
      ]
    : [];
  return [...appMenu, file, edit, view, help];
}

/** Depth-first search of a template by id (tests and main.ts). */
export function findItem(items: readonly MenuItemTemplate[], id: string): MenuItemTemplate | undefined {
  for (const it of items) {
    if (it.id === id) return it;
    const sub = it.submenu ? findItem(it.submenu, id) : undefined;
    if (sub) return sub;
  }
  return undefined;
}
