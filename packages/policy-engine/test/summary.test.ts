/**
 * summarizeTrace on a small trace written out as text:
 *
 *   pages:   #  node          samples:  thread  page  node  op     weight
 *            0     0                        0     0    -1  fault       1
 *            1     1                        0     1    -1  fault       1
 *            2    -1                        1     0     0  load      100
 *                                           1     1    -1  store     100    (node from the page: 1)
 *                                           1     1     0  load      100    (the sample's own node wins: 0)
 *                                           1    -1    -1  load      100    (no address: unknown node)
 */
import { describe, expect, it } from 'vitest';
import { readTrace } from '../src/trace/reader.js';
import { summarizeTrace } from '../src/query/summary.js';
import { emptyColumns, writeTrace } from '../src/trace/writer.js';
import { minimalManifest } from './helpers/minimal-trace.js';

function trace() {
  const c = emptyColumns();
  c.pages = {
    ...c.pages,
    address: new BigUint64Array([0x1000n, 0x2000n, 0x3000n]),
    region: new Int32Array([-1, -1, -1]),
    node: new Int8Array([0, 1, -1]),
    page_size: new Uint32Array([4096, 4096, 4096]),
    first_touch_us: new BigInt64Array([0n, 1n, -1n]),
    first_touch_thread: new Int32Array([0, 0, -1]),
    first_touch_cpu: new Int16Array([0, 0, -1]),
  };
  c.threads = {
    tid: new Int32Array([10, 11]),
    pid: new Int32Array([10, 10]),
    name: ['main', 'worker'],
    first_seen_us: new Uint32Array([0, 0]),
    last_seen_us: new Uint32Array([5, 5]),
    migrations: new BigInt64Array([0n, -1n]),
  };
  const rows = [
    [0, 0, -1, 'fault', 1],
    [0, 1, -1, 'fault', 1],
    [1, 0, 0, 'load', 100],
    [1, 1, -1, 'store', 100],
    [1, 1, 0, 'load', 100],
    [1, -1, -1, 'load', 100],
  ] as const;
  const n = rows.length;
  c.samples = {
    time_us: new Uint32Array(n),
    thread: new Uint32Array(rows.map((r) => r[0])),
    cpu: new Int16Array(n),
    page: new Int32Array(rows.map((r) => r[1])),
    offset: new Uint16Array(n),
    op: rows.map((r) => r[3]),
    event: rows.map((r) => (r[3] === 'fault' ? 'page-fault' : 'synthetic')),
    data_source: rows.map(() => 'unknown'),
    hops: new Int8Array(n).fill(-1),
    node: new Int8Array(rows.map((r) => r[2])),
    latency_cycles: new Uint32Array(n),
    stack: new Int32Array(n).fill(-1),
    hitm: new Int8Array(n).fill(-1),
    weight: new Uint32Array(rows.map((r) => r[4])),
  };
  // The worker was created at 2 µs and ended at 4 µs (the recorder's task records); a
  // poll-based start at 3 µs after it is not its start; the main thread ran throughout.
  c.events = {
    time_us: new Uint32Array([3, 2, 4, 5]),
    kind: ['thread-start', 'thread-start', 'thread-exit', 'process-exit'],
    thread: new Int32Array([1, 1, 1, -1]),
    value: new BigInt64Array([-1n, -1n, -1n, 0n]),
    detail: ['thread 11 (worker) first seen on cpu 0 (node 0)', 'thread 11 (worker) created by thread 10 on cpu 0 (node 0)', 'thread 11 (worker) exited', 'process 10 exited with code 0'],
  };
  return readTrace(writeTrace(minimalManifest(), c));
}

describe('summarizeTrace', () => {
  const s = summarizeTrace(trace());

  it('counts page faults as first touches, never as accesses', () => {
    expect(s.totals).toMatchObject({ samples: 6, accessSamples: 4, faults: 2, accesses: 400, pages: 3, threads: 2 });
    expect(s.threads.map((t) => [t.samples, t.faults, t.accesses])).toEqual([
      [2, 2, 0],
      [4, 0, 400],
    ]);
  });

  it('puts each sample on its own node, else its page node, else unknown', () => {
    expect(s.nodes.map((n) => [n.id, n.pagesSeen, n.samples, n.faults, n.accesses])).toEqual([
      [0, 1, 3, 1, 200],
      [1, 1, 2, 1, 100],
    ]);
    expect(s.unknownNode).toEqual({ pagesSeen: 1, samples: 1, faults: 0, accesses: 100 });
  });

  it("gives each thread's start and end inside the capture from its events (the earliest of each)", () => {
    expect(s.threads.map((t) => t.life)).toEqual([
      { startUs: null, exitUs: null },
      { startUs: 2, exitUs: 4 },
    ]);
  });

  it('reports migrations as recorded (-1 unknown)', () => {
    expect(s.threads.map((t) => t.migrations)).toEqual([0, -1]);
  });
});
