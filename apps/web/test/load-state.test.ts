// @vitest-environment node
import { describe, expect, it } from 'vitest';
import { hintForName, idleStateOf, initialLoadState, loadReducer } from '../src/ui/load-state';
import type { LoadEvent, LoadState } from '../src/ui/load-state';
import type { OpenResult, TraceOverview } from '../src/worker/protocol';
import { summaryFixture } from './summary-fixture';

const overview = (traceId: number): TraceOverview => ({
  traceId,
  windows: { windowUs: 1000, windows: 0, slots: 3, samples: new Float64Array(0), faults: new Float64Array(0), accesses: new Float64Array(0) },
  regions: [],
  migrations: [],
});
const good = (traceId: number): OpenResult => ({ summary: summaryFixture(), overview: overview(traceId), parseMs: 1 });
const notZip: OpenResult = { error: { code: 'not-zip', message: 'This file is not a ZIP archive.' } };

function run(start: LoadState, ...events: LoadEvent[]): LoadState {
  return events.reduce(loadReducer, start);
}

describe('loadReducer', () => {
  it('starts loading the ?trace= URL, else on Live (serve token, desktop) or the landing page', () => {
    expect(initialLoadState('samples/a.numascope', false).screen).toEqual({ kind: 'loading', source: 'samples/a.numascope', phase: 'fetching', loadedBytes: 0, totalBytes: null });
    expect(initialLoadState(null, true).screen).toEqual({ kind: 'live' });
    expect(initialLoadState(null, false).screen).toEqual({ kind: 'landing' });
  });

  it('goes fetching → parsing → ready for a URL, with download progress', () => {
    let s = loadReducer(initialLoadState('a.numascope', false), { type: 'open-url', url: 'a.numascope' });
    expect([s.token, s.url]).toEqual([1, 'a.numascope']);
    s = loadReducer(s, { type: 'progress', token: 1, loadedBytes: 10, totalBytes: 100 });
    expect(s.screen).toEqual({ kind: 'loading', source: 'a.numascope', phase: 'fetching', loadedBytes: 10, totalBytes: 100 });
    s = loadReducer(s, { type: 'parsing', token: 1, size: 100 });
    expect(s.screen).toMatchObject({ kind: 'loading', phase: 'parsing', loadedBytes: 100, totalBytes: 100 });
    s = loadReducer(s, { type: 'opened', token: 1, result: good(7) });
    expect(s.screen).toMatchObject({ kind: 'ready', source: 'a.numascope', token: 1 });
    expect(s.screen.kind === 'ready' && s.screen.overview.traceId).toBe(7);
  });

  it('a newer load wins: every event of an older one is ignored', () => {
    const start = initialLoadState(null, false);
    const s = run(start, { type: 'open-url', url: 'slow.numascope' }, { type: 'open-file', name: 'picked.numascope', size: 50 });
    expect([s.token, s.url, s.source]).toEqual([2, null, 'picked.numascope']);
    // The slow download's late events change nothing.
    for (const late of [
      { type: 'progress', token: 1, loadedBytes: 5, totalBytes: 9 },
      { type: 'parsing', token: 1, size: 9 },
      { type: 'opened', token: 1, result: good(1) },
      { type: 'failed', token: 1, error: { code: 'http', message: '404' } },
    ] satisfies LoadEvent[]) {
      expect(loadReducer(s, late)).toBe(s);
    }
    const done = run(s, { type: 'parsing', token: 2, size: 50 }, { type: 'opened', token: 2, result: good(2) });
    expect(done.screen).toMatchObject({ kind: 'ready', source: 'picked.numascope', token: 2 });
  });

  it('failures: a fetch error as it is, a Worker error with a hint when the name is not a trace', () => {
    const fetching = loadReducer(initialLoadState(null, false), { type: 'open-url', url: 'x.numascope' });
    expect(loadReducer(fetching, { type: 'failed', token: 1, error: { code: 'http', message: 'HTTP 404' } }).screen).toEqual({
      kind: 'error',
      source: 'x.numascope',
      error: { code: 'http', message: 'HTTP 404' },
    });
    const picked = run(initialLoadState(null, false), { type: 'open-file', name: 'photo.jpg', size: 3 }, { type: 'opened', token: 1, result: notZip });
    expect(picked.screen.kind === 'error' && picked.screen.error.message).toMatch(/named "photo\.jpg"; numascope traces end in \.numascope/);
    const named = run(initialLoadState(null, false), { type: 'open-file', name: 'bad.numascope', size: 3 }, { type: 'opened', token: 1, result: notZip });
    expect(named.screen.kind === 'error' && named.screen.error.message).toBe('This file is not a ZIP archive.');
    expect(hintForName('x.numascope?raw=1', notZip.error).message).toBe('This file is not a ZIP archive.');
  });

  it('a desktop dialog error ends the current load; going home forgets the URL', () => {
    const loading = loadReducer(initialLoadState(null, false), { type: 'open-url', url: 'a.numascope' });
    const err = loadReducer(loading, { type: 'error', source: 'Open trace…', error: { code: 'read-failed', message: 'denied' } });
    expect(err.screen).toMatchObject({ kind: 'error', source: 'Open trace…' });
    expect(loadReducer(err, { type: 'opened', token: 1, result: good(1) })).toBe(err);
    const home = loadReducer(err, { type: 'home', live: false });
    expect([home.screen.kind, home.url]).toEqual(['landing', null]);
    expect(loadReducer(err, { type: 'home', live: true }).screen.kind).toBe('live');
  });

  it('a load goes on behind the Live screen and its answer replaces it', () => {
    const s = run(initialLoadState(null, false), { type: 'open-url', url: 'a.numascope' }, { type: 'show-live' });
    expect(s.screen.kind).toBe('live');
    expect(loadReducer(s, { type: 'opened', token: 1, result: good(1) }).screen.kind).toBe('ready');
  });

  it('a live recording\'s bytes go straight to parsing, with no URL', () => {
    const s = loadReducer(initialLoadState(null, true), { type: 'open-bytes', name: 'live.numascope', size: 42 });
    expect(s.screen).toEqual({ kind: 'loading', source: 'live.numascope', phase: 'parsing', loadedBytes: 42, totalBytes: 42 });
    expect(s.url).toBeNull();
  });
});

describe('idleStateOf', () => {
  it('follows the screen; a crashed view is an error, and only for its own load', () => {
    const ready = run(initialLoadState(null, false), { type: 'open-file', name: 'a.numascope', size: 1 }, { type: 'opened', token: 1, result: good(1) });
    expect(idleStateOf(ready, 'loading', false)).toBe('ready');
    const crashed = loadReducer(ready, { type: 'crashed', token: 1 });
    expect(idleStateOf(crashed, 'loading', false)).toBe('error');
    // Reporting the same crash again changes nothing (App's effect may run more than once).
    expect(loadReducer(crashed, { type: 'crashed', token: 1 })).toBe(crashed);
    expect(loadReducer(ready, { type: 'crashed', token: 9 })).toBe(ready);
    expect(idleStateOf(loadReducer(ready, { type: 'open-url', url: 'b' }), 'ready', false)).toBe('loading');
    expect(idleStateOf(initialLoadState(null, false), 'ready', true)).toBe('loading');
    expect(idleStateOf(initialLoadState(null, false), 'ready', false)).toBe('empty');
    expect(idleStateOf(initialLoadState(null, true), 'error', false)).toBe('error');
  });
});
