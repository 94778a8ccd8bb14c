// The preload's contract: it exposes exactly the API's methods as window.numascopeDesktop, each on
// its own channel, and live messages reach only their recording's subscribers.
import { beforeEach, describe, expect, it, vi } from 'vitest';

const electron = vi.hoisted(() => {
  const listeners = new Map<string, Set<(e: unknown, ...a: unknown[]) => void>>();
  return {
    exposed: new Map<string, unknown>(),
    listeners,
    invoke: vi.fn(async (..._a: unknown[]) => 'ok'),
  };
});

vi.mock('electron', () => ({
  contextBridge: { exposeInMainWorld: (k: string, v: unknown) => electron.exposed.set(k, v) },
  ipcRenderer: {
    invoke: electron.invoke,
    on: (c: string, l: (e: unknown, ...a: unknown[]) => void) => {
      if (!electron.listeners.has(c)) electron.listeners.set(c, new Set());
      electron.listeners.get(c)!.add(l);
    },
    removeListener: (c: string, l: (e: unknown, ...a: unknown[]) => void) => electron.listeners.get(c)?.delete(l),
  },
}));

import type { NumascopeDesktopApi } from '../src/api';
import { CHANNELS, COMMAND_CHANNEL, INVOKE_CHANNELS, LIVE_CHANNEL } from '../src/channels';
import '../src/preload';

const api = () => electron.exposed.get('numascopeDesktop') as NumascopeDesktopApi;

// Every method of NumascopeDesktopApi, written out: a method added to the interface without the
// preload (or the other way round) fails here.
const METHODS: Record<Exclude<keyof NumascopeDesktopApi, 'isDesktop'>, unknown[]> = {
  probe: [],
  topology: [],
  listProcesses: [],
  startRecording: [{ pid: 1 }],
  recordingStatus: ['r1'],
  stopRecording: ['r1'],
  recordingTrace: ['r1'],
  onLiveWindow: [],
  apply: [{ target: { pid: 1 } }, { pid: 1, dryRun: true }],
  rollback: [{ format: 'x' }],
  runPlan: [{ target: { pid: 1 } }, { dryRun: true }],
  saveLoop: ['r1', { format: 'numascope-loop' }],
  loadLoop: ['r1'],
  latestLoop: [],
  openTrace: [],
  openRecent: ['/tmp/a.numascope'],
  saveTrace: [new Uint8Array([1]), 'a.numascope'],
  recentFiles: [],
  openExternal: ['https://example.org'],
  startBench: [{ quick: true }],
  benchStatus: ['0123456789abcdef'],
  stopBench: ['0123456789abcdef'],
  onCommand: [],
};

describe('preload', () => {
  beforeEach(() => electron.invoke.mockClear());

  it('exposes only numascopeDesktop, with exactly the API methods', () => {
    expect([...electron.exposed.keys()]).toEqual(['numascopeDesktop']);
    const keys = Object.keys(api()).sort();
    expect(keys).toEqual([...Object.keys(METHODS), 'isDesktop'].sort());
    expect(api().isDesktop).toBe(true);
    for (const k of Object.keys(METHODS)) expect(typeof (api() as unknown as Record<string, unknown>)[k]).toBe('function');
  });

  it('maps each invoke method to its channel with the arguments unchanged', async () => {
    const used = new Set<string>();
    for (const [method, args] of Object.entries(METHODS)) {
      if (method === 'onLiveWindow' || method === 'onCommand') continue;
      electron.invoke.mockClear();
      await (api() as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[method]!(...args);
      expect(electron.invoke).toHaveBeenCalledTimes(1);
      const [channel, ...sent] = electron.invoke.mock.calls[0]!;
      expect(channel).toBe(CHANNELS[method as keyof typeof CHANNELS]);
      expect(INVOKE_CHANNELS).toContain(channel);
      expect(sent).toEqual(args);
      used.add(channel as string);
    }
    expect(used.size).toBe(INVOKE_CHANNELS.length);
  });

  it('onLiveWindow delivers only its recording, until unsubscribed', () => {
    const got: unknown[] = [];
    const off = api().onLiveWindow('r1', (m) => got.push(m));
    const send = (env: unknown) => {
      for (const l of electron.listeners.get(LIVE_CHANNEL) ?? []) l({}, env);
    };
    send({ id: 'r1', message: { type: 'end', recording: 'r1' } });
    send({ id: 'r2', message: { type: 'end', recording: 'r2' } });
    send(null);
    expect(got).toEqual([{ type: 'end', recording: 'r1' }]);
    off();
    send({ id: 'r1', message: { type: 'end', recording: 'r1' } });
    expect(got).toHaveLength(1);
    expect(electron.listeners.get(LIVE_CHANNEL)!.size).toBe(0);
  });

  it('onCommand: commands sent before the page subscribed are kept for it, later ones arrive directly', () => {
    const send = (cmd: unknown) => {
      for (const l of electron.listeners.get(COMMAND_CHANNEL) ?? []) l({}, cmd);
    };
    // A file on the command line: main sends open-path right after the page loaded.
    send({ command: 'open-path', path: '/t/a.numascope' });
    send(null);
    send('open');
    const got: unknown[] = [];
    const off = api().onCommand((c) => got.push(c));
    expect(got).toEqual([{ command: 'open-path', path: '/t/a.numascope' }]);
    send({ command: 'view-compare' });
    expect(got).toHaveLength(2);
    off();
    send({ command: 'save' });
    expect(got).toHaveLength(2);
    // Kept again for the next subscriber (a reloaded page).
    const again: unknown[] = [];
    api().onCommand((c) => again.push(c))();
    expect(again).toEqual([{ command: 'save' }]);
    expect(electron.listeners.get(COMMAND_CHANNEL)!.size).toBe(1);
  });
});
