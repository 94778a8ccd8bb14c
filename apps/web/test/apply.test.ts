/** Apply through Live mode: the client's apply/rollback calls, plan file parsing, report helpers, and the plan hand-over. */
import { describe, expect, it } from 'vitest';
import { ApiError, LiveApi } from '../src/ui/live/client';
import type { LiveDeps } from '../src/ui/live/client';
import {
  cpuList,
  nodesOf,
  notMovedReasons,
  onPendingPlan,
  openApplyWithPlan,
  parsePlanText,
  PlanFileError,
  rangePages,
  setOpenLiveHandler,
  statusText,
  takePendingPlan,
} from '../src/ui/live/apply';
import type { ApplyReport, RollbackRecord } from '@numascope/protocol';
import { rustExample } from '@numascope/protocol/fixtures';
import type { PlanLike } from '../src/ui/live/apply';

const TOKEN = 'b'.repeat(64);
const ORIGIN = 'http://127.0.0.1:41873';

const PLAN: PlanLike = {
  format: 'numascope-plan',
  version: 1,
  target: { pid: 42, startTimeTicks: null, machine: { nodeIds: [0] } },
  pageRanges: [{ start: '0x7f0000000000', end: '0x7f0000400000', action: 'move', toNodes: [0] }],
  threads: [{ tid: 43, toNodes: [0] }],
};

function report(extra: Partial<ApplyReport> = {}): ApplyReport {
  const stats = {
    pages: 1024,
    unmapped: 0,
    before: { '0': 1024 },
    notPresentBefore: 0,
    plannedAfter: { '0': 1024 },
    toMove: 0,
    alreadyInPlace: 1024,
    moved: 0,
    notMoved: { busy: 0, notPresent: 0, notPermitted: 0, hugePage: 0, elsewhere: 0, other: {} },
    notAttempted: 0,
    after: { '0': 1024 },
    onTargetAfter: 1024,
  };
  return {
    operation: 'apply',
    pid: 42,
    startTimeTicks: '12345',
    dryRun: false,
    status: 'complete',
    message: null,
    pageSize: 4096,
    pages: stats,
    ranges: [],
    threads: [{ tid: 43, toNodes: [0], cpus: [0, 1], previousCpus: [0], readBack: [0, 1], pinned: true, error: null }],
    expected: null,
    warnings: [],
    jobs: 1,
    elapsedMs: 1.2,
    rollbackRecord: null,
    ...extra,
  };
}

function fake(answer: (path: string, body: Record<string, unknown>) => Response) {
  const calls: Array<{ path: string; auth: string | null; body: Record<string, unknown> }> = [];
  const deps: LiveDeps = {
    origin: ORIGIN,
    openSocket: () => {
      throw new Error('no sockets here');
    },
    fetch: async (input, init) => {
      const url = new URL(input);
      const headers = (init?.headers ?? {}) as Record<string, string>;
      const body = JSON.parse(String(init?.body ?? '{}')) as Record<string, unknown>;
      calls.push({ path: url.pathname + url.search, auth: headers.Authorization ?? null, body });
      return answer(url.pathname, body);
    },
  };
  return { api: new LiveApi(TOKEN, deps), calls };
}

const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });

describe('LiveApi apply and rollback', () => {
  it('posts a dry run with the plan object, the pid and the token as a header (never in the URL)', async () => {
    const { api, calls } = fake(() => json(200, report({ dryRun: true, status: 'dry-run' })));
    const r = await api.apply({ plan: PLAN, pid: 42, dryRun: true });
    expect(r.status).toBe('dry-run');
    expect(calls).toEqual([{ path: '/api/apply', auth: `Bearer ${TOKEN}`, body: { plan: PLAN, pid: 42, dryRun: true } }]);
  });

  it('a real apply sends no dryRun; the rollback record goes back as {record}', async () => {
    const record: RollbackRecord = { ...rustExample('rollbackRecord'), pid: 42 };
    const { api, calls } = fake((path) => (path === '/api/apply' ? json(200, report({ rollback: record })) : json(200, report({ operation: 'rollback' }))));
    const r = await api.apply({ plan: PLAN, pid: 42, budgetMs: 500 });
    expect(calls[0]!.body).toEqual({ plan: PLAN, pid: 42, budgetMs: 500 });
    expect(r.rollback).toEqual(record);
    const back = await api.rollback(r.rollback!);
    expect(back.operation).toBe('rollback');
    expect(calls[1]).toEqual({ path: '/api/rollback', auth: `Bearer ${TOKEN}`, body: { record } });
  });

  it('sends setSystemWeights only when the user asked for the system weights (they are global)', async () => {
    const plan: PlanLike = { ...PLAN, systemWeights: { weights: { '0': 4, '2': 1 } } };
    const w = rustExample('applyReport', 3);
    const { api, calls } = fake(() => json(200, w));
    const r = await api.apply({ plan, pid: 42, dryRun: true, setSystemWeights: true });
    expect(calls[0]!.body).toEqual({ plan, pid: 42, dryRun: true, setSystemWeights: true });
    expect(r.systemWeights?.planned).toEqual({ '0': 4, '1': 1 });
    expect(r.ranges[0]!.weightCheck?.ok).toBe(true);
    await api.apply({ plan, pid: 42, setSystemWeights: false });
    expect(calls[1]!.body).toEqual({ plan, pid: 42 });
  });

  it('API refusals keep their code and message', async () => {
    for (const [status, code] of [
      [400, 'pid-mismatch'],
      [404, 'no-process'],
      [409, 'pid-reused'],
      [409, 'wrong-machine'],
      [403, 'permission'],
      [422, 'kernel-unsupported'],
    ] as const) {
      const { api } = fake(() => json(status, { error: { code, message: `${code}: because` } }));
      const err = await api.apply({ plan: PLAN, pid: 42, dryRun: true }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).code).toBe(code);
      expect((err as ApiError).message).toBe(`${code}: because`);
      // 403 permission is an API answer with the token accepted; the client still reports it by code.
      expect((err as ApiError).status).toBe(status);
    }
  });
});

describe('plan files', () => {
  it('accepts a plan and refuses what is not one, saying why', () => {
    expect(parsePlanText(JSON.stringify(PLAN)).target.pid).toBe(42);
    expect(() => parsePlanText('{')).toThrow(PlanFileError);
    expect(() => parsePlanText('[]')).toThrow('not a JSON object');
    expect(() => parsePlanText('{"format":"other"}')).toThrow('not "numascope-plan"');
    expect(() => parsePlanText('{"format":"numascope-plan","target":{"pid":0}}')).toThrow('target.pid');
  });

  it('counts pages of a range', () => {
    expect(rangePages(PLAN.pageRanges![0]!)).toBe(1024);
    expect(rangePages({ start: 'x', end: 'y' })).toBe(0);
  });
});

describe('report helpers', () => {
  it('formats cpu lists like the kernel', () => {
    expect(cpuList([0, 1, 2, 5, 7, 8])).toBe('0-2,5,7-8');
    expect(cpuList([3])).toBe('3');
    expect(cpuList(null)).toBe('–');
  });

  it('lists node ids and non-zero reasons', () => {
    expect(nodesOf({ '1': 3 }, { '0': 1 }, null)).toEqual([0, 1]);
    expect(notMovedReasons({ busy: 2, notPresent: 0, notPermitted: 1, hugePage: 0, elsewhere: 0, other: { ENOMEM: 4 } })).toEqual([
      ['busy', 2],
      ['notPermitted', 1],
      ['other.ENOMEM', 4],
    ]);
  });

  it('says what each status means', () => {
    expect(statusText(report({ status: 'dry-run', dryRun: true }))).toContain('nothing was changed');
    expect(statusText(report())).toContain('verified');
    expect(statusText(report({ status: 'partial' }))).toContain('Partly');
    expect(statusText(report({ status: 'budget-exhausted' }))).toContain('budget');
    expect(statusText(report({ operation: 'rollback' }))).toContain('Rolled back');
  });
});

describe('hand-over from the Recommendations view', () => {
  it('opens Live, notifies the panel, and is taken once', () => {
    let opened = 0;
    let notified = 0;
    setOpenLiveHandler(() => opened++);
    const off = onPendingPlan(() => notified++);
    openApplyWithPlan(PLAN, 'run.plan.json');
    expect([opened, notified]).toEqual([1, 1]);
    expect(takePendingPlan()).toEqual({ plan: PLAN, name: 'run.plan.json', from: 'recommendations' });
    expect(takePendingPlan()).toBeNull();
    off();
    setOpenLiveHandler(() => {});
  });
});
