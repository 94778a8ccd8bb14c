/**
 * The Memory view shows allocation sites (issue #16): the regions table's site column, the region
 * detail's site, its objects (allocations) and the selected one's call stack, on a real recording
 * made with allocation sites (sample-traces/recorded-alloc-sites.numascope), answered by the same
 * query code the Worker runs.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { cleanup, fireEvent, render, screen, within } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { answerQuery, queryColumns, readTrace, type TraceAnswer, type TraceQuery } from '@numascope/policy-engine';
import { TraceContext } from '../src/ui/hooks/trace-context';
import type { QueryClient, TraceContextValue } from '../src/ui/hooks/trace-context';
import { DEFAULT_VIEW_STATE } from '../src/ui/url-state';
import type { ViewState } from '../src/ui/url-state';
import { openTraceBytes } from '../src/worker/open';
import { MemoryView } from '../src/ui/views/MemoryView';

afterEach(cleanup);

const SAMPLES = path.resolve(__dirname, '../../../sample-traces');
const bytesOf = (name: string) => new Uint8Array(readFileSync(path.join(SAMPLES, name)));
const SOURCE = readFileSync(path.resolve(__dirname, '../../../native/collector/crates/cli/tests/fixtures/alloc_sites.c'), 'utf8').split('\n');
const lineOf = (marker: string) => SOURCE.findIndex((l) => l.includes(`SITE:${marker} `)) + 1;

function open(name: string) {
  const bytes = bytesOf(name);
  const opened = openTraceBytes(bytes, 1);
  if (!('overview' in opened)) throw new Error(`${name} did not open`);
  const cols = queryColumns(readTrace(bytes));
  const client: QueryClient = {
    query: async <Q extends TraceQuery>(_id: number, q: Q) => answerQuery(cols, q) as TraceAnswer<Q>,
    bytes: async () => new ArrayBuffer(0),
  };
  return { opened, cols, client };
}

function wrap(client: QueryClient, state: Partial<ViewState>, node: React.ReactNode) {
  const value: TraceContextValue = { client, traceId: 1, state: { ...DEFAULT_VIEW_STATE, ...state }, navigate: vi.fn() };
  return <TraceContext.Provider value={value}>{node}</TraceContext.Provider>;
}

describe('Memory view with allocation sites', () => {
  const { opened, cols, client } = open('recorded-alloc-sites.numascope');
  const o = cols.objects!;
  const table = Array.from(o.size).indexOf(8 * 1024 * 1024);
  const region = o.region[table]!;

  it('names the site of a region in the table and in its detail, lists its objects and shows the stack', async () => {
    render(wrap(client, { view: 'memory', region }, <MemoryView summary={opened.summary} regions={opened.overview.regions} />));
    const site = `main alloc_sites.c:${lineOf('table')}`;
    expect((await screen.findByTestId(`region-${region}-site`)).textContent).toBe(site);
    expect(screen.getByTestId('region-detail-site').textContent).toBe(site);
    const objects = await screen.findByTestId('region-objects');
    const first = within(objects).getAllByTestId('object-row')[0]!;
    expect(Number(first.dataset.allocation)).toBe(table);
    expect(within(first).getByTestId('object-select').textContent).toBe(site);
    expect(Number(within(first).getByTestId('object-pages').dataset.value)).toBeGreaterThan(0);
    const stack = screen.getByTestId('object-stack');
    expect(stack.dataset.allocation).toBe(String(table));
    const frames = within(stack).getAllByTestId('object-frame');
    expect(frames[0]!.textContent).toContain('main');
    expect(frames[0]!.textContent).toContain(`alloc_sites.c:${lineOf('table')}`);
    expect(frames[0]!.textContent).toMatch(/alloc_sites\+0x[0-9a-f]+/);
  });

  it('the matrix region shows make_matrix called from main', async () => {
    const matrix = Array.from(o.size).indexOf(2 * 1024 * 1024);
    render(wrap(client, { view: 'memory', region: o.region[matrix]! }, <MemoryView summary={opened.summary} regions={opened.overview.regions} />));
    const rows = await screen.findAllByTestId('object-row');
    const row = rows.find((r) => Number(r.dataset.allocation) === matrix)!;
    fireEvent.click(within(row).getByTestId('object-select'));
    const frames = within(screen.getByTestId('object-stack')).getAllByTestId('object-frame').map((f) => f.textContent ?? '');
    expect(frames[0]).toContain(`make_matrix alloc_sites.c:${lineOf('matrix')}`);
    expect(frames.some((f) => f.startsWith('main'))).toBe(true);
  });
});

describe('Memory view of a trace without allocation sites', () => {
  it('says why there are none, from the capability', async () => {
    const { opened, client } = open('recorded-testload-4threads.numascope');
    render(wrap(client, { view: 'memory', region: 0 }, <MemoryView summary={opened.summary} regions={opened.overview.regions} />));
    const none = await screen.findByTestId('region-objects-none');
    expect(none.textContent).toMatch(/No allocation sites in this trace: format version 1 file/);
    expect(screen.getByTestId('region-detail-site').textContent).toBe('unknown');
  });
});
