/**
 * Diagnostics cite the code (issue 31, item 5): on a two-node machine, an object whose pages one
 * function first-touched on node 0 (thread 0) and another function reads from node 1 (thread 1)
 * is a remote-access issue whose code names both functions and lines, the node and the thread,
 * and whose fix names the first-touch line; without call stacks the code is unavailable with the
 * capability's reason and the texts are the ones without code.
 */
import { describe, expect, it } from 'vitest';
import { diagnose, diagnosisJson, type Issue } from '../src/diagnose/diagnose.js';
import { functionTable } from '../src/code/functions.js';
import { diagnoseCodeSpec as spec } from './helpers/diagnose-code-trace.js';
import { textTrace, PAGE_BASE_ADDRESS } from './helpers/text-trace.js';

function remoteIssue(withStacks: boolean): Issue {
  const d = diagnose(textTrace(spec(withStacks)));
  const issue = d.issues.find((i) => i.kind === 'remote-access');
  expect(issue, JSON.stringify(d.issues.map((i) => i.text))).toBeDefined();
  return issue!;
}

describe('diagnostics cite the code', () => {
  it('the first touch that placed the remote-accessed object and the function that accesses it remotely, with lines, node and thread', () => {
    const issue = remoteIssue(true);
    expect(issue.object!.site).toBe('alloc_grid grid.c:30');
    const code = issue.code!;
    expect(code.available).toBe(true);
    expect(code.reason).toBeNull();
    // The Code view's object filter for the allocation's site.
    expect(code.object).toBe('alloc_grid grid.c:30');
    expect(code.firstTouch).toEqual([
      { function: 'init_grid', module: '/opt/app', fileLine: 'grid.c:41', node: 0, nodes: [{ node: 0, firstTouches: 8 }], thread: 0, tid: 1000, threads: 1, firstTouches: 8, pagesSampled: 8 },
    ]);
    // Ranked by remote accesses: worker's are all remote, check's all local.
    expect(code.accessors.map((a) => [a.function, a.fileLine, a.accesses, a.remote, a.remoteShare])).toEqual([
      ['worker', 'diagprog.c:92', 60_000, 60_000, 1],
      ['check', 'grid.c:60', 200, 0, 0],
    ]);
    expect(issue.text).toContain('; first touched by init_grid (grid.c:41) on node 0 by thread 0 (tid 1000); accessed remotely mostly by worker (diagprog.c:92)');
    expect(issue.fix.kind).toBe('block-wise-interleave');
    expect(issue.fix.text).toContain('initialise it in parallel in init_grid (grid.c:41), each thread its own block');
  });

  it('the code agrees with the code attribution filtered on the object (functionTable, object filter)', () => {
    const trace = textTrace(spec(true));
    const issue = diagnose(trace).issues.find((i) => i.kind === 'remote-access')!;
    const faults = functionTable(trace, { object: issue.code!.object, op: 'fault' });
    expect(faults.rows.map((r) => [r.function, r.location, r.firstTouches])).toEqual(issue.code!.firstTouch.map((f) => [f.function, f.fileLine, f.firstTouches]));
    const remote = functionTable(trace, { object: issue.code!.object, locality: 'remote' });
    expect(remote.rows.map((r) => [r.function, r.remote])).toEqual([['worker', issue.code!.accessors[0]!.remote]]);
  });

  it('without call stacks: unavailable with the code-locations reason, and the texts without code', () => {
    const bare = remoteIssue(false);
    expect(bare.code).toEqual({ available: false, reason: expect.stringMatching(/no sample has a call stack/), object: null, firstTouch: [], accessors: [] });
    expect(bare.text).not.toMatch(/first touched|accessed remotely/);
    expect(bare.fix.text).not.toMatch(/in the code/);
    // The same issue with stacks only adds the citations to the same texts.
    const cited = remoteIssue(true);
    expect(cited.text.startsWith(`${bare.text}; `)).toBe(true);
    expect(cited.fix.text.startsWith(`${bare.fix.text}; `)).toBe(true);
    expect(cited.score).toBe(bare.score);
  });

  it('thread issues carry no code; the JSON carries the object issues\' code', () => {
    const d = diagnose(textTrace(spec(true)));
    const json = diagnosisJson(d);
    const issue = json.issues.find((i) => i.kind === 'remote-access')!;
    expect(issue.code!.firstTouch[0]!.function).toBe('init_grid');
    for (const i of d.issues) if (i.object === null) expect(i.code).toBeNull();
  });

  it('false sharing: the functions that write the line, in the issue and its padding fix', () => {
    // Threads 0 and 1 (two nodes) store alternately to offsets 0 and 8 of one line, in inc_a and inc_b.
    const rows = ['time_us thread page op weight offset event stack'];
    for (let k = 0; k < 100; k++) rows.push(`${k * 100} ${k % 2} 0 store 1 ${k % 2 ? 8 : 0} ibs-op ${k % 2}`);
    const trace = textTrace({
      machine: 'intel-spr-2s',
      threads: 'thread node\n0 0\n1 1',
      pages: 'page node\n0 0',
      stacks: ['inc_a@stats.c:12 worker@stats.c:40', 'inc_b@stats.c:14 worker@stats.c:41'],
      allocations: `address size site\n0x${PAGE_BASE_ADDRESS.toString(16)} 4096 counters@stats.c:7`,
      samples: rows.join('\n'),
      durationUs: 10_000,
    });
    const issue = diagnose(trace).issues.find((i) => i.kind === 'false-sharing')!;
    expect(issue.code!.accessors.map((a) => [a.function, a.fileLine])).toEqual([
      ['inc_b', 'stats.c:14'],
      ['inc_a', 'stats.c:12'],
    ]);
    expect(issue.code!.firstTouch).toEqual([]);
    expect(issue.text).toMatch(/; accessed by inc_b \(stats\.c:14\) and inc_a \(stats\.c:12\)$/);
    expect(issue.fix.text).toBe('pad or align the fields each thread writes to separate 64-byte lines (the accesses in inc_b (stats.c:14) and inc_a (stats.c:12))');
  });
});
