/**
 * The Code view: the Worker's mapping of its controls to the engine's code attribution
 * (worker/code.ts, through the handler), the view's filters in the link (url-state.ts), its
 * selectors (ui/selectors/code.ts) and the view rendered from the Worker's answers, on the real
 * recording with call stacks and on a synthetic trace without them.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { cleanup, fireEvent, render, screen, within } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { callTree, functionTable, readTrace, summarizeTrace } from '@numascope/policy-engine';
import type { CallTreeNode, FunctionRow, Trace } from '@numascope/policy-engine';
import { CODE_FUNCTION_LIMIT, codeOptions, codeOutcome, touchedByOutcome } from '../src/worker/code';
import type { CodeOutcome, CodeRequest } from '../src/worker/code';
import { createWorkerHandler } from '../src/worker/handler';
import type { WorkerReply } from '../src/worker/protocol';
import { codeRequest, defaultExpanded, localityPatch, localityValue, nextSort, sortFunctions, treeRows, weightUnit } from '../src/ui/selectors/code';
import { DEFAULT_VIEW_STATE, parseViewState, writeViewState } from '../src/ui/url-state';
import type { ViewState } from '../src/ui/url-state';
import { SHORTCUTS } from '../src/ui/views/KeyboardHelp';
import { TraceContext } from '../src/ui/hooks/trace-context';
import type { QueryClient } from '../src/ui/hooks/trace-context';
import { CodeView } from '../src/ui/views/CodeView';
import { viewForKey } from '../src/ui/selectors/navigation';

afterEach(cleanup);

const SAMPLES = path.resolve(__dirname, '../../../sample-traces');
const bytesOf = (name: string) => new Uint8Array(readFileSync(path.join(SAMPLES, name)));
const CODE = 'recorded-code-sites.numascope';
const SYNTHETIC = 'two-groups.numascope';
const traces = new Map<string, Trace>();
const traceOf = (name: string) => traces.get(name) ?? traces.set(name, readTrace(bytesOf(name))).get(name)!;

const ALL: CodeRequest = { by: 'site', range: null, thread: null, op: null, locality: null, node: null, object: null };

describe('the Worker’s code requests (worker/code.ts)', () => {
  it('maps every control to the engine’s options: one set for the table, the tree and the objects', () => {
    expect(codeOptions({ by: 'self', range: { fromUs: 10, toUs: 20 }, thread: 3, op: 'fault', locality: 'remote', node: null, object: 'main code_sites.c:33' })).toEqual({
      by: 'self',
      range: { fromUs: 10, toUs: 20 },
      threads: [3],
      op: 'fault',
      locality: 'remote',
      node: null,
      object: 'main code_sites.c:33',
    });
    expect(codeOptions(ALL)).toMatchObject({ threads: null, range: null });
  });

  it('answers with the engine’s function table and call tree as they are (the CLI’s numbers)', () => {
    const trace = traceOf(CODE);
    const out = codeOutcome(trace, ALL);
    if (!out.available) throw new Error(out.reason);
    expect(out.table).toEqual(functionTable(trace, { ...codeOptions(ALL), limit: CODE_FUNCTION_LIMIT, objectLimit: 20 }));
    expect(out.tree.nodes).toEqual(callTree(trace, { ...codeOptions(ALL), limit: 20_000 }).nodes);
    const init = out.table.rows.slice(0, 3).map((r) => [r.function, r.location, r.firstTouches, r.pagesSampled, r.objects[0]!.site]);
    expect(init).toEqual([
      ['init_alpha', 'code_sites.c:19', 1024, 1024, 'main code_sites.c:32'],
      ['init_beta', 'code_sites.c:23', 1024, 1024, 'main code_sites.c:33'],
      ['init_gamma', 'code_sites.c:27', 1024, 1024, 'main code_sites.c:34'],
    ]);
    expect(out.objects.map((o) => o.object)).toEqual(expect.arrayContaining(['main code_sites.c:32', 'main code_sites.c:33', 'main code_sites.c:34']));
    // The object filter applies to the table and the tree alike.
    const beta = codeOutcome(trace, { ...ALL, object: 'main code_sites.c:33' });
    if (!beta.available) throw new Error(beta.reason);
    expect(beta.table.rows.map((r) => r.function)).toEqual(['init_beta']);
    expect(beta.tree.totalWeight).toBe(1024);
    expect(beta.tree.nodes.filter((n) => n.self > 0).map((n) => n.name)).toEqual(['init_beta']);
  });

  it('touched by: the functions of one allocation’s data object; a trace without stacks gives the capability’s reason', () => {
    const trace = traceOf(CODE);
    const beta = codeOutcome(trace, ALL);
    if (!beta.available) throw new Error(beta.reason);
    const allocation = beta.table.rows.find((r) => r.function === 'init_beta')!.objects[0]!.allocation;
    const touched = touchedByOutcome(trace, allocation, null);
    expect(touched.available && touched.object).toBe('main code_sites.c:33');
    expect(touched.available && touched.table!.rows.map((r) => r.function)).toEqual(['init_beta']);
    expect(touchedByOutcome(trace, 99_999, null)).toEqual({ available: true, object: null, table: null });
    const none = codeOutcome(traceOf(SYNTHETIC), ALL);
    expect(none).toEqual({ available: false, reason: 'synthetic trace: no code made the accesses, so samples have no call stacks', c2c: null });
    expect(touchedByOutcome(traceOf(SYNTHETIC), 0, null).available).toBe(false);
  });

  it('the handler answers `code` and `touched-by` on the open trace', () => {
    const replies: WorkerReply[] = [];
    const handle = createWorkerHandler((r) => replies.push(r));
    handle({ id: 1, type: 'open', bytes: bytesOf(CODE).slice().buffer });
    const opened = replies[0]!;
    if (opened.type !== 'open' || !('overview' in opened)) throw new Error('did not open');
    const traceId = opened.overview.traceId;
    handle({ id: 2, type: 'code', traceId, request: { ...ALL, op: 'fault', range: { fromUs: 0, toUs: 1 } } });
    const code = replies[1]!;
    expect(code.type).toBe('code');
    if (code.type !== 'code' || !code.outcome.available) throw new Error('no code answer');
    expect(code.outcome.table.filters).toMatchObject({ op: 'fault', range: { fromUs: 0, toUs: 1 } });
    expect(code.outcome.table.totals.samples).toBe(0);
    handle({ id: 3, type: 'touched-by', traceId, allocation: 0, range: null });
    const t = replies[2]!;
    expect(t.type === 'touched-by' && t.outcome.available && t.outcome.object).toBe('main code_sites.c:32');
    handle({ id: 4, type: 'code', traceId: traceId + 1, request: ALL });
    expect(replies[3]).toMatchObject({ type: 'failed' });
  });
});

describe('the Code view’s state in the link (url-state.ts)', () => {
  it('keeps every filter and the selection, and reads them back', () => {
    const s: ViewState = {
      ...DEFAULT_VIEW_STATE,
      view: 'code',
      range: { fromUs: 100, toUs: 900 },
      codeBy: 'self',
      codeLoc: null,
      codeNode: 1,
      codeOp: 'fault',
      codeObject: 'main code_sites.c:33',
      codeThread: 2,
      codeFn: 'init_beta',
    };
    const search = writeViewState('?trace=samples/x.numascope', s);
    expect(search).toBe('?trace=samples/x.numascope&view=code&from=100&to=900&cby=self&cloc=n1&cop=fault&cobj=main+code_sites.c:33&cthr=2&cfn=init_beta&v=1');
    expect(parseViewState(search)).toEqual(s);
    expect(parseViewState('?view=code&cloc=remote').codeLoc).toBe('remote');
    expect(parseViewState('?region=6&obj=1')).toMatchObject({ region: 6, obj: 1 });
  });

  it('drops malformed values back to their defaults', () => {
    const p = parseViewState('?view=code&cby=frame&cloc=far&cop=write&cthr=-1&cobj=&cfn=' + encodeURIComponent('a\u0001b') + '&obj=x');
    expect(p).toMatchObject({ view: 'code', codeBy: null, codeLoc: null, codeNode: null, codeOp: null, codeThread: null, codeObject: null, codeFn: null, obj: null });
  });

  it('the tenth view has key 0, and the shortcuts list says so', () => {
    expect(viewForKey('0')).toBe('code');
    expect(viewForKey('9')).toBe('machine');
    expect(viewForKey('1')).toBe('overview');
    expect(SHORTCUTS.find((k) => k.keys === '0')?.what).toBe('Code view');
    expect(SHORTCUTS.filter((k) => /^\d$/.test(k.keys))).toHaveLength(10);
  });
});

describe('the Code view’s selectors', () => {
  it('the request from the view state: the range, and a locality or a node of the memory', () => {
    expect(codeRequest({ ...DEFAULT_VIEW_STATE, range: { fromUs: 1, toUs: 2 }, codeThread: 4 })).toEqual({ ...ALL, range: { fromUs: 1, toUs: 2 }, thread: 4 });
    expect(codeRequest({ ...DEFAULT_VIEW_STATE, codeLoc: 'local', codeNode: 3 })).toMatchObject({ locality: 'local', node: null });
    expect(localityPatch('n3')).toEqual({ codeLoc: null, codeNode: 3 });
    expect(localityPatch('remote')).toEqual({ codeLoc: 'remote', codeNode: null });
    expect(localityPatch('all')).toEqual({ codeLoc: null, codeNode: null });
    expect(localityValue({ codeLoc: null, codeNode: 2 })).toBe('n2');
    expect(localityValue({ codeLoc: null, codeNode: null })).toBe('all');
    expect(weightUnit('fault')).toBe('first touches');
    expect(weightUnit(null, { accesses: 0, firstTouches: 5 })).toBe('first touches');
    expect(weightUnit(null, { accesses: 3, firstTouches: 5 })).toBe('accesses and first touches');
  });

  it('sorts the function table by a column, unknowns last, ties in the engine’s order', () => {
    const row = (f: string, accesses: number, remoteShare: number | null) => ({ function: f, location: `${f}.c:1`, accesses, remoteShare }) as FunctionRow;
    const rows = [row('b', 10, 0.5), row('a', 30, null), row('c', 10, 0.1)];
    expect(sortFunctions(rows, null).map((r) => r.function)).toEqual(['b', 'a', 'c']);
    expect(sortFunctions(rows, { key: 'function', descending: false }).map((r) => r.function)).toEqual(['a', 'b', 'c']);
    expect(sortFunctions(rows, { key: 'accesses', descending: true }).map((r) => r.function)).toEqual(['a', 'b', 'c']);
    expect(sortFunctions(rows, { key: 'accesses', descending: false }).map((r) => r.function)).toEqual(['b', 'c', 'a']);
    expect(sortFunctions(rows, { key: 'remote', descending: false }).map((r) => r.function)).toEqual(['c', 'b', 'a']);
    expect(nextSort(null, 'accesses')).toEqual({ key: 'accesses', descending: true });
    expect(nextSort({ key: 'accesses', descending: true }, 'accesses')).toEqual({ key: 'accesses', descending: false });
    expect(nextSort(null, 'function')).toEqual({ key: 'function', descending: false });
  });

  it('the call tree’s rows: heaviest first, the heaviest path open, children only under open nodes', () => {
    const n = (name: string, parent: number, total: number): CallTreeNode => ({ name, module: null, location: null, parent, depth: 0, self: 0, total });
    const nodes = [n('all', -1, 10), n('main', 0, 7), n('worker', 0, 3), n('a', 1, 5), n('b', 1, 2), n('w1', 2, 3)];
    const open = defaultExpanded(nodes);
    expect([...open].sort()).toEqual([0, 1]);
    expect(treeRows(nodes, open).map((r) => [nodes[r.node]!.name, r.depth, r.hasChildren, r.expanded])).toEqual([
      ['main', 0, true, true],
      ['a', 1, false, false],
      ['b', 1, false, false],
      ['worker', 0, true, false],
    ]);
    expect(treeRows(nodes, new Set([0, 2])).map((r) => nodes[r.node]!.name)).toEqual(['main', 'worker', 'w1']);
  });
});

/** A client that answers from the engine directly (worker/code.ts), as the Worker does. */
function clientFor(name: string): QueryClient {
  const trace = traceOf(name);
  return {
    query: () => Promise.reject(new Error('no queries here')),
    bytes: () => Promise.reject(new Error('no bytes')),
    code: (_id, req) => Promise.resolve(codeOutcome(trace, req)),
    touchedBy: (_id, a, range) => Promise.resolve(touchedByOutcome(trace, a, range)),
  };
}

function renderCode(name: string, state: Partial<ViewState> = {}) {
  const navigated: Array<Partial<ViewState>> = [];
  const value = { client: clientFor(name), traceId: 1, state: { ...DEFAULT_VIEW_STATE, view: 'code' as const, ...state }, navigate: (p: Partial<ViewState>) => void navigated.push(p) };
  const summary = summarizeTrace(traceOf(name));
  render(
    <TraceContext.Provider value={value}>
      <CodeView summary={summary} />
    </TraceContext.Provider>,
  );
  return navigated;
}

describe('CodeView', () => {
  it('lists the functions with file:line and weighted first touches; a function’s objects link to the Memory view', async () => {
    const navigated = renderCode(CODE, { codeFn: 'init_beta' });
    const rows = await screen.findAllByTestId('code-fn-row');
    const first3 = rows.slice(0, 3).map((r) => [r.dataset.function, within(r).getByTestId('code-fn-location').textContent, within(r).getByTestId('code-fn-first-touches').dataset.value]);
    expect(first3).toEqual([
      ['init_alpha', 'code_sites.c:19', '1024'],
      ['init_beta', 'code_sites.c:23', '1024'],
      ['init_gamma', 'code_sites.c:27', '1024'],
    ]);
    expect(within(rows[0]!).getByTestId('code-fn-first-touches').textContent).toBe('1,024 (node 0)');
    const detail = screen.getByTestId('code-fn-detail');
    const obj = within(detail).getByTestId('code-fn-object');
    expect(obj.dataset.site).toBe('main code_sites.c:33');
    fireEvent.click(within(obj).getByTestId('code-fn-object-link'));
    expect(navigated.at(-1)).toEqual({ view: 'memory', region: Number(obj.dataset.region), obj: Number(obj.dataset.allocation), pages: null });
    // Sorting by a column header.
    fireEvent.click(screen.getByTestId('code-sort-function'));
    expect(screen.getAllByTestId('code-fn-row')[0]!.dataset.function!.localeCompare(screen.getAllByTestId('code-fn-row')[1]!.dataset.function!)).toBeLessThanOrEqual(0);
    // The call tree table, with the flame graph's tree.
    const tree = screen.getAllByTestId('code-tree-row');
    expect(tree[0]!.dataset.depth).toBe('0');
    expect(screen.getByTestId('flame-graph').dataset.total).toBe(screen.getByTestId('code-totals').dataset.withStack);
  });

  it('a filter is one navigation (kept in the link)', async () => {
    const navigated = renderCode(CODE);
    fireEvent.change(await screen.findByTestId('code-object'), { target: { value: 'main code_sites.c:33' } });
    expect(navigated.at(-1)).toEqual({ codeObject: 'main code_sites.c:33' });
    fireEvent.change(screen.getByTestId('code-locality'), { target: { value: 'remote' } });
    expect(navigated.at(-1)).toEqual({ codeLoc: 'remote', codeNode: null });
    fireEvent.change(screen.getByTestId('code-op'), { target: { value: 'fault' } });
    expect(navigated.at(-1)).toEqual({ codeOp: 'fault' });
  });

  it('a trace without stacks says so with the code-locations reason, in the UNAVAILABLE badge’s words, and draws nothing', async () => {
    renderCode(SYNTHETIC);
    const none = await screen.findByTestId('code-none');
    expect(none.textContent).toContain('No code locations in this trace');
    expect(none.textContent).toContain('synthetic trace: no code made the accesses, so samples have no call stacks');
    expect(none.querySelector('.ns-badge[data-status="unavailable"] .ns-badge__status')!.textContent).toBe('unavailable');
    expect(screen.queryByTestId('flame-graph')).toBeNull();
    expect(screen.queryByTestId('code-functions')).toBeNull();
    expect(screen.queryByTestId('code-tree')).toBeNull();
  });
});

// Type check: the outcome union is what the view narrows on.
export type _Outcome = CodeOutcome;
