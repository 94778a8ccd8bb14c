/**
 * Recordings through the napi addon, with per-window live updates.
 *
 * The napi `startRecording()` does not stream windows (it resolves once, with the summary, when
 * the trace is written), so the live windows here come from a /proc poller in this module:
 * per-thread page faults (minflt+majflt of /proc/PID/task/TID/stat), the cpu each thread last ran
 * on mapped to its node through the topology, and resident pages per node (/proc/PID/numa_maps).
 * They have the shape of `numascope serve`'s windows but are an approximation of them
 * (faults are attributed to the node the thread runs on, not the node of the page).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { LiveMessage, LiveThread, LiveWindow, NodeCount, Recording, StartRecordingOptions, Topology } from '../api';
import type { CollectorAddon } from './addon';
import { parseStat } from './processes';

export interface RecordingDeps {
  addon: CollectorAddon;
  /** Where trace files are written. */
  workDir: string;
  /** Sends a live message of a recording to whoever started it. */
  emit: (id: string, message: LiveMessage) => void;
  windowMs?: number;
  procRoot?: string;
  now?: () => number;
}

interface Entry {
  rec: Recording;
  output: string;
  stop: () => void;
  done: Promise<void>;
}

const toCounts = (m: Map<number, number>): NodeCount[] =>
  [...m.entries()].sort((a, b) => a[0] - b[0]).map(([node, count]) => ({ node, count }));

async function readOr(file: string): Promise<string | null> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch {
    return null;
  }
}

/** Polls one process's /proc files into LiveWindows. */
export class ProcPoller {
  private seq = 0;
  private last = new Map<number, number>();
  private seen = new Set<number>();
  private totalFaults = 0;
  private totalByNode = new Map<number, number>();
  private prevUs = 0;
  private readonly cpuNode = new Map<number, number>();

  constructor(
    private readonly procRoot: string,
    topology: Topology,
  ) {
    for (const n of topology.nodes) for (const c of n.cpus) this.cpuNode.set(c, n.id);
  }

  async window(recording: string, pid: number | null, elapsedUs: number, final: boolean): Promise<LiveWindow> {
    const threads: LiveThread[] = [];
    const byNode = new Map<number, number>();
    const pagesByNode = new Map<number, number>();
    let faults = 0;
    if (pid !== null) {
      const taskDir = path.join(this.procRoot, String(pid), 'task');
      let tids: number[] = [];
      try {
        tids = (await fs.readdir(taskDir)).filter((t) => /^\d+$/.test(t)).map(Number);
      } catch {
        /* exited */
      }
      const alive = new Set<number>();
      for (const tid of tids) {
        const s = parseStat((await readOr(path.join(taskDir, String(tid), 'stat'))) ?? '');
        if (!s) continue;
        alive.add(tid);
        this.seen.add(tid);
        const total = Number(s.field(10)) + Number(s.field(12));
        const delta = Math.max(0, total - (this.last.get(tid) ?? 0));
        this.last.set(tid, total);
        const cpu = Number(s.field(39));
        const node = this.cpuNode.get(cpu) ?? -1;
        faults += delta;
        if (delta > 0) byNode.set(node, (byNode.get(node) ?? 0) + delta);
        threads.push({ tid, name: s.comm, cpu, node, faults: delta, alive: true });
      }
      const maps = await readOr(path.join(this.procRoot, String(pid), 'numa_maps'));
      for (const m of (maps ?? '').matchAll(/ N(\d+)=(\d+)/g)) {
        const n = Number(m[1]);
        pagesByNode.set(n, (pagesByNode.get(n) ?? 0) + Number(m[2]));
      }
    }
    this.totalFaults += faults;
    for (const [n, c] of byNode) this.totalByNode.set(n, (this.totalByNode.get(n) ?? 0) + c);
    const w: LiveWindow = {
      type: 'window',
      recording,
      seq: this.seq++,
      startUs: this.prevUs,
      endUs: elapsedUs,
      elapsedUs,
      final,
      pid,
      faults,
      faultsByNode: toCounts(byNode),
      totals: {
        faults: this.totalFaults,
        faultsByNode: toCounts(this.totalByNode),
        pages: [...pagesByNode.values()].reduce((a, b) => a + b, 0),
        pagesByNode: toCounts(pagesByNode),
      },
      threads,
      threadsSeen: this.seen.size,
      lostSamples: 0,
    };
    this.prevUs = elapsedUs;
    return w;
  }
}

/** The child of this process running `command` (napi's record({command}) launches it as our child). */
async function findChild(procRoot: string, command: string[], exclude: Set<number>): Promise<number | null> {
  const self = path.join(procRoot, String(process.pid), 'task');
  let tids: string[] = [];
  try {
    tids = await fs.readdir(self);
  } catch {
    return null;
  }
  for (const t of tids) {
    const kids = ((await readOr(path.join(self, t, 'children'))) ?? '').trim().split(/\s+/).filter(Boolean).map(Number);
    for (const k of kids) {
      if (exclude.has(k)) continue;
      const cmd = ((await readOr(path.join(procRoot, String(k), 'cmdline'))) ?? '').split('\0').filter(Boolean);
      if (cmd.length === command.length && cmd.every((a, i) => a === command[i])) return k;
    }
  }
  return null;
}

export class RecordingManager {
  private readonly entries = new Map<string, Entry>();
  private next = 1;
  private readonly claimedChildren = new Set<number>();
  private topology: Promise<Topology> | null = null;

  constructor(private readonly deps: RecordingDeps) {}

  private snapshot(e: Entry): Recording {
    return structuredClone(e.rec);
  }

  private get(id: string): Entry {
    const e = this.entries.get(id);
    if (!e) throw new Error(`no recording ${JSON.stringify(id)}`);
    return e;
  }

  async start(opts: StartRecordingOptions): Promise<Recording> {
    const { addon, workDir } = this.deps;
    const now = this.deps.now ?? Date.now;
    const procRoot = this.deps.procRoot ?? '/proc';
    this.topology ??= addon.topology();
    const topology = await this.topology;
    await fs.mkdir(workDir, { recursive: true });
    const id = `r${this.next++}-${now().toString(36)}`;
    const output = path.join(workDir, `numascope-${id}.numascope`);
    const handle = addon.startRecording({
      ...(opts.pid !== undefined ? { pid: opts.pid } : { command: opts.command! }),
      ...(opts.durationS !== undefined ? { durationMs: Math.round(opts.durationS * 1000) } : {}),
      ...(opts.intervalMs !== undefined ? { intervalMs: opts.intervalMs } : {}),
      output,
    });
    const rec: Recording = {
      id,
      status: 'running',
      target: opts.pid !== undefined ? { pid: opts.pid } : { command: [...opts.command!] },
      durationS: opts.durationS ?? null,
      startedAtUnixMs: now(),
      stopRequested: false,
      summary: null,
      error: null,
    };
    const poller = new ProcPoller(procRoot, topology);
    const t0 = now();
    let pid: number | null = opts.pid ?? null;
    let finished = false;
    const windowMs = this.deps.windowMs ?? 250;
    const loop = (async () => {
      while (!finished) {
        await new Promise((r) => setTimeout(r, windowMs));
        if (finished) break;
        if (pid === null && opts.command) {
          pid = await findChild(procRoot, opts.command, this.claimedChildren);
          if (pid !== null) this.claimedChildren.add(pid);
        }
        this.deps.emit(id, await poller.window(id, pid, (now() - t0) * 1000, false));
      }
    })();
    const done = handle.result.then(
      async (summary) => {
        finished = true;
        await loop;
        rec.status = 'finished';
        rec.summary = summary;
        this.deps.emit(id, await poller.window(id, null, summary.durationUs, true));
        this.deps.emit(id, { type: 'end', recording: id, status: 'finished', summary, error: null });
      },
      async (err: unknown) => {
        finished = true;
        await loop;
        rec.status = 'failed';
        rec.error = { code: 'record-failed', message: err instanceof Error ? err.message : String(err) };
        this.deps.emit(id, { type: 'end', recording: id, status: 'failed', summary: null, error: rec.error });
      },
    );
    const entry: Entry = { rec, output, stop: handle.stop, done };
    this.entries.set(id, entry);
    return this.snapshot(entry);
  }

  status(id: string): Recording {
    return this.snapshot(this.get(id));
  }

  stop(id: string): Recording {
    const e = this.get(id);
    if (e.rec.status === 'running') {
      e.rec.stopRequested = true;
      e.stop();
    }
    return this.snapshot(e);
  }

  /** Resolves when the recording has ended and its end message was sent. */
  async settled(id: string): Promise<Recording> {
    const e = this.get(id);
    await e.done;
    return this.snapshot(e);
  }

  async trace(id: string): Promise<Uint8Array> {
    const e = this.get(id);
    if (e.rec.status !== 'finished') throw new Error(`recording ${id} is ${e.rec.status}; its trace is written when it has finished`);
    return new Uint8Array(await fs.readFile(e.output));
  }

  /** Stops every running recording (window closed, app quitting). */
  async stopAll(): Promise<void> {
    for (const e of this.entries.values()) if (e.rec.status === 'running') e.stop();
    await Promise.all([...this.entries.values()].map((e) => e.done));
  }
}
