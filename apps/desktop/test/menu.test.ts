// The application menu template (main-logic/menu.ts) under Node: labels, shortcuts, and that each
// click sends the right validated command (or runs the right role / opens the right document).
import { describe, expect, it, vi } from 'vitest';
import type { DesktopCommand } from '@numascope/protocol/commands';
import type { RecentFile } from '../src/api';
import { COMMAND_NAMES } from '../src/channels';
import { parseCommand } from '../src/ipc-schema';
import { buildMenuTemplate, findItem, HELP_DOCS, recentLabel } from '../src/main-logic/menu';
import type { MenuDeps, MenuItemTemplate } from '../src/main-logic/menu';

const recent: RecentFile[] = [
  { path: '/home/u/traces/a.numascope', name: 'a.numascope', openedAtUnixMs: 2 },
  { path: '/srv/R&D/b.numascope', name: 'b.numascope', openedAtUnixMs: 1 },
];

function menu(over: Partial<MenuDeps> = {}) {
  const sent: DesktopCommand[] = [];
  const deps: MenuDeps = {
    platform: 'linux',
    appName: 'numascope',
    recent,
    // What main.ts does: RendererCommands.send validates every command.
    send: (c) => sent.push(parseCommand(c)),
    openDoc: vi.fn(),
    openExternal: vi.fn(),
    clearRecent: vi.fn(),
    devTools: false,
    ...over,
  };
  return { template: buildMenuTemplate(deps), sent, deps };
}

const labels = (items: readonly MenuItemTemplate[]) => items.map((i) => i.label ?? i.role ?? i.type);
const item = (t: MenuItemTemplate[], id: string) => {
  const it = findItem(t, id);
  if (!it) throw new Error(`no menu item ${id}`);
  return it;
};

describe('application menu', () => {
  it('has File, Edit, View and Help on Linux, and the app menu first on macOS', () => {
    expect(labels(menu().template)).toEqual(['&File', '&Edit', '&View', '&Help']);
    const mac = menu({ platform: 'darwin' }).template;
    expect(labels(mac)).toEqual(['numascope', '&File', '&Edit', '&View', '&Help']);
    // Quit lives in the app menu on macOS, in File elsewhere.
    expect(findItem(mac[1]!.submenu!, 'quit')).toBeUndefined();
    expect(item(mac, 'quit').role).toBe('quit');
  });

  it('File: open, recent, save, export and quit with their shortcuts and commands', () => {
    const { template, sent } = menu();
    const file = template[0]!.submenu!;
    expect(labels(file)).toEqual(['&Open Trace…', 'Open &Recent', 'separator', '&Save Trace As…', '&Export View', 'separator', '&Quit']);
    const expected: [string, string, DesktopCommand['command']][] = [
      ['open', 'CmdOrCtrl+O', 'open'],
      ['save', 'CmdOrCtrl+S', 'save'],
      ['export-png', 'CmdOrCtrl+Shift+P', 'export-png'],
      ['export-svg', 'CmdOrCtrl+Shift+G', 'export-svg'],
      ['export-markdown', 'CmdOrCtrl+Shift+M', 'export-markdown'],
    ];
    for (const [id, accel, command] of expected) {
      const it = item(template, id);
      expect(it.accelerator, id).toBe(accel);
      sent.length = 0;
      it.click!();
      expect(sent).toEqual([{ command }]);
    }
    const quit = item(template, 'quit');
    expect(quit).toMatchObject({ role: 'quit', accelerator: 'CmdOrCtrl+Q' });
    expect(quit.click).toBeUndefined();
  });

  it('Open Recent lists the recent files; a click opens that path; Clear Recent clears', () => {
    const { template, sent, deps } = menu();
    const sub = item(template, 'open-recent').submenu!;
    expect(sub.map((i) => i.label ?? i.type)).toEqual([
      'a.numascope — /home/u/traces',
      'b.numascope — /srv/R&&D',
      'separator',
      'Clear Recent',
    ]);
    sub[1]!.click!();
    expect(sent).toEqual([{ command: 'open-path', path: '/srv/R&D/b.numascope' }]);
    item(template, 'recent-clear').click!();
    expect(deps.clearRecent).toHaveBeenCalledTimes(1);
    expect(recentLabel(recent[0]!)).toBe('a.numascope — /home/u/traces');

    const empty = item(menu({ recent: [] }).template, 'open-recent').submenu!;
    expect(empty).toEqual([{ id: 'recent-none', label: 'No Recent Traces', enabled: false }]);
  });

  it('View: every view and Live, each with its own shortcut and command; Compare is CmdOrCtrl+K', () => {
    const { template, sent } = menu();
    const view = template[2]!.submenu!;
    const views = view.filter((i) => i.id?.startsWith('view-'));
    expect(views.map((v) => [v.label, v.accelerator])).toEqual([
      ['Overview', 'CmdOrCtrl+1'],
      ['Memory', 'CmdOrCtrl+2'],
      ['Threads', 'CmdOrCtrl+3'],
      ['Traffic per Policy', 'CmdOrCtrl+4'],
      ['Compare', 'CmdOrCtrl+K'],
      ['Decisions', 'CmdOrCtrl+6'],
      ['Recommendations && Plan', 'CmdOrCtrl+5'],
      ['Diagnostics', 'CmdOrCtrl+7'],
      ['Machine', 'CmdOrCtrl+8'],
      ['Code', 'CmdOrCtrl+9'],
      ['Live', 'CmdOrCtrl+L'],
    ]);
    for (const v of views) v.click!();
    expect(sent.map((c) => c.command)).toEqual([
      'view-overview',
      'view-memory',
      'view-threads',
      'view-traffic',
      'view-compare',
      'view-decisions',
      'view-recommend',
      'view-diagnose',
      'view-machine',
      'view-code',
      'view-live',
    ]);
    expect(view.map((i) => i.role).filter(Boolean)).toEqual(['resetZoom', 'zoomIn', 'zoomOut', 'togglefullscreen']);
    const dev = menu({ devTools: true }).template[2]!.submenu!;
    expect(dev.map((i) => i.role).filter(Boolean)).toContain('toggleDevTools');
  });

  it('every command the menu can send is a known command, and every known command has a menu item', () => {
    const { template, sent } = menu();
    const walk = (items: readonly MenuItemTemplate[]) => {
      for (const i of items) {
        if (i.click && !i.id?.startsWith('help-') && i.id !== 'recent-clear') i.click();
        if (i.submenu) walk(i.submenu);
      }
    };
    walk(template);
    const names = new Set(sent.map((c) => c.command));
    for (const c of COMMAND_NAMES) expect(names.has(c), c).toBe(true);
    expect(names.has('open-path')).toBe(true);
  });

  it('no two items share a shortcut', () => {
    const accels: string[] = [];
    const walk = (items: readonly MenuItemTemplate[]) =>
      items.forEach((i) => {
        if (i.accelerator) accels.push(i.accelerator);
        if (i.submenu) walk(i.submenu);
      });
    walk(menu().template);
    expect(new Set(accels).size).toBe(accels.length);
  });

  it('Help opens the bundled documents, and the homepage only when it is an http(s) URL', () => {
    const { template, deps } = menu();
    const help = template[3]!;
    expect(help.role).toBe('help');
    expect(help.submenu!.map((i) => i.label)).toEqual(HELP_DOCS.map((d) => d.label));
    item(template, 'help-user-guide').click!();
    expect(deps.openDoc).toHaveBeenCalledWith('user-guide.md');
    expect(findItem(template, 'help-homepage')).toBeUndefined();
    expect(findItem(menu({ homepage: 'file:///etc/passwd' }).template, 'help-homepage')).toBeUndefined();
    const web = menu({ homepage: 'https://example.org/numascope' });
    item(web.template, 'help-homepage').click!();
    expect(web.deps.openExternal).toHaveBeenCalledWith('https://example.org/numascope');
  });
});
