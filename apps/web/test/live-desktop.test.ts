// Desktop mode: DesktopLiveApi over a fake window.numascopeDesktop, driven by the same LiveSession.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiError } from '../src/ui/live/client';
import { DesktopLiveApi, desktopBridge } from '../src/ui/live/desktop';
import type { DesktopBridge } from '../src/ui/live/desktop';
import type { LoopRecord } from '@numascope/protocol';
import { LiveSession } from '../src/ui/live/session';
import { rustExample } from '@numascope/protocol/fixtures';

const rec = (status: 'running' | 'finished' | 'failed') => ({
  id: 'r1',
  status,
  target: { command: ['x'] },
  durationS: null,
  startedAtUnixMs: 1,
  stopRequested: false,
  summary: status === 'finished' ? rustExample('recordSummary') : null,
  error: status === 'failed' ? { code: 'record-failed', message: 'no such file' } : null,
});

const windowMsg = (seq: number, final = false) => ({
  type: 'window',
  recording: 'r1',
  seq,
  startUs: seq * 1000,
  endUs: (seq + 1) * 1000,
  elapsedUs: (seq + 1) * 1000,
  final,
  pid: 42,
  faults: 10,
  faultsByNode: [{ node: 0, count: 10 }],
  accesses: [],
  accessSource: null,
  bandwidth: [],
  bandwidthSource: null,
  totals: { faults: 10 * (seq + 1), faultsByNode: [{ node: 0, count: 10 * (seq + 1) }], pages: 4, pagesByNode: [{ node: 0, count: 4 }], accesses: [], pagesMoved: 0 },
  threads: [{ tid: 42, name: 'x', cpu: 0, node: 0, faults: 10, alive: true }],
  threadsSeen: 1,
  lostSamples: 0,
});

function fakeBridge(status: 'running' | 'failed' = 'running', loops = new Map<string, LoopRecord>()) {
  let cb: ((m: unknown) => void) | null = null;
  const bridge = {
    isDesktop: true as const,
    probe: vi.fn(async () => rustExample('probe')),
    topology: vi.fn(async () => rustExample('machine')),
    listProcesses: vi.fn(async () => []),
    startRecording: vi.fn(async () => rec('running')),
    recordingStatus: vi.fn(async () => rec(status)),
    stopRecording: vi.fn(async () => ({ ...rec('running'), stopRequested: true })),
    recordingTrace: vi.fn(async () => new Uint8Array([80, 75, 3])),
    onLiveWindow: vi.fn((_id: string, f: (m: unknown) => void) => {
      cb = f;
      return () => (cb = null);
    }),
    apply: vi.fn(async () => ({ operation: 'apply', pid: 42, dryRun: true, status: 'dry-run' }) as never),
    rollback: vi.fn(),
    runPlan: vi.fn(),
    // The main process's loop store, in memory: the newest last.
    saveLoop: vi.fn(async (recording: string, record: LoopRecord) => {
      loops.delete(recording);
      loops.set(recording, JSON.parse(JSON.stringify(record)) as LoopRecord);
      return { recording, bytes: JSON.stringify(record).length };
    }),
    loadLoop: vi.fn(async (recording: string) => loops.get(recording) ?? null),
    latestLoop: vi.fn(async () => {
      const last = [...loops.keys()].at(-1);
      return last === undefined ? null : { recording: last, loop: loops.get(last)! };
    }),
  } satisfies DesktopBridge;
  return { bridge, send: (m: unknown) => cb?.(m), subscribed: () => cb !== null };
}

afterEach(() => {
  delete (window as unknown as { numascopeDesktop?: unknown }).numascopeDesktop;
});

describe('desktop mode', () => {
  it('detects window.numascopeDesktop', () => {
    expect(desktopBridge()).toBeNull();
    (window as unknown as { numascopeDesktop: unknown }).numascopeDesktop = { isDesktop: true };
    expect(desktopBridge()).not.toBeNull();
  });

  it('records through the bridge: start, windows, end, trace', async () => {
    const { bridge, send } = fakeBridge();
    let opened: [string, ArrayBuffer] | null = null;
    const s = new LiveSession(new DesktopLiveApi(bridge), { onTrace: (n, b) => void (opened = [n, b]) });
    await s.connect();
    expect(s.state.phase.kind).toBe('ready');
    await s.start({ command: ['x'], durationS: 2 });
    expect(bridge.startRecording).toHaveBeenCalledWith({ command: ['x'], durationS: 2 });
    expect(s.state.phase.kind).toBe('running');
    send(windowMsg(0));
    expect(s.state.latest?.totals.faults).toBe(10);
    send(windowMsg(1, true));
    send({ type: 'end', recording: 'r1', status: 'finished', summary: { ...rustExample('recordSummary'), samples: 5 }, error: null });
    await vi.waitFor(() => expect(opened).not.toBeNull());
    expect(opened![0]).toBe('numascope-r1.numascope');
    expect(new Uint8Array(opened![1])).toEqual(new Uint8Array([80, 75, 3]));
    s.dispose();
  });

  it('a recording that ended before the subscription settles from its status', async () => {
    const { bridge, subscribed } = fakeBridge('failed');
    const api = new DesktopLiveApi(bridge);
    const ends: unknown[] = [];
    api.watch('r1', { onWindow: () => {}, onEnd: (e) => ends.push(e), onLost: () => {} });
    await vi.waitFor(() => expect(ends).toHaveLength(1));
    expect(ends[0]).toMatchObject({ status: 'failed', error: { message: 'no such file' } });
    expect(subscribed()).toBe(false);
  });

  it('a malformed live message loses the connection with a message', () => {
    const { bridge, send } = fakeBridge();
    const lost: string[] = [];
    new DesktopLiveApi(bridge).watch('r1', { onWindow: () => {}, onEnd: () => {}, onLost: (m) => lost.push(m) });
    send({ type: 'window', seq: 'x' });
    expect(lost[0]).toMatch(/unexpected/);
  });

  it('IPC errors become ApiErrors with the main process message', async () => {
    const { bridge } = fakeBridge();
    bridge.apply.mockRejectedValueOnce(
      new Error("Error invoking remote method 'numascope:apply': IpcValidationError: numascope:apply: opts.pid: Too small"),
    );
    const err = await new DesktopLiveApi(bridge).apply({ plan: {}, pid: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).message).toBe('numascope:apply: opts.pid: Too small');
    expect((err as ApiError).code).toBe('invalid-request');
  });

  it('passes setSystemWeights to the binding only when asked (the weights are global)', async () => {
    const { bridge } = fakeBridge();
    const api = new DesktopLiveApi(bridge);
    await api.apply({ plan: { target: { pid: 1 } }, pid: 1, dryRun: true, setSystemWeights: true });
    expect(bridge.apply).toHaveBeenLastCalledWith({ target: { pid: 1 } }, { pid: 1, dryRun: true, setSystemWeights: true });
    await api.apply({ plan: { target: { pid: 1 } }, pid: 1, setSystemWeights: false });
    expect(bridge.apply).toHaveBeenLastCalledWith({ target: { pid: 1 } }, { pid: 1 });
  });

  it('passes setSystemWeights for a launch to the binding only when asked (restored when the program exits)', async () => {
    const { bridge } = fakeBridge();
    const api = new DesktopLiveApi(bridge);
    bridge.runPlan.mockResolvedValue({});
    await api.runPlan({ plan: { target: { pid: 1 } }, dryRun: true, setSystemWeights: true });
    expect(bridge.runPlan).toHaveBeenLastCalledWith({ target: { pid: 1 } }, { dryRun: true, setSystemWeights: true });
    await api.runPlan({ plan: { target: { pid: 1 } }, setSystemWeights: false });
    expect(bridge.runPlan).toHaveBeenLastCalledWith({ target: { pid: 1 } }, {});
  });
});
