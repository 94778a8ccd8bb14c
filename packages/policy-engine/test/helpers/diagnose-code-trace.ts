/**
 * A two-node trace for the diagnostics' code citations (diagnose-code.test.ts, cli.test.ts): an
 * object first-touched by one function on node 0 and read remotely by another from node 1.
 */
import { PAGE_BASE_ADDRESS, type TextTraceSpec } from './text-trace.js';

const BASE = `0x${PAGE_BASE_ADDRESS.toString(16)}`;
const DURATION_US = 10_000;

/**
 * Thread 0 (node 0) first-touches the grid's 8 pages in init_grid (grid.c:41), called from main;
 * thread 1 (node 1) then reads pages 2-7 in worker (diagprog.c:92), remote, 6000 accesses/ms;
 * thread 0 reads pages 0-1 locally in check (grid.c:60). One page of a second buffer, touched by
 * nobody else, stays below every threshold.
 */
export function diagnoseCodeSpec(withStacks: boolean): TextTraceSpec {
  const rows = ['time_us thread page op weight stack'];
  const st = (k: number) => (withStacks ? k : -1);
  for (let p = 0; p < 8; p++) rows.push(`${p} 0 ${p} fault 1 ${st(0)}`);
  for (let k = 0; k < 10; k++) {
    for (let p = 2; p < 8; p++) rows.push(`${100 + k * 900 + p} 1 ${p} load 1000 ${st(1)}`);
    for (let p = 0; p < 2; p++) rows.push(`${100 + k * 900 + 20 + p} 0 ${p} load 10 ${st(2)}`);
  }
  return {
    machine: 'intel-spr-2s',
    threads: `thread node
                0     0
                1     1`,
    pages: ['page node first_touch_thread', ...Array.from({ length: 8 }, (_, p) => `${p} 0 0`)].join('\n'),
    stacks: ['init_grid@grid.c:41 main@grid.c:80', 'worker@diagprog.c:92 start_thread[libc.so.6]', 'check@grid.c:60 main@grid.c:81'],
    allocations: `address size site
                  ${BASE} 32768 alloc_grid@grid.c:30`,
    samples: rows.join('\n'),
    durationUs: DURATION_US,
  };
}
