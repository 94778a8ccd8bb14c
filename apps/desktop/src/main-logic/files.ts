/** Trace files through native dialogs (injected), and the recent-files list (a JSON file). */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { OpenedTrace } from '@numascope/protocol';
import type { RecentFile } from '../api';

export interface DialogProvider {
  /** A file chosen to open, or null when cancelled. */
  showOpen(opts: { title: string; filters: { name: string; extensions: string[] }[] }): Promise<string | null>;
  /** Where to save, or null when cancelled. */
  showSave(opts: { title: string; defaultPath: string; filters: { name: string; extensions: string[] }[] }): Promise<string | null>;
}

export const TRACE_FILTERS = [
  { name: 'numascope traces', extensions: ['numascope'] },
  { name: 'All files', extensions: ['*'] },
];
export const MAX_RECENT = 10;
/** Largest trace the app opens (matches what the renderer can hold comfortably). */
export const MAX_TRACE_BYTES = 2 * 1024 ** 3;

/**
 * Writes `file` whole or not at all, without following a link planted at the temporary name:
 * the temporary file gets an unpredictable name next to the target and is created exclusively
 * (O_CREAT|O_EXCL, which also refuses an existing symlink) with mode 0600, then renamed over
 * the target. An existing file is replaced only by a complete new one (docs/robustness.md).
 */
export async function writeFileReplacing(file: string, data: string | Uint8Array): Promise<void> {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(8).toString('hex')}.tmp`);
  const handle = await fs.open(tmp, 'wx', 0o600);
  try {
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(tmp, file);
  } catch (e) {
    await fs.rm(tmp, { force: true });
    throw e;
  }
}

export class FileService {
  /** Paths the main process was handed (command line, desktop, open-file) that openRecent may open. */
  private readonly granted = new Set<string>();
  /** Called after the recent-files list changed (main.ts rebuilds the Open Recent menu). */
  onRecentChange: ((recent: RecentFile[]) => void) | null = null;

  constructor(
    private readonly dialogs: DialogProvider,
    private readonly recentPath: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** Lets openRecent() open this file (one the user handed to the app outside its dialogs). */
  grant(file: string): void {
    this.granted.add(file);
  }

  async clearRecent(): Promise<void> {
    await fs.rm(this.recentPath, { force: true });
    this.onRecentChange?.([]);
  }

  async recent(): Promise<RecentFile[]> {
    try {
      const v = JSON.parse(await fs.readFile(this.recentPath, 'utf8')) as unknown;
      if (!Array.isArray(v)) return [];
      return v
        .filter(
          (r): r is RecentFile =>
            typeof r === 'object' && r !== null && typeof r.path === 'string' && typeof r.name === 'string' && typeof r.openedAtUnixMs === 'number',
        )
        .slice(0, MAX_RECENT);
    } catch {
      return [];
    }
  }

  private async remember(file: string): Promise<void> {
    const list = (await this.recent()).filter((r) => r.path !== file);
    list.unshift({ path: file, name: path.basename(file), openedAtUnixMs: this.now() });
    await fs.mkdir(path.dirname(this.recentPath), { recursive: true });
    await writeFileReplacing(this.recentPath, JSON.stringify(list.slice(0, MAX_RECENT), null, 2));
    this.onRecentChange?.(list.slice(0, MAX_RECENT));
  }

  private async read(file: string): Promise<OpenedTrace> {
    const st = await fs.stat(file);
    if (!st.isFile()) throw new Error(`${file} is not a file`);
    if (st.size > MAX_TRACE_BYTES) throw new Error(`${file} is ${st.size} bytes, more than the ${MAX_TRACE_BYTES} the app opens`);
    const bytes = new Uint8Array(await fs.readFile(file));
    await this.remember(file);
    return { name: path.basename(file), path: file, bytes };
  }

  async open(): Promise<OpenedTrace | null> {
    const file = await this.dialogs.showOpen({ title: 'Open a numascope trace', filters: TRACE_FILTERS });
    return file === null ? null : this.read(file);
  }

  /**
   * Only paths already in the recent list or granted by the main process: the renderer never names
   * arbitrary files.
   */
  async openRecent(file: string): Promise<OpenedTrace> {
    if (!this.granted.has(file) && !(await this.recent()).some((r) => r.path === file)) throw new Error(`${file} is not a recent file`);
    return this.read(file);
  }

  async save(bytes: Uint8Array, suggestedName: string): Promise<string | null> {
    const file = await this.dialogs.showSave({ title: 'Save the trace', defaultPath: suggestedName, filters: TRACE_FILTERS });
    if (file === null) return null;
    // Written next to the target, then renamed: never seen half-written, never through a planted link.
    await writeFileReplacing(file, bytes);
    await this.remember(file);
    return file;
  }
}
