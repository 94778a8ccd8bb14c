/**
 * `numascope bench` through the napi addon (`startBench`), for the Machine view's "Measure this
 * machine": one run at a time, its latest progress and outcome kept for polling, the same run
 * objects as `numascope serve`'s `/api/bench` (less `urls`).
 */
import { randomBytes } from 'node:crypto';
import type { BenchRequest, DesktopBenchRun } from '@numascope/protocol';
import type { CollectorAddon } from './addon';

/** Runs kept for benchStatus (the oldest finished one is dropped beyond this). */
const KEEP_RUNS = 8;

interface Entry {
  run: DesktopBenchRun;
  stop: () => void;
}

export class BenchError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'BenchError';
    this.code = code;
  }
}

export class BenchManager {
  private readonly entries: Entry[] = [];

  constructor(
    private readonly addon: Pick<CollectorAddon, 'startBench'>,
    private readonly now: () => number = Date.now,
  ) {}

  start(req: BenchRequest): DesktopBenchRun {
    const busy = this.entries.find((e) => e.run.status === 'running');
    if (busy) throw new BenchError('bench-running', `benchmark run ${busy.run.id} is still running (two runs at once would measure each other): stop it or wait for it`);
    const run: DesktopBenchRun = {
      id: randomBytes(8).toString('hex'),
      status: 'running',
      quick: req.quick ?? false,
      startedAtUnixMs: this.now(),
      stopRequested: false,
      progress: null,
      result: null,
      error: null,
    };
    const handle = this.addon.startBench({ ...req, onProgress: (p) => (run.progress = p) });
    const entry: Entry = { run, stop: handle.stop };
    handle.result.then(
      (outcome) => {
        run.result = outcome;
        run.status = 'finished';
      },
      (e: unknown) => {
        const message = e instanceof Error ? e.message : String(e);
        // The binding's message starts "bench (CODE): …" for a failed run, "bench: …" for bad options.
        run.error = { code: /^bench \(([a-z-]+)\)/.exec(message)?.[1] ?? 'bad-bench-option', message };
        run.status = 'failed';
      },
    );
    if (this.entries.length >= KEEP_RUNS) {
      const i = this.entries.findIndex((e) => e.run.status !== 'running');
      if (i >= 0) this.entries.splice(i, 1);
    }
    this.entries.push(entry);
    return structuredClone(run);
  }

  private find(id: string): Entry {
    const e = this.entries.find((x) => x.run.id === id);
    if (!e) throw new BenchError('unknown-bench', `no benchmark run with id ${JSON.stringify(id.slice(0, 40))}`);
    return e;
  }

  status(id: string): DesktopBenchRun {
    return structuredClone(this.find(id).run);
  }

  stop(id: string): DesktopBenchRun {
    const e = this.find(id);
    if (e.run.status === 'running') {
      e.run.stopRequested = true;
      e.stop();
    }
    return structuredClone(e.run);
  }

  /** Stops every running run (the app quits). */
  stopAll(): number {
    const running = this.entries.filter((e) => e.run.status === 'running');
    for (const e of running) this.stop(e.run.id);
    return running.length;
  }
}
