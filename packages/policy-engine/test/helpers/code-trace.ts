/**
 * A hand-built v3 trace for the code attribution tests (code.test.ts, cli.test.ts): three
 * functions first-touch three buffers through different stacks, one of them through libc's
 * memset (so the code-site rule decides), and a fourth reads two of the buffers.
 */
import { getPreset } from '../../src/machine/presets.js';
import { PAGE_BASE_ADDRESS, type TextTraceSpec } from './text-trace.js';

export const CODE_MACHINE = (() => {
  const m = getPreset('amd-opteron-8385-4p');
  return { ...m, cpuClockGHz: 2, provenance: { ...m.provenance, cpuClockGHz: 'documented:code.test.ts' } };
})();

const hex = (page: number) => `0x${(PAGE_BASE_ADDRESS + BigInt(page) * 4096n).toString(16)}`;

/**
 * Buffer A (pages 0-1) first-touched by thread 0 in init_a, called from main; buffer B (pages
 * 2-3) by thread 1 in libc's memset, called from init_b; buffer C (pages 4-6) by thread 2 in
 * fill_c. Then thread 0 reads A three times (local) and B once (remote) in compute, and page 6
 * once more in a sample without a stack.
 */
export const CODE_TRACE: TextTraceSpec = {
  machine: CODE_MACHINE,
  threads: `thread node
              0     0
              1     1
              2     2`,
  pages: `page node first_touch_thread
            0    0   0
            1    0   0
            2    1   1
            3    1   1
            4    2   2
            5    2   2
            6    2   2`,
  stacks: [
    'init_a@app.c:10 main@app.c:50',
    'memset[libc.so.6] init_b@app.c:20 worker@app.c:60 start_thread[libc.so.6]',
    'fill_c@app.c:30 worker@app.c:61 start_thread[libc.so.6]',
    'compute@app.c:70 main@app.c:51',
    'compute@app.c:71 main@app.c:51',
  ],
  allocations: `address size site
                ${hex(0)} 8192 alloc_a@app.c:5
                ${hex(2)} 8192 alloc_b@app.c:6
                ${hex(4)} 12288 alloc_c@app.c:7`,
  samples: `time_us thread page op    weight stack latency_cycles
              1       0     0   fault 1      0     0
              2       0     1   fault 1      0     0
              3       1     2   fault 1      1     0
              4       1     3   fault 1      1     0
              5       2     4   fault 1      2     0
              6       2     5   fault 1      2     0
              7       2     6   fault 1      2     0
              8       2     6   fault 1      2     0
             10       0     0   load  100    3     200
             11       0     1   load  100    3     200
             12       0     0   load  100    4     200
             13       0     2   load  100    3     600
             14       0     6   load  100   -1     0`,
};
