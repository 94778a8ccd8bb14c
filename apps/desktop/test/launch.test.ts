// Trace files handed to the app from outside (main-logic/launch.ts) under Node: argv parsing as
// Electron passes it (packaged, development, second instance), the file checks and their messages,
// the command queue, and the whole path: a file on the command line → granted → `open-path` →
// the renderer's openRecent(path) through the validating dispatch.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it, vi } from 'vitest';
import type { DesktopCommand } from '@numascope/protocol/commands';
import { CHANNELS } from '../src/channels';
import { IpcValidationError } from '../src/ipc-schema';
import { checkTraceFile, fileArgs, RendererCommands, ShellOpener } from '../src/main-logic/launch';
import { realLogic, tmpdir } from './helpers';

const dir = tmpdir();
const trace = path.join(dir, 'run 1.numascope');
fs.writeFileSync(trace, 'PK-not-really-a-trace');
const other = path.join(dir, 'b.numascope');
fs.writeFileSync(other, 'x');
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('fileArgs', () => {
  it('packaged: skips the executable and switches, resolves relative paths against cwd', () => {
    expect(fileArgs(['/opt/numascope/numascope-desktop', 'a.numascope', '--no-sandbox', '-v', '/abs/b.numascope'], { defaultApp: false, cwd: '/home/u' })).toEqual([
      '/home/u/a.numascope',
      '/abs/b.numascope',
    ]);
    expect(fileArgs(['/opt/numascope/numascope-desktop'], { defaultApp: false, cwd: '/' })).toEqual([]);
  });

  it('development (electron APP_PATH …): the app path is not a file', () => {
    expect(fileArgs(['/x/electron', 'apps/desktop', 't.numascope'], { defaultApp: true, cwd: '/repo' })).toEqual(['/repo/t.numascope']);
    expect(fileArgs(['/x/electron', '--inspect=9229', '.', '--enable-logging'], { defaultApp: true, cwd: '/repo' })).toEqual([]);
  });

  it("a second instance's argv with Chromium's appended switches", () => {
    const argv = ['/opt/numascope/numascope-desktop', '--allow-file-access-from-files', '--original-process-start-time=1337', 'rel/t.numascope'];
    expect(fileArgs(argv, { defaultApp: false, cwd: '/work' })).toEqual(['/work/rel/t.numascope']);
  });

  it('file:// URLs (a desktop launcher’s %U) and arguments after --', () => {
    const url = pathToFileURL('/home/u/my trace.numascope').href;
    expect(fileArgs(['exe', url], { defaultApp: false, cwd: '/' })).toEqual(['/home/u/my trace.numascope']);
    expect(fileArgs(['exe', '--', '--odd.numascope'], { defaultApp: false, cwd: '/d' })).toEqual(['/d/--odd.numascope']);
  });
});

describe('checkTraceFile', () => {
  it('accepts an existing readable .numascope file', async () => {
    expect(await checkTraceFile(trace)).toEqual({ ok: true, path: trace });
  });

  it('says clearly what is wrong with the others', async () => {
    const missing = path.join(dir, 'gone.numascope');
    expect(await checkTraceFile(missing)).toMatchObject({ ok: false, message: `${missing}: no such file` });
    const notTrace = path.join(dir, 'notes.txt');
    fs.writeFileSync(notTrace, 'x');
    expect(await checkTraceFile(notTrace)).toMatchObject({ ok: false, message: expect.stringMatching(/is not a numascope trace/) });
    const folder = path.join(dir, 'folder.numascope');
    fs.mkdirSync(folder);
    expect(await checkTraceFile(folder)).toMatchObject({ ok: false, message: `${folder} is not a file` });
    if (process.getuid?.() !== 0) {
      // Root reads any file: the permission case only exists for other users.
      const locked = path.join(dir, 'locked.numascope');
      fs.writeFileSync(locked, 'x', { mode: 0o000 });
      expect(await checkTraceFile(locked)).toMatchObject({ ok: false, message: `${locked} cannot be read (permission denied)` });
    }
  });
});

describe('RendererCommands', () => {
  it('queues until a window attaches, then sends directly; refuses bad commands', () => {
    const rc = new RendererCommands();
    rc.send({ command: 'open' });
    rc.send({ command: 'open-path', path: '/a.numascope' });
    expect(rc.pending).toHaveLength(2);
    const got: DesktopCommand[] = [];
    rc.attach((c) => got.push(c));
    expect(got).toEqual([{ command: 'open' }, { command: 'open-path', path: '/a.numascope' }]);
    expect(rc.pending).toHaveLength(0);
    rc.send({ command: 'view-live' });
    expect(got).toHaveLength(3);
    expect(() => rc.send({ command: 'rm -rf' })).toThrow(IpcValidationError);
    expect(() => rc.send({ command: 'open-path', path: 'relative.numascope' })).toThrow(/numascope:command: command\.path: an absolute path/);
    rc.detach();
    rc.send({ command: 'save' });
    expect(got).toHaveLength(3);
    expect(rc.pending).toEqual([{ command: 'save' }]);
  });
});

describe('ShellOpener', () => {
  function opener() {
    const sent: DesktopCommand[] = [];
    const deps = { grant: vi.fn(), send: (c: DesktopCommand) => sent.push(c), showError: vi.fn(), focus: vi.fn() };
    return { o: new ShellOpener(deps), deps, sent };
  }

  it('opens the last good file and reports the bad ones in one message', async () => {
    const { o, deps, sent } = opener();
    const missing = path.join(dir, 'missing.numascope');
    expect(await o.openArgv(['exe', trace, '--no-sandbox', missing, 'b.numascope'], { defaultApp: false, cwd: dir })).toBe(other);
    expect(deps.grant).toHaveBeenCalledWith(other);
    expect(sent).toEqual([{ command: 'open-path', path: other }]);
    expect(deps.showError).toHaveBeenCalledWith(`${missing}: no such file`);
    expect(deps.focus).toHaveBeenCalled();
  });

  it('nothing to open: no command, no error', async () => {
    const { o, deps, sent } = opener();
    expect(await o.openArgv(['exe', '--flag'], { defaultApp: false, cwd: dir })).toBeNull();
    expect(sent).toEqual([]);
    expect(deps.showError).not.toHaveBeenCalled();
  });

  it('only errors: the user is told, nothing is granted', async () => {
    const { o, deps, sent } = opener();
    expect(await o.openPaths(['/nonexistent/x.numascope', path.join(dir, 'notes.txt')])).toBeNull();
    expect(sent).toEqual([]);
    expect(deps.grant).not.toHaveBeenCalled();
    expect(deps.showError.mock.calls[0]![0]).toMatch(/^\/nonexistent\/x\.numascope: no such file\n.*notes\.txt is not a numascope trace/);
  });

  it('end to end: a file from the command line opens through openRecent (validated), other paths stay refused', async () => {
    const { logic } = realLogic();
    const commands = new RendererCommands();
    const o = new ShellOpener({ grant: (f) => logic.files.grant(f), send: (c) => commands.send(c), showError: () => {} });
    await o.openArgv(['exe', trace], { defaultApp: false, cwd: '/' });
    const got: DesktopCommand[] = [];
    commands.attach((c) => got.push(c));
    expect(got).toEqual([{ command: 'open-path', path: trace }]);
    // What the renderer does with it: openRecent(path) over IPC.
    const opened = (await logic.dispatch(CHANNELS.openRecent, [trace])) as { name: string; bytes: Uint8Array };
    expect(opened.name).toBe('run 1.numascope');
    expect(Buffer.from(opened.bytes).toString()).toBe('PK-not-really-a-trace');
    expect((await logic.files.recent())[0]!.path).toBe(trace);
    await expect(logic.dispatch(CHANNELS.openRecent, [other])).rejects.toThrow(/not a recent file/);
  });
});
