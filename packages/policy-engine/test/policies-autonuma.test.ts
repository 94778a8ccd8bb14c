import { describe, expect, it } from 'vitest';
import { autonumaPolicy } from '../src/policies/autonuma.js';
import { simulateWindow } from '../src/engine/simulate.js';
import { replayInputFromTable } from './helpers/replay-table.js';
import { windowsOf } from '../src/model/contract.js';

const options = { seed: 1, simulate: simulateWindow };

// 1 s windows, kernel defaults: the first scan is at scan_delay = 1000 ms, so window 0 only
// touches. Page 0 lives on node 0. Thread 0 (node 0) uses it in window 1, thread 4 (node 1) in
// windows 2 and 3. Page 1 is only ever used by thread 0; pages 2-9 (node 1) by thread 4, so
// thread 4's preferred node stays node 1 and it is the page, not the thread, that moves.
const TABLE = `
  window | threads | pages | loads | stores
  0-1    | 0       | 0-1   | 500   | 50
  2-3    | 4       | 0     | 500   | 50
  2-3    | 0       | 1     | 500   | 50
  0-3    | 4       | 2-9   | 500   | 50`;

const input = (windows: number) => {
  const full = replayInputFromTable({
    preset: 'amd-opteron-8385-4p',
    threads: 8,
    pages: 10,
    threadNodes: '0-3:0 4-7:1',
    pageNodes: '0-1:0 2-9:1',
    windowUs: 1_000_000,
    table: TABLE,
  });
  return { ...full, windows: windowsOf([...full.windows].slice(0, windows)) };
};

describe('automatic NUMA balancing', () => {
  it('does not move a page on a single remote fault (two-stage filter), and does after two', () => {
    const afterOne = autonumaPolicy.replay(input(3), options);
    expect(afterOne.finalPlacement.pageNode[0]).toBe(0);
    const stay = afterOne.decisions.find((d) => d.kind === 'none' && d.window === 2 && d.pages === 1)!;
    expect(stay.explanation).toBe('1 pages not moved on a remote hinting fault: previous fault on the page came from node 0 (two-stage filter)');

    const afterTwo = autonumaPolicy.replay(input(4), options);
    expect(afterTwo.finalPlacement.pageNode[0]).toBe(1);
    const move = afterTwo.decisions.find((d) => d.kind === 'migrate')!;
    expect(move.window).toBe(3);
    expect([...move.pageIndices!]).toEqual([0]);
    expect(move.explanation).toMatch(/moved to node 1 on NUMA hinting faults: first or private fault/);
    expect(afterTwo.migratedPages).toBe(1);
    expect(afterTwo.finalPlacement.pageNode[1]).toBe(0);
  });

  it('adapts the scan period from the fault mix', () => {
    const replay = autonumaPolicy.replay(input(4), options);
    const periods = replay.decisions.filter((d) => d.explanation.startsWith('scan period')).map((d) => `${d.window}: ${d.explanation}`);
    expect(periods[0]).toBe('1: scan period 1000 → 1300 ms: private 10/10, local 10/10 of 10 faults');
  });

  it('is deterministic', () => {
    expect(autonumaPolicy.replay(input(4), options).decisions).toEqual(autonumaPolicy.replay(input(4), options).decisions);
  });
});
