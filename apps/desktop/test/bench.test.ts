// "Measure this machine" in the desktop app: the main process runs `numascope bench` through the
// napi binding's startBench(), one run at a time, polled like serve's /api/bench. With a fake
// addon (progress, stop, failure, refusals) and over the real addon (small arrays, nothing stored).
import { afterAll, describe, expect, it, vi } from 'vitest';
import { desktopBenchRun } from '@numascope/protocol';
import { rustExample } from '@numascope/protocol/fixtures';
import type { BenchOutcome, BenchProgress, DesktopBenchRun } from '@numascope/protocol';
import { CHANNELS } from '../src/channels';
import { BenchManager } from '../src/main-logic/bench';
import type { CollectorAddon } from '../src/main-logic/addon';
import { realLogic } from './helpers';

function fakeAddon() {
  let onProgress: ((p: BenchProgress) => void) | undefined;
  let settle: { resolve: (o: BenchOutcome) => void; reject: (e: Error) => void } | undefined;
  const stop = vi.fn();
  const startBench = vi.fn((opts: { onProgress?: (p: BenchProgress) => void }) => {
    onProgress = opts.onProgress;
    const result = new Promise<BenchOutcome>((resolve, reject) => (settle = { resolve, reject }));
    return { result, stop };
  });
  return { addon: { startBench } as unknown as Pick<CollectorAddon, 'startBench'>, startBench, stop, progress: (p: BenchProgress) => onProgress!(p), settle: () => settle! };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

describe('BenchManager', () => {
  it('keeps the latest progress and the outcome; refuses a second run while one runs', async () => {
    const f = fakeAddon();
    const m = new BenchManager(f.addon, () => 1_795_294_308_230);
    const run = m.start({ quick: true });
    expect(desktopBenchRun.parse(run)).toEqual(run);
    expect(run).toMatchObject({ status: 'running', quick: true, progress: null, result: null });
    expect(() => m.start({ quick: true })).toThrow(/still running/);
    f.progress(rustExample('benchProgress', 1));
    expect(m.status(run.id).progress).toEqual(rustExample('benchProgress', 1));
    f.settle().resolve(rustExample('benchOutcome', 0));
    await tick();
    const done = m.status(run.id);
    expect(done.status).toBe('finished');
    expect(desktopBenchRun.parse(done).result!.machine.calibration.partial).toBe(false);
    // A new run may start now.
    expect(m.start({}).status).toBe('running');
  });

  it('stop asks the binding to stop; a failure keeps its code', async () => {
    const f = fakeAddon();
    const m = new BenchManager(f.addon);
    const run = m.start({ quick: true });
    expect(m.stop(run.id).stopRequested).toBe(true);
    expect(f.stop).toHaveBeenCalledTimes(1);
    f.settle().reject(new Error('bench (bench-memory): the benchmark would map 9000 MiB at once'));
    await tick();
    const failed: DesktopBenchRun = m.status(run.id);
    expect(failed.status).toBe('failed');
    expect(failed.error).toEqual({ code: 'bench-memory', message: 'bench (bench-memory): the benchmark would map 9000 MiB at once' });
    expect(() => m.status('0123456789abcdef')).toThrow(/no benchmark run/);
  });
});

describe('bench over the real napi addon', () => {
  const { logic } = realLogic();
  afterAll(() => logic.bench.stopAll());

  it('runs, reports progress and the calibrated machine through the validated IPC path', async () => {
    const req = { quick: true, arrayBytes: 1 << 20, chaseBytes: 1 << 20, save: false };
    let run = (await logic.dispatch(CHANNELS.startBench, [req])) as DesktopBenchRun;
    const t0 = Date.now();
    while (run.status === 'running') {
      expect(Date.now() - t0).toBeLessThan(60_000);
      await new Promise((r) => setTimeout(r, 50));
      run = (await logic.dispatch(CHANNELS.benchStatus, [run.id])) as DesktopBenchRun;
    }
    expect(run.status).toBe('finished');
    expect(run.progress!.step).toBe(run.progress!.steps);
    const cal = run.result!.machine.calibration;
    expect(cal.partial).toBe(false);
    expect(cal.bandwidthGBps.triad[0]![0]!.value).toBeGreaterThan(0);
    expect(run.result!.storeNote).toMatch(/save was false/);
  }, 90_000);

  it('refuses a bad request before the collector sees it', async () => {
    await expect(logic.dispatch(CHANNELS.startBench, [{ quick: 'yes' }])).rejects.toThrow(/numascope:start-bench: req\.quick/);
    await expect(logic.dispatch(CHANNELS.benchStatus, ['nope'])).rejects.toThrow(/16 hex digits/);
  });
});
