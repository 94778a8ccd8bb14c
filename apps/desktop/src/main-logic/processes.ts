/** The process list, read from /proc (what `numascope serve`'s /api/processes answers). */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { ProcessInfo } from '@numascope/protocol';

export interface ProcessListerOptions {
  procRoot?: string;
  /** Our own uid (processes we may record without privileges). */
  uid?: number;
  pageSize?: number;
}

async function readOr(file: string): Promise<string | null> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch {
    return null;
  }
}

/** Parses /proc/PID/stat: the fields after "(comm)", numbered as in proc(5) (field 3 = state). */
export function parseStat(text: string): { comm: string; field: (n: number) => string | undefined } | null {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return null;
  const rest = text.slice(close + 2).trim().split(/\s+/);
  return { comm: text.slice(open + 1, close), field: (n) => rest[n - 3] };
}

export async function readProcess(pid: number, o: Required<ProcessListerOptions>): Promise<ProcessInfo | null> {
  const dir = path.join(o.procRoot, String(pid));
  const [stat, status, cmdline] = await Promise.all([
    readOr(path.join(dir, 'stat')),
    readOr(path.join(dir, 'status')),
    readOr(path.join(dir, 'cmdline')),
  ]);
  if (stat === null || status === null) return null;
  const s = parseStat(stat);
  if (!s) return null;
  const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1] ?? -1);
  const threads = Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? 0);
  const rssPages = Number(s.field(24));
  const command = (cmdline ?? '').split('\0').filter((a) => a.length > 0);
  return {
    pid,
    name: s.comm,
    command,
    threads,
    // Kernel threads have no memory and no command line.
    rssBytes: command.length > 0 && Number.isFinite(rssPages) ? rssPages * o.pageSize : null,
    uid,
    own: uid === o.uid,
  };
}

/** Every user-space process (kernel threads, which have no command line, are left out), by pid. */
export async function listProcesses(opts: ProcessListerOptions = {}): Promise<ProcessInfo[]> {
  const o: Required<ProcessListerOptions> = {
    procRoot: opts.procRoot ?? '/proc',
    uid: opts.uid ?? process.getuid?.() ?? -1,
    pageSize: opts.pageSize ?? 4096,
  };
  const pids = (await fs.readdir(o.procRoot)).filter((d) => /^\d+$/.test(d)).map(Number);
  const all = await Promise.all(pids.map((p) => readProcess(p, o)));
  return all.filter((p): p is ProcessInfo => p !== null && p.command.length > 0).sort((a, b) => a.pid - b.pid);
}
