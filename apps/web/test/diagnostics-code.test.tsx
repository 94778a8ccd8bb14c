/**
 * The Diagnostics view's code lines (issue 31, item 5): under an object's issue, the functions that
 * first-touched it (node, thread) and those that access it, each opening the Code view filtered on
 * the object and the function; without call stacks, why there is no code.
 */
import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { diagnose, diagnosisJson } from '@numascope/policy-engine';
import type { IssueCode } from '@numascope/policy-engine';
import { diagnoseCodeSpec } from '../../../packages/policy-engine/test/helpers/diagnose-code-trace';
import { textTrace } from '../../../packages/policy-engine/test/helpers/text-trace';
import { TraceContext } from '../src/ui/hooks/trace-context';
import { DEFAULT_VIEW_STATE } from '../src/ui/url-state';
import type { ViewState } from '../src/ui/url-state';
import { IssueCodeSites } from '../src/ui/views/DiagnosticsView';

afterEach(cleanup);

function codeOf(withStacks: boolean): IssueCode {
  const json = diagnosisJson(diagnose(textTrace(diagnoseCodeSpec(withStacks))));
  const issue = json.issues.find((i) => i.kind === 'remote-access')!;
  return issue.code!;
}

function renderCode(code: IssueCode): Array<Partial<ViewState>> {
  const navigated: Array<Partial<ViewState>> = [];
  const value = { client: null, traceId: 1, state: { ...DEFAULT_VIEW_STATE, view: 'diagnose' as const }, navigate: (p: Partial<ViewState>) => void navigated.push(p) };
  render(
    <TraceContext.Provider value={value}>
      <IssueCodeSites code={code} />
    </TraceContext.Provider>,
  );
  return navigated;
}

describe('Diagnostics: the code behind an issue', () => {
  it('first touched by (function, line, node, thread) and accessed remotely by, each a link to the Code view on the object', () => {
    const navigated = renderCode(codeOf(true));
    const ft = screen.getByTestId('issue-first-touch');
    expect(ft.textContent).toMatch(/^first touched by init_grid \(grid\.c:41\) on node 0 by thread 0 \(tid 1000\)/);
    expect(ft.dataset.node).toBe('0');
    const acc = screen.getAllByTestId('issue-accessor');
    expect(acc.map((a) => a.dataset.function)).toEqual(['worker', 'check']);
    expect(acc[0]!.textContent).toMatch(/^accessed remotely by worker \(diagprog\.c:92\) \(60000 accesses, 100% remote\)/);
    expect(acc[1]!.textContent).toMatch(/^accessed by check \(grid\.c:60\)/);
    const links = screen.getAllByTestId('issue-code-fn');
    fireEvent.click(links[0]!);
    expect(navigated.at(-1)).toEqual({ view: 'code', codeObject: 'alloc_grid grid.c:30', codeFn: 'init_grid', codeOp: 'fault', codeBy: null, codeLoc: null, codeNode: null, codeThread: null });
    fireEvent.click(links[1]!);
    expect(navigated.at(-1)).toMatchObject({ view: 'code', codeObject: 'alloc_grid grid.c:30', codeFn: 'worker', codeOp: null });
  });

  it('without call stacks: the code-locations reason', () => {
    renderCode(codeOf(false));
    expect(screen.getByTestId('issue-code-unavailable').textContent).toMatch(/^code: not available: no sample has a call stack/);
    expect(screen.queryByTestId('issue-code')).toBeNull();
  });
});
