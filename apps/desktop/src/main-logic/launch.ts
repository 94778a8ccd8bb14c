/**
 * Trace files handed to the app from outside its dialogs: on the command line
 * (`numascope-desktop trace.numascope`), by the desktop (the `.numascope` file association runs
 * `numascope-desktop %U`), by a second launch while the app runs (single-instance lock →
 * `second-instance` with that launch's argv), and by macOS (`open-file`). Plain functions and
 * classes, no Electron: src/main.ts wires them to app events.
 *
 * A file that checks out is granted to the FileService and announced to the renderer with an
 * `open-path` command; the renderer then opens it through the validated openRecent(path) channel,
 * the same path as the Open Recent menu. Problems (missing, unreadable, not a .numascope file) are
 * reported through one error message naming each file.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DesktopCommand } from '@numascope/protocol/commands';
import { parseCommand } from '../ipc-schema';

export const TRACE_EXTENSION = '.numascope';

export interface ArgvOptions {
  /**
   * Electron's `process.defaultApp`: true when started as `electron APP_PATH …` (development),
   * where the first positional argument is the app, not a file.
   */
  defaultApp: boolean;
  /** Relative paths are resolved against this (the launching shell's directory). */
  cwd: string;
}

/**
 * The file arguments of an Electron command line, as absolute paths (not checked on disk):
 * argv[0] (the executable) is skipped, and in development the app path; switches (`-x`, `--x`,
 * `--x=y`, which Chromium also appends to a second instance's argv) are skipped; after `--` every
 * argument is a file. `file://` URLs (desktop launchers' %U) become paths.
 */
export function fileArgs(argv: readonly string[], opts: ArgvOptions): string[] {
  const out: string[] = [];
  let appPathSkipped = !opts.defaultApp;
  let onlyFiles = false;
  for (const arg of argv.slice(1)) {
    if (!onlyFiles && arg === '--') {
      onlyFiles = true;
      continue;
    }
    if (!onlyFiles && arg.startsWith('-')) continue;
    if (!appPathSkipped) {
      appPathSkipped = true;
      continue;
    }
    if (arg === '') continue;
    let p = arg;
    if (/^file:\/\//i.test(arg)) {
      try {
        p = fileURLToPath(arg);
      } catch {
        // Left as written: the check below reports it as missing.
      }
    }
    out.push(path.resolve(opts.cwd, p));
  }
  return out;
}

export type FileCheck = { ok: true; path: string } | { ok: false; path: string; message: string };

/** Whether `file` is an existing, readable `.numascope` file; the message says what is wrong. */
export async function checkTraceFile(file: string): Promise<FileCheck> {
  if (path.extname(file).toLowerCase() !== TRACE_EXTENSION)
    return { ok: false, path: file, message: `${file} is not a numascope trace (the file name does not end in ${TRACE_EXTENSION})` };
  let st;
  try {
    st = await fs.stat(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { ok: false, path: file, message: `${file}: no such file` };
    return { ok: false, path: file, message: `${file} cannot be opened (${code ?? (e as Error).message})` };
  }
  if (!st.isFile()) return { ok: false, path: file, message: `${file} is not a file` };
  try {
    const h = await fs.open(file, 'r');
    await h.close();
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'EACCES' || code === 'EPERM' ? 'permission denied' : (code ?? (e as Error).message);
    return { ok: false, path: file, message: `${file} cannot be read (${why})` };
  }
  return { ok: true, path: file };
}

/**
 * Commands to the renderer, validated before they leave, and kept until a window is there to
 * receive them (a file on the command line arrives before the page has loaded).
 */
export class RendererCommands {
  private readonly queue: DesktopCommand[] = [];
  private target: ((cmd: DesktopCommand) => void) | null = null;

  /** Validates and sends (or queues) a command; throws IpcValidationError for a bad one. */
  send(cmd: unknown): void {
    const c = parseCommand(cmd);
    if (this.target) this.target(c);
    else this.queue.push(c);
  }

  /** A window's page has loaded: deliver what was queued, then send directly. */
  attach(target: (cmd: DesktopCommand) => void): void {
    this.target = target;
    for (const c of this.queue.splice(0)) target(c);
  }

  /** The window is gone: queue again. */
  detach(): void {
    this.target = null;
  }

  get pending(): readonly DesktopCommand[] {
    return this.queue;
  }
}

export interface ShellOpenDeps {
  /** FileService.grant: lets the renderer's openRecent(path) open this file. */
  grant(file: string): void;
  send(cmd: DesktopCommand): void;
  /** Shows an error to the user (main.ts: dialog.showErrorBox). */
  showError(message: string): void;
  /** Brings the window to the front (a second launch, open-file). */
  focus?(): void;
}

/** Opens files handed to the app from outside; the app shows one trace, so the last good one opens. */
export class ShellOpener {
  constructor(private readonly deps: ShellOpenDeps) {}

  /** Checks the files; grants and opens the last good one; reports the others. Returns the opened path or null. */
  async openPaths(files: readonly string[]): Promise<string | null> {
    if (files.length === 0) return null;
    const checks = await Promise.all(files.map(checkTraceFile));
    const good = checks.filter((c) => c.ok);
    const bad = checks.filter((c): c is Extract<FileCheck, { ok: false }> => !c.ok);
    const last = good[good.length - 1];
    if (last) {
      this.deps.grant(last.path);
      this.deps.send({ command: 'open-path', path: last.path });
    }
    if (bad.length > 0) this.deps.showError(bad.map((b) => b.message).join('\n'));
    this.deps.focus?.();
    return last?.path ?? null;
  }

  /** The app's own argv, or a second instance's (with its working directory). */
  openArgv(argv: readonly string[], opts: ArgvOptions): Promise<string | null> {
    return this.openPaths(fileArgs(argv, opts));
  }
}
