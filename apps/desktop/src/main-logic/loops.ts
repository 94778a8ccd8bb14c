/**
 * The live loop's records on the desktop app (docs/live-api.md, "The live loop"): what
 * `numascope serve` keeps with `PUT /api/recordings/:id/loop`, kept here as one JSON file per
 * recording in a directory under the app's userData (main.ts: `userData/loops/ID.json`), so a
 * window reload or the next start of the app brings the loop panel back.
 *
 * The same rules as serve's: a record is one JSON object that parses with @numascope/protocol's
 * `loopRecord` (`invalid-loop` otherwise), at most 4 MiB as JSON (`too-large`), for a recording
 * this app has (`unknown-recording`); the 16 saved most recently are kept (saving one again makes
 * it the newest; older files are removed). Each file is written whole or not at all (a temporary
 * file created exclusively, mode 0600, then renamed: files.ts `writeFileReplacing`), in a 0700
 * directory. A file read back that is not such a record (damaged, edited, too big) is refused
 * with `invalid-loop`, naming the field, and never reaches the panel. The order is the files'
 * modification times, set strictly increasing at each save.
 */
import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { describeIssue, loopRecord, recordingId } from '@numascope/protocol';
import type { LoopRecord } from '@numascope/protocol';
import { writeFileReplacing } from './files';

/** The largest record kept (serve's body limit for PUT …/loop). */
export const MAX_LOOP_BYTES = 4 * 1024 * 1024;
/** How many records are kept (serve keeps as many). */
export const MAX_LOOPS = 16;

/** A refused save or read, with a code as serve's (`invalid-loop`, `too-large`, `unknown-recording`). */
export class LoopStoreError extends Error {
  constructor(
    readonly code: 'invalid-loop' | 'too-large' | 'unknown-recording' | 'invalid-recording-id',
    message: string,
  ) {
    super(`${code}: ${message}`);
    this.name = 'LoopStoreError';
  }
}

export interface LoopStoreOptions {
  /** The recordings a record may be saved for (the RecordingManager's). */
  knows: (recording: string) => boolean;
  now?: () => number;
  maxBytes?: number;
  keep?: number;
}

const FILE = /^([A-Za-z0-9_-]{1,64})\.json$/;

function checkId(recording: string): void {
  if (!recordingId.safeParse(recording).success)
    throw new LoopStoreError('invalid-recording-id', `${JSON.stringify(recording)} is not a recording id`);
}

function parseRecord(value: unknown, where: string): LoopRecord {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new LoopStoreError('invalid-loop', `${where}: not a JSON object`);
  const r = loopRecord.safeParse(value);
  if (!r.success) throw new LoopStoreError('invalid-loop', `${where}: ${describeIssue('loop', r.error.issues[0]!)}`);
  return r.data;
}

export class LoopStore {
  private lastMtimeMs = 0;
  /** Saves run one after another (the pruning reads the directory). */
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    readonly dir: string,
    private readonly opts: LoopStoreOptions,
  ) {}

  private file(recording: string): string {
    return path.join(this.dir, `${recording}.json`);
  }

  /** Keeps `record` as recording `recording`'s loop; answers what serve answers. */
  save(recording: string, record: unknown): Promise<{ recording: string; bytes: number }> {
    const run = this.chain.then(() => this.saveNow(recording, record));
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async saveNow(recording: string, record: unknown): Promise<{ recording: string; bytes: number }> {
    checkId(recording);
    if (!this.opts.knows(recording)) throw new LoopStoreError('unknown-recording', `no recording ${JSON.stringify(recording)} in this app`);
    const parsed = parseRecord(record, 'the record');
    const text = JSON.stringify(parsed);
    const bytes = Buffer.byteLength(text);
    const max = this.opts.maxBytes ?? MAX_LOOP_BYTES;
    if (bytes > max) throw new LoopStoreError('too-large', `the record is ${bytes} bytes, more than ${max}`);
    await fs.mkdir(this.dir, { recursive: true, mode: 0o700 });
    const file = this.file(recording);
    await writeFileReplacing(file, text);
    const t = Math.max((this.opts.now ?? Date.now)(), this.lastMtimeMs + 1);
    this.lastMtimeMs = t;
    await fs.utimes(file, t / 1000, t / 1000);
    await this.prune();
    return { recording, bytes };
  }

  /** The records' recordings, newest first (by modification time). */
  async list(): Promise<string[]> {
    let names: string[];
    try {
      names = await fs.readdir(this.dir);
    } catch {
      return [];
    }
    const found: { id: string; mtime: number }[] = [];
    for (const n of names) {
      const m = FILE.exec(n);
      if (!m) continue;
      try {
        const st = await fs.lstat(path.join(this.dir, n));
        if (st.isFile()) found.push({ id: m[1]!, mtime: st.mtimeMs });
      } catch {
        // removed meanwhile
      }
    }
    found.sort((a, b) => b.mtime - a.mtime || (a.id < b.id ? -1 : 1));
    return found.map((f) => f.id);
  }

  private async prune(): Promise<void> {
    const ids = await this.list();
    for (const id of ids.slice(this.opts.keep ?? MAX_LOOPS)) await fs.rm(this.file(id), { force: true });
  }

  /** Recording `recording`'s loop, or null when none was kept; a damaged one is refused. */
  async load(recording: string): Promise<LoopRecord | null> {
    checkId(recording);
    const file = this.file(recording);
    let handle: fs.FileHandle;
    try {
      handle = await fs.open(file, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      if ((e as NodeJS.ErrnoException).code === 'ELOOP') throw new LoopStoreError('invalid-loop', `${recording}: a symbolic link, not a kept record`);
      throw e;
    }
    let text: string;
    try {
      const st = await handle.stat();
      if (!st.isFile()) throw new LoopStoreError('invalid-loop', `${recording}: not a file`);
      const max = this.opts.maxBytes ?? MAX_LOOP_BYTES;
      if (st.size > max) throw new LoopStoreError('invalid-loop', `${recording}: the kept record is ${st.size} bytes, more than ${max}`);
      text = await handle.readFile('utf8');
    } finally {
      await handle.close();
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new LoopStoreError('invalid-loop', `${recording}: the kept record is not JSON (damaged)`);
    }
    return parseRecord(value, recording);
  }

  /** The loop saved last, with its recording, or null before any. */
  async latest(): Promise<{ recording: string; loop: LoopRecord } | null> {
    const [id] = await this.list();
    if (id === undefined) return null;
    const loop = await this.load(id);
    return loop ? { recording: id, loop } : null;
  }
}
