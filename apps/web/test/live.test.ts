/** Live mode client: token handling, message parsing, the state machine, and a session against a fake `numascope serve`. */
import { describe, expect, it } from 'vitest';
import { ApiError, LiveApi } from '../src/ui/live/client';
import type { LiveDeps, WebSocketLike } from '../src/ui/live/client';
import { endReason, initialState, liveReducer, MAX_WINDOWS } from '../src/ui/live/machine';
import { parseLiveMessage, ProtocolError } from '@numascope/protocol';
import type { LiveWindow, Recording, RecordSummary } from '@numascope/protocol';
import { rustExample } from '@numascope/protocol/fixtures';
import { splitArgv } from '../src/ui/live/argv';
import { LiveSession } from '../src/ui/live/session';
import { tokenFromSearch, withoutToken } from '../src/ui/live/token';
import { chosenPid, filterProcesses, isKernelThread } from '../src/ui/live/LiveView';

const TOKEN = 'a'.repeat(64);
const ORIGIN = 'http://127.0.0.1:41873';

function windowMsg(seq: number, extra: Partial<LiveWindow> = {}): LiveWindow {
  return {
    type: 'window',
    recording: 'r1',
    seq,
    startUs: seq * 250_000,
    endUs: (seq + 1) * 250_000,
    elapsedUs: (seq + 1) * 250_000,
    final: false,
    pid: 77,
    faults: 10,
    faultsByNode: [{ node: 0, count: 10 }],
    accesses: [],
    accessSource: null,
    bandwidth: [],
    bandwidthSource: null,
    totals: {
      faults: 10 * (seq + 1),
      faultsByNode: [{ node: 0, count: 10 * (seq + 1) }],
      pages: 8 * (seq + 1),
      pagesByNode: [
        { node: -1, count: 1 },
        { node: 0, count: 8 * (seq + 1) - 1 },
      ],
      accesses: [],
      pagesMoved: 0,
    },
    threads: [{ tid: 77, name: 'app', cpu: 1, node: 0, faults: 10, alive: true }],
    threadsSeen: 1,
    lostSamples: 0,
    ...extra,
  };
}

const summary = (extra: Partial<RecordSummary>): RecordSummary => ({ ...rustExample('recordSummary'), ...extra });

const recording: Recording = {
  id: 'r1',
  status: 'running',
  target: { command: ['./app'] },
  durationS: null,
  startedAtUnixMs: 0,
  stopRequested: false,
  summary: null,
  error: null,
  latest: null,
  urls: { status: '/api/recordings/r1', stop: '/api/recordings/r1/stop', trace: '/api/recordings/r1/trace', live: '/api/recordings/r1/live' },
};

class FakeSocket implements WebSocketLike {
  onmessage: ((e: { data: unknown }) => void) | null = null;
  onclose: ((e: { code: number; reason: string; wasClean: boolean }) => void) | null = null;
  onerror: ((e: unknown) => void) | null = null;
  closed = false;
  constructor(readonly url: string) {}
  send(msg: unknown) {
    this.onmessage?.({ data: JSON.stringify(msg) });
  }
  drop(code = 1006) {
    this.onclose?.({ code, reason: '', wasClean: false });
  }
  close() {
    this.closed = true;
  }
}

interface Call {
  method: string;
  path: string;
  auth: string | null;
  body: unknown;
}

/** A fake numascope serve: routes by method + path, records every call. */
function fakeServer(opts: { token?: string; down?: boolean; startError?: { status: number; code: string; message: string } } = {}) {
  const calls: Call[] = [];
  const sockets: FakeSocket[] = [];
  const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
  const deps: LiveDeps = {
    origin: ORIGIN,
    openSocket: (url) => {
      const s = new FakeSocket(url);
      sockets.push(s);
      return s;
    },
    fetch: async (input, init) => {
      if (opts.down) throw new TypeError('Failed to fetch');
      const url = new URL(input);
      const headers = (init?.headers ?? {}) as Record<string, string>;
      const call: Call = {
        method: init?.method ?? 'GET',
        path: url.pathname + url.search,
        auth: headers.Authorization ?? null,
        body: init?.body ? JSON.parse(String(init.body)) : undefined,
      };
      calls.push(call);
      if (call.auth !== `Bearer ${opts.token ?? TOKEN}`)
        return json(401, { error: { code: 'unauthorized', message: 'wrong token: every /api/ request needs the token' } });
      const key = `${call.method} ${url.pathname}`;
      switch (key) {
        case 'GET /api/probe':
          return json(200, { capabilities: [{ metric: 'page-placement', status: 'measured', reason: 'move_pages' }] });
        case 'GET /api/topology':
          return json(200, { name: 'box', nodes: [{ id: 0, cpus: [0, 1] }] });
        case 'GET /api/processes':
          return json(200, { processes: [{ pid: 77, name: 'app', command: ['./app'], threads: 1, rssBytes: 4096, uid: 1, own: true }] });
        case 'POST /api/recordings':
          if (opts.startError) return json(opts.startError.status, { error: { code: opts.startError.code, message: opts.startError.message } });
          return json(201, recording);
        case 'POST /api/recordings/r1/stop':
          return json(202, { ...recording, stopRequested: true });
        case 'POST /api/runs': {
          const run = rustExample('planRun', 0);
          return call.body && (call.body as { dryRun?: boolean }).dryRun ? json(200, rustExample('planRun', 3)) : json(201, run);
        }
        case 'GET /api/runs/a1b2c3d4e5f60718':
          // running on the first poll, exited on the second
          return json(200, rustExample('planRun', calls.filter((c) => c.path.startsWith('/api/runs/')).length > 1 ? 1 : 0));
        case 'GET /api/recordings/r1/trace':
          return new Response(new Uint8Array([0x50, 0x4b, 3, 4]), { status: 200 });
        default:
          return json(404, { error: { code: 'not-found', message: key } });
      }
    },
  };
  return { deps, calls, sockets };
}

/** Timers under test control. */
function manualTimers() {
  let queue: Array<() => void> = [];
  return {
    setTimer: (fn: () => void) => {
      queue.push(fn);
      return queue.length;
    },
    clearTimer: () => {},
    run() {
      const q = queue;
      queue = [];
      q.forEach((f) => f());
    },
  };
}

const flushPromises = () => new Promise((r) => setTimeout(r, 0));

describe('token', () => {
  it('reads ?token= and strips it from share links, keeping the rest', () => {
    expect(tokenFromSearch(`?token=${TOKEN}`)).toBe(TOKEN);
    expect(tokenFromSearch('?trace=x')).toBeNull();
    expect(tokenFromSearch('?token=')).toBeNull();
    expect(withoutToken(`http://h:1/?trace=samples/a.numascope&token=${TOKEN}&view=memory#x`)).toBe(
      'http://h:1/?trace=samples/a.numascope&view=memory#x',
    );
    expect(withoutToken(`http://h:1/?token=${TOKEN}`)).toBe('http://h:1/');
    expect(withoutToken('http://h:1/?trace=a')).toBe('http://h:1/?trace=a');
  });

  it('sends the token as a Bearer header on requests, and only in the WebSocket URL otherwise', async () => {
    const server = fakeServer();
    const api = new LiveApi(TOKEN, server.deps);
    await api.probe();
    expect(server.calls[0]).toMatchObject({ path: '/api/probe', auth: `Bearer ${TOKEN}` });
    expect(server.calls[0]!.path).not.toContain(TOKEN);
    expect(api.liveUrl('r1')).toBe(`ws://127.0.0.1:41873/api/recordings/r1/live?token=${TOKEN}`);
  });
});

describe('launch with a plan', () => {
  it('posts /api/runs, reports the pid, polls until the program exits and resolves to the final report', async () => {
    const server = fakeServer();
    const api = new LiveApi(TOKEN, server.deps);
    const pids: number[] = [];
    const plan = { format: 'numascope-plan', target: { pid: 1 } };
    const report = await api.runPlan({ plan, anyProgram: undefined }, (p) => pids.push(p));
    expect(pids).toEqual([5151]);
    expect(report).toEqual(rustExample('planRun', 1).report);
    expect(report.exitCode).toBe(0);
    expect(server.calls.map((c) => `${c.method} ${c.path}`)).toEqual(['POST /api/runs', 'GET /api/runs/a1b2c3d4e5f60718', 'GET /api/runs/a1b2c3d4e5f60718']);
    // only the fields given are sent
    expect(server.calls[0]!.body).toEqual({ plan });
    // a dry run is answered at once
    const dry = await new LiveApi(TOKEN, fakeServer().deps).runPlan({ plan, dryRun: true });
    expect(dry.dryRun).toBe(true);
  });
});

describe('API errors', () => {
  it('401 is an auth error with the server message', async () => {
    const api = new LiveApi('wrong', fakeServer().deps);
    const e = await api.probe().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ApiError);
    expect(e).toMatchObject({ kind: 'auth', status: 401, code: 'unauthorized' });
    expect((e as Error).message).toContain('wrong token');
    expect((e as Error).message).not.toContain('wrong token: wrong'); // the token itself is never echoed
  });
  it('a network failure is "unreachable"', async () => {
    const e = await new LiveApi(TOKEN, fakeServer({ down: true }).deps).probe().catch((x: unknown) => x);
    expect(e).toMatchObject({ kind: 'unreachable' });
    expect((e as Error).message).toContain('numascope serve did not answer');
  });
});

describe('parseLiveMessage', () => {
  it('parses windows and the end message', () => {
    const w = parseLiveMessage(JSON.stringify(windowMsg(3)));
    expect(w).toMatchObject({ type: 'window', seq: 3, totals: { pages: 32 } });
    const end = parseLiveMessage(JSON.stringify({ type: 'end', recording: 'r1', status: 'finished', summary: summary({ stopReason: 'signal' }), error: null }));
    expect(end).toMatchObject({ type: 'end', status: 'finished', summary: { stopReason: 'signal' } });
    // The collector's own messages (packages/protocol/fixtures) parse unchanged.
    for (const m of [rustExample('liveWindow'), rustExample('liveWindow', 1), rustExample('liveEnd'), rustExample('liveEnd', 1)])
      expect(parseLiveMessage(JSON.stringify(m))).toEqual(m);
  });
  it('rejects malformed messages with a ProtocolError', () => {
    expect(() => parseLiveMessage('not json')).toThrow(ProtocolError);
    expect(() => parseLiveMessage('{"type":"other"}')).toThrow(/unknown live message type/);
    expect(() => parseLiveMessage(JSON.stringify({ ...windowMsg(0), totals: null }))).toThrow(/totals/);
    expect(() => parseLiveMessage(JSON.stringify({ ...windowMsg(0), faultsByNode: [{ node: 'x' }] }))).toThrow(/faultsByNode/);
    expect(() => parseLiveMessage(JSON.stringify({ type: 'end', recording: 'r1', status: 'weird', summary: null, error: null }))).toThrow(/^end\.status: /);
    // Strict: a field the protocol does not have is refused, named.
    expect(() => parseLiveMessage(JSON.stringify({ ...windowMsg(0), cpuTime: 3 }))).toThrow('window: unexpected field(s) "cpuTime"');
  });
});

describe('splitArgv / filterProcesses', () => {
  it('splits a command line like a shell, without running one', () => {
    expect(splitArgv('./testload --threads 2  --mib 8')).toEqual(['./testload', '--threads', '2', '--mib', '8']);
    expect(splitArgv(`app "a b" 'c d' e\\ f ""`)).toEqual(['app', 'a b', 'c d', 'e f', '']);
    expect(splitArgv('   ')).toEqual([]);
    expect(() => splitArgv('app "open')).toThrow(/unclosed/);
  });
  it('filters processes by pid, name or command', () => {
    const list = [
      { pid: 1, name: 'init', command: ['/sbin/init'], threads: 1, rssBytes: null, uid: 0, own: false },
      { pid: 77, name: 'app', command: ['./app', '--big'], threads: 4, rssBytes: 1, uid: 1, own: true },
    ];
    expect(filterProcesses(list, '77').map((p) => p.pid)).toEqual([77]);
    expect(filterProcesses(list, 'INIT').map((p) => p.pid)).toEqual([1]);
    expect(filterProcesses(list, '--big').map((p) => p.pid)).toEqual([77]);
    expect(filterProcesses(list, '').length).toBe(2);
  });
  it('a search narrowed to one process it can attach to chooses it; a pick stays while listed', () => {
    const init = { pid: 1, name: 'init', command: ['/sbin/init'], threads: 1, rssBytes: null, uid: 0, own: false };
    const app = { pid: 77, name: 'app', command: ['./app'], threads: 4, rssBytes: 1, uid: 1, own: true };
    const db = { pid: 80, name: 'db', command: ['./db'], threads: 2, rssBytes: 1, uid: 1, own: true };
    expect(chosenPid(null, filterProcesses([init, app, db], 'app'))).toBe(77);
    expect(chosenPid(null, [init, app, db])).toBeNull();
    expect(chosenPid(80, [init, app, db])).toBe(80);
    // The pick filtered out: the one left is chosen; another user's process never is.
    expect(chosenPid(80, [app])).toBe(77);
    expect(chosenPid(null, [init])).toBeNull();
  });
  it('hides kernel threads (no command line, no RSS) unless asked, and searches them by name when shown', () => {
    const list = [
      { pid: 2, name: 'kthreadd', command: [], threads: 1, rssBytes: null, uid: 0, own: false },
      { pid: 15, name: 'ksoftirqd/0', command: [], threads: 1, rssBytes: null, uid: 0, own: false },
      { pid: 77, name: 'app', command: ['./app'], threads: 4, rssBytes: 4096, uid: 1, own: true },
    ];
    expect(isKernelThread(list[1]!)).toBe(true);
    expect(isKernelThread(list[2]!)).toBe(false);
    expect(filterProcesses(list, '').map((p) => p.pid)).toEqual([77]);
    expect(filterProcesses(list, 'ksoft').map((p) => p.pid)).toEqual([]);
    expect(filterProcesses(list, 'ksoft', { kernelThreads: true }).map((p) => p.pid)).toEqual([15]);
    expect(filterProcesses(list, '', { kernelThreads: true }).length).toBe(3);
  });
});

describe('liveReducer', () => {
  const ready = liveReducer(initialState(true), { type: 'connected', probe: rustExample('probe'), topology: rustExample('machine'), processes: [] });
  it('starts at no-token without a token, connecting with one', () => {
    expect(initialState(false).phase.kind).toBe('no-token');
    expect(ready.phase.kind).toBe('ready');
  });
  it('goes ready → starting → running → stopping → downloading → ended', () => {
    let s = liveReducer(ready, { type: 'start' });
    expect(s.phase.kind).toBe('starting');
    s = liveReducer(s, { type: 'started', recording });
    s = liveReducer(s, { type: 'windows', windows: [windowMsg(0), windowMsg(1)] });
    expect(s.latest?.seq).toBe(1);
    s = liveReducer(s, { type: 'windows', windows: [windowMsg(1)] }); // a repeat is ignored
    expect(s.windows).toHaveLength(2);
    s = liveReducer(s, { type: 'stop' });
    expect(s.phase.kind).toBe('stopping');
    s = liveReducer(s, { type: 'end', end: { type: 'end', recording: 'r1', status: 'finished', summary: summary({ stopReason: 'signal' }), error: null } });
    expect(s.phase.kind).toBe('downloading');
    s = liveReducer(s, { type: 'trace-opened' });
    expect(s.phase.kind).toBe('ended');
    s = liveReducer(s, { type: 'reset' });
    expect(s.phase.kind).toBe('ready');
    expect(s.latest).toBeNull();
  });
  it('a failed end, a lost socket and a refused start have their own states', () => {
    const running = liveReducer(liveReducer(ready, { type: 'start' }), { type: 'started', recording });
    const failed = liveReducer(running, {
      type: 'end',
      end: { type: 'end', recording: 'r1', status: 'failed', summary: null, error: { code: 'permission-denied', message: 'perf_event_open: EACCES' } },
    });
    expect(failed.phase).toMatchObject({ kind: 'failed', error: { code: 'permission-denied' } });
    expect(liveReducer(running, { type: 'lost', message: 'closed' }).phase.kind).toBe('gone');
    const refused = liveReducer(liveReducer(ready, { type: 'start' }), { type: 'start-failed', error: { code: 'pid-not-found', message: 'no pid 9' } });
    expect(refused.phase.kind).toBe('ready');
    expect(refused.startError?.code).toBe('pid-not-found');
  });
  it('keeps at most MAX_WINDOWS windows', () => {
    let s = liveReducer(liveReducer(ready, { type: 'start' }), { type: 'started', recording });
    s = liveReducer(s, { type: 'windows', windows: Array.from({ length: MAX_WINDOWS + 10 }, (_, i) => windowMsg(i)) });
    expect(s.windows).toHaveLength(MAX_WINDOWS);
    expect(s.windows[0]!.seq).toBe(10);
  });
  it('says when the process exited by itself', () => {
    expect(endReason({ type: 'end', recording: 'r', status: 'finished', summary: summary({ stopReason: 'process-exit', exitCode: 0 }), error: null })).toBe(
      'The process exited (exit code 0): the recording ended by itself.',
    );
    expect(endReason({ type: 'end', recording: 'r', status: 'finished', summary: summary({ stopReason: 'signal' }), error: null })).toBe('Stopped on request.');
  });
});

describe('LiveSession against a fake server', () => {
  it('connects, records, batches windows, stops, downloads and hands over the trace', async () => {
    const server = fakeServer();
    const timers = manualTimers();
    const opened: Array<[string, number]> = [];
    let busy = 0;
    const session = new LiveSession(new LiveApi(TOKEN, server.deps), {
      ...timers,
      work: () => {
        busy++;
        return () => busy--;
      },
      onTrace: (name, bytes) => {
        opened.push([name, bytes.byteLength]);
      },
    });
    let renders = 0;
    session.subscribe(() => renders++);
    const connecting = session.connect();
    expect(busy).toBe(1);
    await connecting;
    expect(busy).toBe(0);
    expect(session.state.phase.kind).toBe('ready');
    expect(session.state.processes?.[0]?.pid).toBe(77);

    await session.start({ command: ['./app', '--x'], durationS: 2 });
    expect(server.calls.at(-1)).toMatchObject({ method: 'POST', path: '/api/recordings', body: { command: ['./app', '--x'], durationS: 2 } });
    expect(session.state.phase.kind).toBe('running');
    const socket = server.sockets[0]!;
    expect(socket.url).toBe(`ws://127.0.0.1:41873/api/recordings/r1/live?token=${TOKEN}`);

    // A burst of windows: the first renders at once, the rest in one batch when the timer fires.
    renders = 0;
    for (let i = 0; i < 50; i++) socket.send(windowMsg(i));
    expect(session.state.latest?.seq).toBe(0);
    timers.run();
    expect(session.state.latest?.seq).toBe(49);
    expect(renders).toBe(2);

    await session.stop();
    expect(server.calls.at(-1)).toMatchObject({ method: 'POST', path: '/api/recordings/r1/stop' });
    expect(session.state.phase.kind).toBe('stopping');
    socket.send(windowMsg(50, { final: true }));
    socket.send({ type: 'end', recording: 'r1', status: 'finished', summary: summary({ stopReason: 'signal', pid: 77 }), error: null });
    expect(session.state.latest?.seq).toBe(50); // pending windows are flushed before the end
    expect(session.state.phase.kind).toBe('downloading');
    await flushPromises();
    expect(session.state.phase.kind).toBe('ended');
    expect(opened).toEqual([['numascope-r1.numascope', 4]]);
    expect(busy).toBe(0);
    // Every HTTP call carried the token in the header and nowhere else.
    for (const c of server.calls) {
      expect(c.auth).toBe(`Bearer ${TOKEN}`);
      expect(c.path).not.toContain(TOKEN);
    }
  });

  it('a wrong token ends in unauthorized with the server message', async () => {
    const session = new LiveSession(new LiveApi('stale', fakeServer().deps));
    await session.connect();
    expect(session.state.phase).toMatchObject({ kind: 'unauthorized', status: 401 });
  });

  it('a server that is down is unreachable; one that drops the socket is gone', async () => {
    const down = new LiveSession(new LiveApi(TOKEN, fakeServer({ down: true }).deps));
    await down.connect();
    expect(down.state.phase.kind).toBe('unreachable');

    const server = fakeServer();
    const session = new LiveSession(new LiveApi(TOKEN, server.deps), manualTimers());
    await session.connect();
    await session.start({ pid: 77, durationS: 10 });
    server.sockets[0]!.drop(1006);
    expect(session.state.phase).toMatchObject({ kind: 'gone' });
    expect((session.state.phase as { message: string }).message).toContain('closed before the recording ended');
  });

  it('a refused start shows the server message and stays on the form', async () => {
    const server = fakeServer({ startError: { status: 400, code: 'command-not-found', message: 'program "nope" not found in PATH' } });
    const session = new LiveSession(new LiveApi(TOKEN, server.deps));
    await session.connect();
    await session.start({ command: ['nope'] });
    expect(session.state.phase.kind).toBe('ready');
    expect(session.state.startError).toEqual({ code: 'command-not-found', message: 'program "nope" not found in PATH' });
  });

  it('a recording that fails (permission) shows its error; garbage on the socket is reported', async () => {
    const server = fakeServer();
    const session = new LiveSession(new LiveApi(TOKEN, server.deps), manualTimers());
    await session.connect();
    await session.start({ pid: 77 });
    server.sockets[0]!.send({ type: 'end', recording: 'r1', status: 'failed', summary: null, error: { code: 'permission-denied', message: 'perf_event_paranoid is 4' } });
    expect(session.state.phase).toMatchObject({ kind: 'failed', error: { code: 'permission-denied', message: 'perf_event_paranoid is 4' } });

    session.reset();
    await session.start({ pid: 77 });
    server.sockets[1]!.onmessage?.({ data: '{"type":"nope"}' });
    expect(session.state.phase.kind).toBe('gone');
    expect(server.sockets[1]!.closed).toBe(true);
  });
});
