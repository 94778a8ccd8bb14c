// The live loop's logic (src/ui/live/loop.ts) with a fake engine and a fake server: which
// recordings start a loop, the recommendation or the placement check, the verdicts of a dry run
// and an apply, refusals, and the after side.
import { describe, expect, it } from 'vitest';
import { rustExample } from '@numascope/protocol/fixtures';
import type { ApplyReport, LiveEnd, RecordSummary } from '@numascope/protocol';
import { applyVerdict, dryRunVerdict, LiveLoop } from '../src/ui/live/loop';
import type { LoopEngine } from '../src/ui/live/loop';
import { LiveSession } from '../src/ui/live/session';
import type { LiveClient } from '../src/ui/live/client';
import { ApiError } from '../src/ui/live/client';
import { DesktopLiveApi } from '../src/ui/live/desktop';
import { keptText } from '../src/ui/live/LoopPanel';

const report = (i: number): ApplyReport => structuredClone(rustExample('applyReport', i));
const end = (s: Partial<RecordSummary>): LiveEnd => ({
  type: 'end',
  recording: 'r1',
  status: 'finished',
  summary: { ...rustExample('recordSummary'), pid: 4242, leftRunning: true, ...s },
  error: null,
});

function view(recommendations: Array<{ id: string; planable: boolean }>, nodeIds = [0]) {
  return {
    machine: { nodeIds },
    baseline: 'observed',
    planReason: null,
    estimate: 'uniform',
    policies: [{ policy: 'observed', localAccessRatio: 1, predictedUs: 1000, memoryLatencyNs: 90 }],
    recommendations: recommendations.map((r) => ({ ...r, title: `do ${r.id}`, gain: { speedup: 1.3 } })),
  };
}

function fakes(recs: Array<{ id: string; planable: boolean }>, applyAnswer: (dryRun: boolean) => Promise<ApplyReport>) {
  const calls: string[] = [];
  const plan = { format: 'numascope-plan', version: 1, target: { pid: 4242 }, pageRanges: [{ start: '0x1000', end: '0x3000', action: 'move', toNodes: [0] }], threads: [] };
  const engine: LoopEngine = {
    open: async () => ({ summary: {} as never, overview: { traceId: 7 } as never, parseMs: 1 }),
    analyze: async (_id, _rec, req) => {
      calls.push(`analyze estimate=${req.estimate}`);
      return req.estimate ? { view: view(recs) as never } : { error: { code: 'no-access-data', message: 'no samples' } };
    },
    plan: async (_id, _req, ids, _at, _name, check) => {
      calls.push(`plan ${ids.join(',')} check=${check === true}`);
      return { plan: plan as never, json: JSON.stringify(plan) };
    },
  };
  const api = {
    apply: async (req: { dryRun?: boolean; pid: number }) => {
      calls.push(`apply pid=${req.pid} dry=${req.dryRun}`);
      return applyAnswer(req.dryRun === true);
    },
  } as unknown as LiveClient;
  const session = new LiveSession(api);
  return { loop: new LiveLoop(session, api, () => engine), calls };
}

describe('the live loop', () => {
  it('starts on a recording whose process was left running, not on one that exited', () => {
    const { loop } = fakes([], async () => report(0));
    loop.traceArrived('r0', end({ leftRunning: false, stopReason: 'process-exit' }), new ArrayBuffer(8), null, [0]);
    expect(loop.state.before).toBeNull();
    expect(loop.wants(end({ leftRunning: false }))).toBe(false);
    expect(loop.wants(end({}))).toBe(true);
    loop.traceArrived('r1', end({}), new ArrayBuffer(8), null, [0]);
    expect(loop.state.before).toMatchObject({ recording: 'r1', pid: 4242 });
  });

  it('without a machine-applicable recommendation, the plan is the placement check, and says why', async () => {
    const { loop, calls } = fakes([{ id: 'launch', planable: false }], async () => report(0));
    loop.traceArrived('r1', end({}), new ArrayBuffer(8), null, [0]);
    await loop.recommend();
    const r = loop.state.recommend;
    expect(r.kind).toBe('done');
    if (r.kind !== 'done') return;
    expect(r.value.kind).toBe('check');
    expect(r.value.why).toMatch(/one NUMA node \(node 0\)/);
    expect(calls).toEqual(['analyze estimate=false', 'analyze estimate=true', 'plan  check=true']);
    expect(loop.state.before?.prediction).toMatchObject({ kind: 'done', value: { localAccessRatio: 1, estimate: true } });
  });

  it('takes the best machine-applicable recommendation; dry run, then apply, on the recorded pid', async () => {
    const { loop, calls } = fakes([{ id: 'code', planable: false }, { id: 'move-1', planable: true }], async (dry) => report(dry ? 0 : 1));
    loop.traceArrived('r1', end({}), new ArrayBuffer(8), null, [0]);
    await loop.recommend();
    expect(loop.state.recommend).toMatchObject({ kind: 'done', value: { kind: 'recommendation', title: 'do move-1', speedup: 1.3 } });
    await loop.apply(); // refused before a dry run
    expect(loop.state.apply.kind).toBe('idle');
    await loop.dryRun();
    await loop.apply();
    expect(calls.filter((c) => c.startsWith('apply'))).toEqual(['apply pid=4242 dry=true', 'apply pid=4242 dry=false']);
    expect(loop.state.apply.kind).toBe('done');
  });

  it('a range no longer mapped is left out of the plan, said, and the call made again', async () => {
    let calls = 0;
    const { loop } = fakes([], async () => {
      calls++;
      if (calls === 1) throw new ApiError('api', 409, 'range-not-mapped', 'pageRanges[0] 0x1000-0x3000 lies outside every mapping of process 4242');
      return report(0);
    });
    loop.traceArrived('r1', end({}), new ArrayBuffer(8), null, [0]);
    await loop.recommend();
    await loop.dryRun();
    expect(calls).toBe(2);
    expect(loop.state.dry.kind).toBe('done');
    expect(loop.state.recommend).toMatchObject({ kind: 'done', value: { ranges: 0, pages: 0, dropped: ['0x1000-0x3000'] } });
  });

  it('a refusal is kept with its code', async () => {
    const { loop } = fakes([], async () => {
      throw new ApiError('api', 409, 'pid-reused', 'pid 4242 is another process now');
    });
    loop.traceArrived('r1', end({}), new ArrayBuffer(8), null, [0]);
    await loop.recommend();
    await loop.dryRun();
    expect(loop.state.dry).toEqual({ kind: 'error', error: { code: 'pid-reused', message: 'pid 4242 is another process now' } });
  });
});

describe('verdicts', () => {
  it('a dry run with nothing to move names the one node the pages are on', () => {
    const r = report(0);
    r.pages = { ...r.pages, toMove: 0, alreadyInPlace: 12, before: { '0': 12 } };
    r.threads = [];
    r.expected = null;
    expect(dryRunVerdict(r)).toBe('Nothing to move: every page is already on node 0 (12 pages checked with move_pages), and no thread needs pinning.');
    r.pages = { ...r.pages, toMove: 3, alreadyInPlace: 9, before: { '0': 9, '1': 3 } };
    expect(dryRunVerdict(r)).toBe('3 pages to move (9 already in place), 0 threads to pin.');
  });

  it('a dry run whose pages to move differ from the plan\'s count says where the difference comes from (issue 30)', () => {
    const r = report(0);
    r.threads = [];
    r.pages = { ...r.pages, toMove: 40, alreadyInPlace: 35, notPresentBefore: 20, unmapped: 5, before: { '0': 35, '1': 40 } };
    r.expected = { pagesToMove: 50, bytesToMove: null, pagesPerNodeAfter: null, threadsToPin: null };
    expect(dryRunVerdict(r)).toBe(
      '40 pages to move (35 already in place), 0 threads to pin. The plan counted 50 pages to move from the recording; 40 now (10 fewer): ' +
        "20 of the plan's pages are not present now (freed or swapped out since the recording, or never touched); 5 are outside the process's mappings now; " +
        '35 are already on their planned node (moved since the recording, or touched first there).',
    );
    // The same count: nothing to say.
    r.expected = { ...r.expected, pagesToMove: 40 };
    expect(dryRunVerdict(r)).toBe('40 pages to move (35 already in place), 0 threads to pin.');
  });

  it('an apply that changed nothing is trivially satisfied, with its verification', () => {
    const r = report(1);
    r.pages = { ...r.pages, pages: 12, unmapped: 0, toMove: 0, moved: 0, onTargetAfter: 12 };
    r.threads = [];
    expect(applyVerdict(r)).toBe(`Trivially satisfied: nothing needed to change, nothing was moved or pinned (${r.status}). Verified: 12 of 12 pages on their planned node.`);
  });
});

/**
 * The loop kept with the server (issue 35): a fake serve that stores loop records as
 * `PUT /api/recordings/:id/loop` does, and a second LiveLoop standing for a reloaded page.
 */
function keptFakes() {
  const saved = new Map<string, unknown>();
  const order: string[] = [];
  const calls: string[] = [];
  let pending = 0;
  const work = () => {
    pending++;
    return () => void pending--;
  };
  const settle = async () => {
    for (let i = 0; i < 100 && pending > 0; i++) await new Promise((r) => setTimeout(r, 0));
    expect(pending).toBe(0);
  };
  const plan = { format: 'numascope-plan', version: 1, target: { pid: 4242 }, pageRanges: [{ start: '0x1000', end: '0x3000', action: 'move', toNodes: [0] }], threads: [] };
  const engine: LoopEngine = {
    open: async () => ({ summary: {} as never, overview: { traceId: 7 } as never, parseMs: 1 }),
    analyze: async () => ({ view: view([{ id: 'move-1', planable: true }]) as never }),
    plan: async () => ({ plan: plan as never, json: JSON.stringify(plan) }),
  };
  const statuses = new Map<string, unknown>();
  const api = {
    apply: async (req: { dryRun?: boolean }) => report(req.dryRun ? 0 : 1),
    saveLoop: async (id: string, record: unknown) => {
      calls.push(`save ${id}`);
      // As the server keeps it: the JSON text.
      saved.set(id, JSON.parse(JSON.stringify(record)));
      if (order.includes(id)) order.splice(order.indexOf(id), 1);
      order.push(id);
    },
    loadLoop: async (id: string) => saved.get(id) ?? null,
    latestLoop: async () => (order.length ? { recording: order.at(-1)!, loop: saved.get(order.at(-1)!) } : null),
    trace: async (id: string) => {
      calls.push(`trace ${id}`);
      return new ArrayBuffer(8);
    },
    status: async (id: string) => statuses.get(id),
    watch: () => () => {},
  } as unknown as LiveClient;
  const page = () => new LiveLoop(new LiveSession(api), api, () => engine, work);
  return { page, saved, calls, settle, statuses };
}

describe('the live loop kept with the server', () => {
  it('a reloaded page brings back the plan and the dry run, without sending them again', async () => {
    const f = keptFakes();
    const first = f.page();
    first.traceArrived('r1', end({}), new ArrayBuffer(8), null, [0, 1]);
    await first.recommend();
    await first.dryRun();
    await f.settle();
    expect(f.saved.has('r1')).toBe(true);
    expect(first.state.kept.kind).toBe('saved');
    const saves = f.calls.filter((c) => c.startsWith('save')).length;

    const reloaded = f.page();
    await reloaded.restore(null);
    await f.settle();
    const s = reloaded.state;
    expect(s.before).toMatchObject({ recording: 'r1', pid: 4242 });
    expect(s.nodeIds).toEqual([0, 1]);
    expect(s.recommend).toMatchObject({ kind: 'done', value: { kind: 'recommendation', title: 'do move-1', ranges: 1 } });
    expect(s.dry).toEqual(first.state.dry);
    expect(s.restoredFrom).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(f.calls.filter((c) => c.startsWith('save')).length).toBe(saves);
    // The steps go on from there: apply uses the plan that came back.
    await reloaded.apply();
    expect(reloaded.state.apply.kind).toBe('done');
  });

  it('a step in flight is saved as not started, and a loop brought back fetches its trace from the server to recommend', async () => {
    const f = keptFakes();
    const first = f.page();
    first.traceArrived('r1', end({}), new ArrayBuffer(8), null, [0]);
    await f.settle();
    expect(f.saved.get('r1')).toMatchObject({ recommend: { kind: 'idle' }, before: { prediction: { kind: 'idle' } } });
    const reloaded = f.page();
    await reloaded.restore('r1');
    expect(f.calls).not.toContain('trace r1');
    await reloaded.recommend();
    expect(f.calls).toContain('trace r1');
    expect(reloaded.state.recommend.kind).toBe('done');
  });

  it('a damaged record, or one naming another recording, is refused by field and shows no loop', async () => {
    const f = keptFakes();
    const first = f.page();
    first.traceArrived('r1', end({}), new ArrayBuffer(8), null, [0]);
    await f.settle();
    const good = f.saved.get('r1') as Record<string, unknown>;
    f.saved.set('r1', { ...good, before: { ...(good.before as object), pid: -3 } });
    const a = f.page();
    await a.restore('r1');
    expect(a.state.before).toBeNull();
    expect(a.state.restoreError).toMatchObject({ code: 'bad-loop' });
    expect(a.state.restoreError?.message).toMatch(/loop\.before\.pid/);
    f.saved.set('r1', { ...good, before: { ...(good.before as object), recording: 'r9' } });
    const b = f.page();
    await b.restore('r1');
    expect(b.state.before).toBeNull();
    expect(b.state.restoreError?.message).toMatch(/names recording r9/);
  });

  it('after a reload during "record again", the finished second recording becomes the after side', async () => {
    const f = keptFakes();
    const first = f.page();
    first.traceArrived('r1', end({}), new ArrayBuffer(8), null, [0]);
    await f.settle();
    // The page was recording r2 (attached to the same pid) when it was reloaded.
    f.saved.set('r1', { ...(f.saved.get('r1') as object), again: { kind: 'recording', recording: 'r2' } });
    const summary = { ...end({ durationUs: 2_000_000 }).summary!, output: '/tmp/r2.numascope' };
    f.statuses.set('r2', { ...rustExample('recording'), id: 'r2', status: 'finished', summary, error: null, latest: null });
    const reloaded = f.page();
    await reloaded.restore('r1');
    await f.settle();
    expect(reloaded.state.again.kind).toBe('done');
    expect(reloaded.state.after).toMatchObject({ recording: 'r2', pid: 4242, durationUs: 2_000_000 });
    expect(reloaded.isAfter('r2')).toBe(true);
    expect(f.calls).toContain('trace r2');
  });
});

/**
 * The loop kept by the desktop app (issue 35 item 2): the renderer's DesktopLiveApi over a bridge
 * whose loop methods stand for the main process's store (apps/desktop main-logic/loops.ts), used by
 * LiveLoop exactly as the serve client is.
 */
describe('the live loop kept by the desktop app', () => {
  function desktopFakes(refuse: string | null = null) {
    const kept = new Map<string, unknown>();
    let pending = 0;
    const work = () => {
      pending++;
      return () => void pending--;
    };
    const settle = async () => {
      for (let i = 0; i < 100 && pending > 0; i++) await new Promise((r) => setTimeout(r, 0));
    };
    const bridge = {
      isDesktop: true,
      saveLoop: async (recording: string, record: unknown) => {
        kept.delete(recording);
        kept.set(recording, JSON.parse(JSON.stringify(record)));
        return { recording, bytes: JSON.stringify(record).length };
      },
      loadLoop: async (recording: string) => {
        if (refuse) throw new Error(`Error invoking remote method 'numascope:load-loop': LoopStoreError: ${refuse}`);
        return kept.get(recording) ?? null;
      },
      latestLoop: async () => {
        if (refuse) throw new Error(`Error invoking remote method 'numascope:latest-loop': LoopStoreError: ${refuse}`);
        const last = [...kept.keys()].at(-1);
        return last === undefined ? null : { recording: last, loop: kept.get(last) };
      },
    };
    const api = new DesktopLiveApi(bridge as never);
    const engine: LoopEngine = { open: async () => ({}) as never, analyze: async () => ({}) as never, plan: async () => ({}) as never };
    const page = () => new LiveLoop(new LiveSession(api), api, () => engine, work);
    return { kept, page, settle };
  }

  it('saves after each step and a reloaded window brings the loop back, saying the desktop app keeps it', async () => {
    const f = desktopFakes();
    const first = f.page();
    expect(first.keeps).toBe(true);
    expect(first.keeper).toBe('the desktop app');
    first.traceArrived('r1', end({}), new ArrayBuffer(8), null, [0, 1]);
    await f.settle();
    expect(first.state.kept.kind).toBe('saved');
    expect(f.kept.get('r1')).toMatchObject({ format: 'numascope-loop', before: { recording: 'r1', pid: 4242 } });
    const reloaded = f.page();
    await reloaded.restore(null);
    expect(reloaded.state.before).toMatchObject({ recording: 'r1', pid: 4242 });
    expect(reloaded.state.nodeIds).toEqual([0, 1]);
    expect(reloaded.state.restoredFrom).toMatch(/^\d{4}-/);
    expect(keptText(reloaded.keeper)).toMatch(/Kept by the desktop app .*next start of the app brings this loop back/);
    expect(keptText('numascope serve')).toMatch(/Kept with numascope serve/);
  });

  it('a record the main process refuses (damaged) is said, and no loop is shown', async () => {
    const f = desktopFakes('invalid-loop: r1: loop.before.pid: Too small');
    const page = f.page();
    await page.restore('r1');
    expect(page.state.before).toBeNull();
    expect(page.state.restoreError?.message).toMatch(/invalid-loop: r1: loop\.before\.pid/);
  });
});
