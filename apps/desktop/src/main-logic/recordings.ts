/**
 * Recordings through the napi addon, with per-window live updates.
 *
 * The live windows are the collector's own (core `live.rs`, the same aggregates `numascope serve`
 * streams, docs/live-api.md): the binding's `startRecording({ onWindow, windowMs })` calls back
 * with each window from the recorder, then with a last one (`final: true`) before its Promise
 * resolves. Each is tagged with the recording id and sent on as a LiveWindow; the end message
 * follows the final window.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { toLiveWindow, toRecordSummary } from '@numascope/protocol';
import type { CollectorWindow, DesktopRecording, LiveMessage, StartRecordingOptions } from '@numascope/protocol';
import type { CollectorAddon } from './addon';

export interface RecordingDeps {
  addon: CollectorAddon;
  /** Where trace files are written. */
  workDir: string;
  /** Sends a live message of a recording to whoever started it. */
  emit: (id: string, message: LiveMessage) => void;
  /** Live window length, ms (default 250, as numascope serve). */
  windowMs?: number;
  now?: () => number;
}

interface Entry {
  rec: DesktopRecording;
  output: string;
  stop: () => void;
  done: Promise<void>;
}

export class RecordingManager {
  private readonly entries = new Map<string, Entry>();
  private next = 1;

  constructor(private readonly deps: RecordingDeps) {}

  private snapshot(e: Entry): DesktopRecording {
    return structuredClone(e.rec);
  }

  /** Whether this app has recording `id` (started since the app started). */
  has(id: string): boolean {
    return this.entries.has(id);
  }

  private get(id: string): Entry {
    const e = this.entries.get(id);
    if (!e) throw new Error(`no recording ${JSON.stringify(id)}`);
    return e;
  }

  async start(opts: StartRecordingOptions): Promise<DesktopRecording> {
    const { addon, workDir } = this.deps;
    const now = this.deps.now ?? Date.now;
    await fs.mkdir(workDir, { recursive: true });
    const id = `r${this.next++}-${now().toString(36)}`;
    const output = path.join(workDir, `numascope-${id}.numascope`);
    const emitWindow = (w: CollectorWindow) => {
      try {
        this.deps.emit(id, toLiveWindow(id, w));
      } catch (e) {
        // A window the schema refuses is dropped (and said once per window), never the recording.
        console.warn(`numascope: live window ${w.seq} of ${id} not sent: ${e instanceof Error ? e.message : String(e)}`);
      }
    };
    const handle = addon.startRecording({
      ...(opts.pid !== undefined ? { pid: opts.pid } : { command: opts.command! }),
      ...(opts.durationS !== undefined ? { durationMs: Math.round(opts.durationS * 1000) } : {}),
      ...(opts.intervalMs !== undefined ? { intervalMs: opts.intervalMs } : {}),
      ...(opts.faultPeriod !== undefined ? { faultPeriod: opts.faultPeriod } : {}),
      ...(opts.faultRateHz !== undefined ? { faultRateHz: opts.faultRateHz } : {}),
      ...(opts.faultEvent !== undefined ? { faultEvent: opts.faultEvent } : {}),
      ...(opts.killOnStop !== undefined ? { killOnStop: opts.killOnStop } : {}),
      ...(opts.numaBalancing !== undefined ? { numaBalancing: opts.numaBalancing } : {}),
      ...(opts.allocSites !== undefined ? { allocSites: opts.allocSites } : {}),
      output,
      windowMs: this.deps.windowMs ?? 250,
      onWindow: emitWindow,
    });
    const rec: DesktopRecording = {
      id,
      status: 'running',
      target: opts.pid !== undefined ? { pid: opts.pid } : { command: [...opts.command!] },
      durationS: opts.durationS ?? null,
      startedAtUnixMs: now(),
      stopRequested: false,
      summary: null,
      error: null,
    };
    // The binding delivers every window (the final one included) before its Promise settles.
    const done = handle.result.then(
      (result) => {
        const summary = toRecordSummary(result);
        rec.status = 'finished';
        rec.summary = summary;
        this.deps.emit(id, { type: 'end', recording: id, status: 'finished', summary, error: null });
      },
      (err: unknown) => {
        rec.status = 'failed';
        rec.error = { code: 'record-failed', message: err instanceof Error ? err.message : String(err) };
        this.deps.emit(id, { type: 'end', recording: id, status: 'failed', summary: null, error: rec.error });
      },
    );
    const entry: Entry = { rec, output, stop: handle.stop, done };
    this.entries.set(id, entry);
    return this.snapshot(entry);
  }

  status(id: string): DesktopRecording {
    return this.snapshot(this.get(id));
  }

  stop(id: string): DesktopRecording {
    const e = this.get(id);
    if (e.rec.status === 'running') {
      e.rec.stopRequested = true;
      e.stop();
    }
    return this.snapshot(e);
  }

  /** Resolves when the recording has ended and its end message was sent. */
  async settled(id: string): Promise<DesktopRecording> {
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
