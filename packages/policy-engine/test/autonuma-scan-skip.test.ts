/**
 * The AutoNUMA replay skips the mappings the kernel's NUMA scanner skips (task_numa_work,
 * kernel/sched/fair.c, Linux 6.12; policies/numa-scan.ts, docs/policies.md): a read-only file
 * mapping (a model file an inference server maps read-only) takes no hinting fault and never
 * moves, while a writable anonymous mapping accessed the same way does. A trace without
 * `regions.prot` cannot tell read-only mappings: they are scanned as writable, and a note says so.
 */
import { describe, expect, it } from 'vitest';
import { buildReplayInput } from '../src/analyze/replay-input.js';
import type { ReplayRegions } from '../src/model/contract.js';
import { simulateWindow } from '../src/engine/simulate.js';
import { autonumaPolicy } from '../src/policies/autonuma.js';
import { isFileBacked, numaScanSkips, numaScanVerdict, policyMigratesOnFault, type NumaScanRegion } from '../src/policies/numa-scan.js';
import { emptyColumns, writeTrace } from '../src/trace/writer.js';
import { readTrace } from '../src/trace/reader.js';
import type { Trace } from '../src/trace/types.js';
import { minimalManifest } from './helpers/minimal-trace.js';

const PER_REGION = 16;
const WINDOWS = 30;
const WINDOW_US = 100_000;
const MODEL = '/models/llama 70b.gguf';

interface RegionSpec {
  kind: string;
  path: string | null;
  policy?: string;
  prot: string | null;
  /** Page rows in the region (0 for none). */
  pages: number;
}

/** Regions laid out 1 GiB apart; pages of region r follow region r−1's in the pages table. */
const BASE = 0x7f0000000000n;
const GIB = 1n << 30n;

/**
 * Two nodes: thread 0 on node 0 first-touches every page (all on node 0), then thread 1 on node 1
 * reads them all in every window; thread 0 never touches them again.
 */
function traceOf(regions: RegionSpec[], withProt: boolean): Trace {
  const c = emptyColumns();
  c.regions = {
    start: BigUint64Array.from(regions, (_, r) => BASE + BigInt(r) * GIB),
    end: BigUint64Array.from(regions, (_, r) => BASE + BigInt(r) * GIB + BigInt(Math.max(1, regions[r]!.pages) * 4096)),
    kind: regions.map((r) => r.kind),
    path: regions.map((r) => r.path),
    policy: regions.map((r) => r.policy ?? 'default'),
    alloc_site: regions.map(() => null),
    ...(withProt ? { prot: regions.map((r) => r.prot) } : {}),
  };
  const address: bigint[] = [];
  const region: number[] = [];
  regions.forEach((spec, r) => {
    for (let k = 0; k < spec.pages; k++) {
      address.push(BASE + BigInt(r) * GIB + BigInt(k) * 4096n);
      region.push(r);
    }
  });
  const P = address.length;
  c.pages = {
    address: BigUint64Array.from(address),
    region: Int32Array.from(region),
    node: new Int8Array(P),
    page_size: new Uint32Array(P).fill(4096),
    first_touch_us: BigInt64Array.from({ length: P }, (_, p) => BigInt(p)),
    first_touch_thread: new Int32Array(P),
    first_touch_cpu: new Int16Array(P),
  };
  c.threads = {
    tid: Int32Array.from([100, 101]),
    pid: Int32Array.from([100, 100]),
    name: ['server', 'worker'],
    first_seen_us: new Uint32Array(2),
    last_seen_us: new Uint32Array(2).fill(WINDOWS * WINDOW_US),
    migrations: new BigInt64Array(2),
  };
  c.thread_placements = {
    time_us: new Uint32Array(2),
    thread: Uint32Array.from([0, 1]),
    cpu: Int16Array.from([0, 2]),
    node: Int8Array.from([0, 1]),
  };
  type Row = { t: number; thread: number; page: number; op: number };
  const rows: Row[] = [];
  for (let p = 0; p < P; p++) rows.push({ t: p, thread: 0, page: p, op: 0 });
  for (let w = 0; w < WINDOWS; w++) {
    for (let k = 0; k < 4; k++) for (let p = 0; p < P; p++) rows.push({ t: 1000 + w * WINDOW_US + k * 1000 + p, thread: 1, page: p, op: 1 });
  }
  const n = rows.length;
  c.samples = {
    time_us: Uint32Array.from(rows, (x) => x.t),
    thread: Uint32Array.from(rows, (x) => x.thread),
    cpu: Int16Array.from(rows, (x) => (x.thread === 0 ? 0 : 2)),
    page: Int32Array.from(rows, (x) => x.page),
    offset: new Uint16Array(n),
    op: { values: ['fault', 'load'], indices: Int8Array.from(rows, (x) => x.op) },
    event: { values: ['page-fault', 'ibs-op'], indices: Int8Array.from(rows, (x) => x.op) },
    data_source: { values: ['unknown', 'remote-dram'], indices: Int8Array.from(rows, (x) => x.op) },
    hops: new Int8Array(n).fill(-1),
    node: new Int8Array(n),
    latency_cycles: new Uint32Array(n),
    stack: new Int32Array(n).fill(-1),
    hitm: new Int8Array(n).fill(-1),
    weight: new Uint32Array(n).fill(1),
  };
  const manifest = minimalManifest();
  manifest.origin.kind = 'recorded';
  manifest.capture.durationUs = WINDOWS * WINDOW_US + 1000;
  return readTrace(writeTrace(manifest, c));
}

function replay(trace: Trace) {
  const input = buildReplayInput(trace, { windowMs: WINDOW_US / 1000 });
  return { input, replay: autonumaPolicy.replay(input, { seed: 1, simulate: simulateWindow }) };
}

/** Page rows of region r (regions laid out as in traceOf). */
const rowsOf = (regions: RegionSpec[], r: number): number[] => {
  const first = regions.slice(0, r).reduce((s, x) => s + x.pages, 0);
  return Array.from({ length: regions[r]!.pages }, (_, k) => first + k);
};

const REGIONS: RegionSpec[] = [
  { kind: 'file', path: MODEL, prot: 'r--s', pages: PER_REGION },
  { kind: 'anon', path: null, prot: 'rw-p', pages: PER_REGION },
  { kind: 'vdso', path: '[vdso]', prot: 'r-xp', pages: 2 },
];

describe('AutoNUMA replay: mappings the kernel scanner skips', () => {
  it('moves none of a read-only file mapping\'s remotely read pages, and moves the writable anon mapping\'s', () => {
    const { input, replay: r } = replay(traceOf(REGIONS, true));
    expect(input.regions?.protRecorded).toBe(true);
    expect(input.regions?.list.map((x) => x.prot)).toEqual(['r--s', 'rw-p', 'r-xp']);
    const model = rowsOf(REGIONS, 0);
    const anon = rowsOf(REGIONS, 1);
    const vdso = rowsOf(REGIONS, 2);
    const node = r.finalPlacement.pageNode;
    expect(anon.map((p) => node[p])).toEqual(anon.map(() => 1));
    expect(model.map((p) => node[p])).toEqual(model.map(() => 0));
    expect(vdso.map((p) => node[p])).toEqual(vdso.map(() => 0));
    const moved = new Set(r.decisions.filter((d) => d.kind === 'migrate').flatMap((d) => Array.from(d.pageIndices ?? [])));
    expect([...moved].sort((a, b) => a - b)).toEqual(anon);
    expect(r.migratedPages).toBe(anon.length);

    // The decisions say how many pages of which regions were skipped, and why.
    const skipped = r.decisions.filter((d) => d.kind === 'none' && /never armed/.test(d.explanation));
    expect(skipped.map((d) => d.window)).toEqual([0, 0]);
    const [special, readOnly] = skipped;
    expect(special!.explanation).toMatch(/^2 pages of 1 region never armed for NUMA hinting faults, so never migrated \(task_numa_work skips them, Linux 6\.12\): the kernel's special mappings .*: \[vdso\] r-xp \(2 pages\)$/);
    expect(Array.from(special!.pageIndices!)).toEqual(vdso);
    expect(readOnly!.explanation).toMatch(
      /^16 pages of 1 region never armed .*: read-only file-backed mappings \(the kernel expects shared library and other read-only file pages to be cache-replicated\): \/models\/llama 70b\.gguf r--s \(16 pages\)$/,
    );
    expect(readOnly!.pages).toBe(PER_REGION);
    expect(Array.from(readOnly!.pageIndices!)).toEqual(model);
    expect(r.decisions.some((d) => /cannot be told read-only/.test(d.explanation))).toBe(false);
  });

  it('without regions.prot: the file mapping is scanned as writable (its pages move), and one note says so', () => {
    const { input, replay: r } = replay(traceOf(REGIONS, false));
    expect(input.regions?.protRecorded).toBe(false);
    expect(input.regions?.list.every((x) => x.prot === null)).toBe(true);
    const node = r.finalPlacement.pageNode;
    const model = rowsOf(REGIONS, 0);
    expect(model.map((p) => node[p])).toEqual(model.map(() => 1));
    expect(rowsOf(REGIONS, 2).map((p) => node[p])).toEqual([0, 0]);
    const notes = r.decisions.filter((d) => /cannot be told read-only/.test(d.explanation));
    expect(notes).toHaveLength(1);
    expect(notes[0]!.window).toBe(0);
    expect(notes[0]!.kind).toBe('none');
    expect(Array.from(notes[0]!.pageIndices!)).toEqual(model);
    expect(notes[0]!.explanation).toMatch(
      /^1 file-backed region \(16 pages\) cannot be told read-only: the trace has no regions\.prot column \(written before it existed, or synthetic\); scanned as writable mappings, .*: \/models\/llama 70b\.gguf \(16 pages\)$/,
    );
    // The vDSO is skipped whatever the permissions say.
    expect(r.decisions.filter((d) => /never armed/.test(d.explanation)).map((d) => d.pages)).toEqual([2]);
  });

  it('a trace without regions.prot written by the TypeScript writer reads with the column absent; given, it round-trips', () => {
    expect(traceOf(REGIONS, false).tables.regions.getChild('prot')).toBeNull();
    const prot = traceOf(REGIONS, true).tables.regions.getChild('prot')!;
    expect(Array.from({ length: prot.length }, (_, i) => prot.get(i))).toEqual(['r--s', 'rw-p', 'r-xp']);
  });

  it('a policy without migrate-on-fault and a writable file mapping: skipped and scanned', () => {
    const regions: RegionSpec[] = [
      { kind: 'anon', path: null, policy: 'bind:0', prot: 'rw-p', pages: 8 },
      { kind: 'file', path: '/data/table.bin', prot: 'rw-s', pages: 8 },
      { kind: 'anon', path: null, policy: 'bind=balancing:0-1', prot: 'rw-p', pages: 8 },
    ];
    const { replay: r } = replay(traceOf(regions, true));
    const node = r.finalPlacement.pageNode;
    expect(rowsOf(regions, 0).map((p) => node[p])).toEqual(Array(8).fill(0));
    expect(rowsOf(regions, 1).map((p) => node[p])).toEqual(Array(8).fill(1));
    expect(rowsOf(regions, 2).map((p) => node[p])).toEqual(Array(8).fill(1));
    const policy = r.decisions.find((d) => /memory policy without migrate-on-fault/.test(d.explanation))!;
    expect(policy.explanation).toMatch(/^8 pages of 1 region never armed .*: anon 0x7f0000000000 bind:0 \(8 pages\)$/);
  });
});

describe('numaScanVerdict: the skip rules, case by case', () => {
  const r = (kind: string, path: string | null, prot: string | null, policy = 'default', kernelPageBytes = 4096): NumaScanRegion => ({ kind, path, prot, policy, kernelPageBytes });
  const cases: Array<[string, NumaScanRegion, string | null, boolean]> = [
    // [what, region, skip reason, prot unknown]
    ['read-only shared file (a model file)', r('file', MODEL, 'r--s'), 'shared-ro', false],
    ['read-only private file (rodata)', r('file', '/usr/lib/libc.so.6', 'r--p'), 'shared-ro', false],
    ['library code (read, exec)', r('file', '/usr/lib/libc.so.6', 'r-xp'), 'shared-ro', false],
    ['writable private file (data, COW)', r('file', '/usr/lib/libc.so.6', 'rw-p'), null, false],
    ['writable shared file', r('file', '/data/x', 'rw-s'), null, false],
    ['read-only /dev/shm segment', r('shm', '/dev/shm/ring', 'r--s'), 'shared-ro', false],
    ['read-only shared anonymous (shmem)', r('anon', '[anon_shmem:buf]', 'r--s'), 'shared-ro', false],
    ['read-only anonymous (no file)', r('anon', null, 'r--p'), null, false],
    ['exec-only file (no read)', r('file', '/x', '--xp'), null, false],
    ['PROT_NONE anonymous (guard)', r('anon', null, '---p'), 'inaccessible', false],
    ['PROT_NONE file', r('file', '/x', '---s'), 'inaccessible', false],
    ['writable heap', r('heap', '[heap]', 'rw-p'), null, false],
    ['vDSO', r('vdso', '[vdso]', 'r-xp'), 'vdso', false],
    ['vvar, prot unknown', r('vdso', '[vvar]', null), 'vdso', false],
    ['vsyscall', r('vdso', '[vsyscall]', '--xp'), 'vdso', false],
    ['file, prot unknown', r('file', MODEL, null), null, true],
    ['shm, prot unknown', r('shm', '/dev/shm/ring', null), null, true],
    ['anon, prot unknown', r('anon', null, null), null, false],
    ['hugetlb by numa_maps page size', r('anon', null, 'rw-p', 'default', 2 << 20), 'hugetlb', false],
    ['hugetlb, anonymous MAP_HUGETLB', r('file', '/anon_hugepage (deleted)', 'rw-s', 'default', 0), 'hugetlb', false],
    ['hugetlbfs mount', r('file', '/dev/hugepages/buf', 'rw-s', 'default', 0), 'hugetlb', false],
    ['bind without balancing', r('anon', null, 'rw-p', 'bind:1'), 'policy', false],
    ['bind with balancing', r('anon', null, 'rw-p', 'bind=balancing:0-1'), null, false],
    ['bind static|balancing', r('anon', null, 'rw-p', 'bind=static|balancing:0-1'), null, false],
    ['bind static', r('anon', null, 'rw-p', 'bind=static:1'), 'policy', false],
    ['prefer (many) with balancing', r('anon', null, 'rw-p', 'prefer (many)=balancing:0-1'), null, false],
    ['prefer (many)', r('anon', null, 'rw-p', 'prefer (many):0-1'), 'policy', false],
    ['prefer', r('anon', null, 'rw-p', 'prefer:1'), 'policy', false],
    ['explicit local', r('anon', null, 'rw-p', 'local'), 'policy', false],
    ['interleave', r('anon', null, 'rw-p', 'interleave:0-3'), 'policy', false],
    ['weighted interleave', r('anon', null, 'rw-p', 'weighted interleave:0-3'), 'policy', false],
    ['policy not read', r('anon', null, 'rw-p', 'unknown'), null, false],
    ['read-only file under bind: the policy test comes first', r('file', MODEL, 'r--s', 'bind:0'), 'policy', false],
  ];
  for (const [what, region, skip, protUnknown] of cases) {
    it(`${what}: ${skip ?? 'scanned'}`, () => {
      const v = numaScanVerdict(region);
      expect(v.skip).toBe(skip);
      expect(v.protUnknown).toBe(protUnknown);
      expect(v.why.length).toBeGreaterThan(0);
    });
  }

  it('a larger kernel page size is hugetlb only against the trace\'s base page size (64 kB base pages)', () => {
    expect(numaScanVerdict(r('anon', null, 'rw-p', 'default', 65536), 65536).skip).toBeNull();
    expect(numaScanVerdict(r('anon', null, 'rw-p', 'default', 512 << 20), 65536).skip).toBe('hugetlb');
    const regions: ReplayRegions = {
      list: [
        { start: 0n, end: 65536n, kind: 'anon', path: null, policy: 'default', prot: 'rw-p', kernelPageBytes: 65536 },
        { start: 1n << 30n, end: (1n << 30n) + (512n << 20n), kind: 'anon', path: null, policy: 'default', prot: 'rw-p', kernelPageBytes: 512 << 20 },
      ],
      pageRegion: Int32Array.from([0, 0, 1, 1, -1]),
      protRecorded: true,
    };
    const s = numaScanSkips(regions, 5);
    expect(Array.from(s.skipped)).toEqual([0, 0, 1, 1, 0]);
    expect(s.groups).toEqual([{ reason: 'hugetlb', regions: [1], pages: [2, 3] }]);
  });

  it('policyMigratesOnFault reads numa_maps policy strings; isFileBacked knows vm_file mappings', () => {
    expect(policyMigratesOnFault('default')).toBe(true);
    expect(policyMigratesOnFault('interleave=balancing:0-1')).toBe(false); // the kernel refuses it: never printed
    expect(policyMigratesOnFault('unknown')).toBeNull();
    expect(policyMigratesOnFault('frobnicate:0')).toBeNull();
    expect(isFileBacked({ kind: 'shm', path: '/SYSV00000000 (deleted)' })).toBe(true);
    expect(isFileBacked({ kind: 'anon', path: '[anon:arena]' })).toBe(false);
    expect(isFileBacked({ kind: 'stack', path: '[stack]' })).toBe(false);
  });
});
