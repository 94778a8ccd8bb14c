/**
 * Invariants every generated trace must keep, whatever the model or machine: the tables agree
 * with each other (samples with pages, placements and counters with first touch), nothing is
 * accessed before it exists, and the manifest says honestly that it is synthetic.
 */
import { describe, expect, it } from 'vitest';
import { COMMITTED_SAMPLES } from '../generator/catalog.js';
import { TABLE_NAMES, readTrace, type Trace } from '../generator/engine.js';
import { generateTraceBytes } from '../generator/generate.js';
import { MODELS } from '../generator/models.js';
import { accesses, nodeOfCpu, numbers, readCommitted, strings, tally } from './helpers.js';

const cases: { name: string; load: () => Trace }[] = [
  ...COMMITTED_SAMPLES.map((s) => ({ name: s.file, load: () => readCommitted(s.file) })),
  ...MODELS.flatMap((model) =>
    ['intel-spr-2s', 'amd-asymsched-machine-a'].map((machine) => ({
      name: `${model.id} on ${machine} (4000 samples, seed 7)`,
      load: () => readTrace(generateTraceBytes({ model: model.id, seed: 7, samples: 4000, machine })),
    })),
  ),
];

const METRICS = [
  'page-placement', 'first-touch', 'thread-placement', 'thread-migrations', 'memory-accesses', 'access-latency',
  'data-source', 'numa-counters', 'memory-bandwidth', 'link-bandwidth', 'ipc', 'l3-mpki', 'allocation-sites',
  'code-locations',
];

for (const { name, load } of cases) {
  describe(name, () => {
    const trace = load();
    const m = trace.manifest;
    const cpuNode = nodeOfCpu(trace);
    const pageNode = numbers(trace, 'pages', 'node');
    const firstTouchUs = numbers(trace, 'pages', 'first_touch_us');
    const rows = accesses(trace);

    it('says it is synthetic, with its generator, seed and model', () => {
      expect(m.origin.kind).toBe('synthetic');
      expect(m.origin.generator).toMatch(/^numascope sample-traces generator /);
      expect(Number.isInteger(m.origin.seed)).toBe(true);
      expect(MODELS.map((x) => x.id)).toContain(m.origin.model);
      expect(m.origin.command).toEqual(expect.arrayContaining(['--model', m.origin.model!, '--seed', String(m.origin.seed)]));
      expect(m.capture.stopReason).toBe('generated');
      expect(m.machine.source).toBe(`preset:${m.machine.name}`);
    });

    it('marks every metric synthetic or unavailable, never measured', () => {
      expect(m.capture.capabilities.map((c) => c.metric).sort()).toEqual([...METRICS].sort());
      for (const c of m.capture.capabilities) {
        expect(['synthetic', 'unavailable']).toContain(c.status);
        expect(c.reason.length).toBeGreaterThan(10);
      }
      const used = m.capture.sources.filter((s) => s.status === 'used').map((s) => s.id);
      expect(used).toEqual(['synthetic']);
      for (const s of m.capture.sources) if (s.id !== 'synthetic') expect(s.status).toBe('not-requested');
      // Whatever is marked unavailable has no rows behind it, and vice versa for counters.
      expect(trace.tables.counters.numRows > 0).toBe(m.capture.capabilities.find((c) => c.metric === 'numa-counters')!.status === 'synthetic');
    });

    it('counts its samples in the manifest', () => {
      expect(m.capture.sampleCount).toBe(trace.tables.samples.numRows);
      for (const t of m.tables) expect(trace.tables[t.name].numRows).toBe(t.rows);
      expect(m.tables.map((t) => t.name)).toEqual([...TABLE_NAMES]);
    });

    it('has no code locations: every samples.stack is -1 and the stacks are empty (format v3)', () => {
      expect(numbers(trace, 'samples', 'stack').every((s) => s === -1)).toBe(true);
      expect(trace.tables.stacks.numRows).toBe(0);
      const cap = m.capture.capabilities.find((c) => c.metric === 'code-locations')!;
      expect(cap.status).toBe('unavailable');
      expect(cap.reason).toMatch(/synthetic/);
    });

    it('keeps samples in time order, inside the capture', () => {
      const times = numbers(trace, 'samples', 'time_us');
      for (let i = 1; i < times.length; i++) expect(times[i]! >= times[i - 1]!).toBe(true);
      expect(times[times.length - 1]!).toBeLessThanOrEqual(m.capture.durationUs);
    });

    it('has one fault row per page, at its first touch, by its first toucher', () => {
      const op = strings(trace, 'samples', 'op');
      const [time, thread, cpu, page] = ['time_us', 'thread', 'cpu', 'page'].map((c) => numbers(trace, 'samples', c)) as number[][];
      const ftThread = numbers(trace, 'pages', 'first_touch_thread');
      const ftCpu = numbers(trace, 'pages', 'first_touch_cpu');
      const faulted = new Set<number>();
      op.forEach((o, i) => {
        if (o !== 'fault') return;
        const p = page![i]!;
        expect(faulted.has(p)).toBe(false);
        faulted.add(p);
        expect([time![i], thread![i], cpu![i]]).toEqual([firstTouchUs[p], ftThread[p], ftCpu[p]]);
        expect(cpuNode.get(cpu![i]!)).toBe(pageNode[p]); // first touch places the page locally
      });
      expect(faulted.size).toBe(trace.tables.pages.numRows);
    });

    it('accesses pages only after their first touch, and reports the page\'s node', () => {
      expect(firstViolation(rows, (a) => a.timeUs >= firstTouchUs[a.page]!)).toBeUndefined();
      expect(firstViolation(rows, (a) => a.node === pageNode[a.page])).toBeUndefined();
    });

    it('runs each sample on the cpu its thread is placed on at that time', () => {
      const [time, thread, cpu, node] = ['time_us', 'thread', 'cpu', 'node'].map((c) => numbers(trace, 'thread_placements', c)) as number[][];
      const history = new Map<number, { timeUs: number; cpu: number }[]>();
      time!.forEach((t, i) => {
        expect(node![i]).toBe(cpuNode.get(cpu![i]!));
        const list = history.get(thread![i]!) ?? [];
        list.push({ timeUs: t, cpu: cpu![i]! });
        history.set(thread![i]!, list);
      });
      const cpuAt = (t: number, timeUs: number) => history.get(t)!.filter((h) => h.timeUs <= timeUs).at(-1)?.cpu;
      expect(firstViolation(rows, (a) => a.cpu === cpuAt(a.thread, a.timeUs))).toBeUndefined();
    });

    it('derives data source, hops and latency from where the page is', () => {
      const period = m.capture.sources.find((s) => s.id === 'synthetic')!.samplePeriod;
      const isLocal = (a: (typeof rows)[number]) => cpuNode.get(a.cpu) === a.node;
      expect(firstViolation(rows, (a) => a.dataSource !== 'local-dram' || isLocal(a))).toBeUndefined();
      expect(firstViolation(rows, (a) => a.dataSource !== 'remote-dram' || !isLocal(a))).toBeUndefined();
      expect(firstViolation(rows, (a) => (a.dataSource === 'remote-dram' ? a.hops > 0 : a.hops === 0))).toBeUndefined();
      expect(firstViolation(rows, (a) => a.latencyCycles > 0 === (a.op === 'load'))).toBeUndefined();
      expect(firstViolation(rows, (a) => a.weight === period)).toBeUndefined();
      // On average a DRAM load takes far longer than an L1 hit.
      const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
      const loads = rows.filter((a) => a.op === 'load');
      const l1 = mean(loads.filter((a) => a.dataSource === 'l1').map((a) => a.latencyCycles));
      const dram = mean(loads.filter((a) => a.dataSource.endsWith('dram')).map((a) => a.latencyCycles));
      expect(dram).toBeGreaterThan(10 * l1);
    });

    it('has region snapshots that match the pages table at the end and never shrink', () => {
      const [time, region, node, pages] = ['time_us', 'region', 'node', 'pages'].map((c) => numbers(trace, 'region_placements', c)) as number[][];
      const last = Math.max(...time!);
      const byKey = new Map<string, number>();
      time!.forEach((_, i) => {
        const key = `${region![i]}:${node![i]}`;
        expect(pages![i]! >= (byKey.get(key) ?? 0)).toBe(true);
        byKey.set(key, pages![i]!);
      });
      const pageRegion = numbers(trace, 'pages', 'region');
      const expected = tally(pageRegion.map((r, p) => `${r}:${pageNode[p]}`));
      const atLast = new Map(time!.flatMap((t, i) => (t === last ? [[`${region![i]}:${node![i]}`, pages![i]!] as const] : [])));
      expect(atLast).toEqual(expected);
    });

    it('has numa_hit counters that add up to the pages placed on each node', () => {
      const counter = strings(trace, 'counters', 'counter');
      const [time, scopeId, value] = ['time_us', 'scope_id', 'value'].map((c) => numbers(trace, 'counters', c)) as number[][];
      const last = Math.max(...time!);
      const perNode = tally(pageNode);
      for (const nodeInfo of m.machine.nodes) {
        const series = counter.flatMap((c, i) => (c === 'numa_hit' && scopeId![i] === nodeInfo.id ? [{ t: time![i]!, v: value![i]! }] : []));
        expect(series.length).toBeGreaterThan(1);
        for (let i = 1; i < series.length; i++) expect(series[i]!.v >= series[i - 1]!.v).toBe(true);
        expect(series.find((s) => s.t === last)!.v).toBe(perNode.get(nodeInfo.id) ?? 0);
      }
    });

    it('counts migrations in the threads table as the events report them', () => {
      const kind = strings(trace, 'events', 'kind');
      const thread = numbers(trace, 'events', 'thread');
      const migrated = tally(kind.flatMap((k, i) => (k === 'thread-migration' ? [thread[i]!] : [])));
      numbers(trace, 'threads', 'migrations').forEach((count, t) => expect(count).toBe(migrated.get(t) ?? 0));
      expect(kind.filter((k) => k === 'phase')).toHaveLength(2);
    });

    it('puts every page inside its region, 4 KiB aligned', () => {
      const address = numericColumnBig(trace, 'pages', 'address');
      const region = numbers(trace, 'pages', 'region');
      const start = numericColumnBig(trace, 'regions', 'start');
      const end = numericColumnBig(trace, 'regions', 'end');
      address.forEach((a, p) => {
        expect(a % 4096n).toBe(0n);
        expect(a >= start[region[p]!]! && a < end[region[p]!]!).toBe(true);
      });
    });
  });
}

/** The first row that breaks `holds`, to show in the failure; undefined when all hold. */
function firstViolation<T>(rows: readonly T[], holds: (row: T) => boolean): T | undefined {
  return rows.find((row) => !holds(row));
}

function numericColumnBig(trace: Trace, table: keyof Trace['tables'], column: string): bigint[] {
  const vector = trace.tables[table].getChild(column)!;
  return Array.from({ length: vector.length }, (_, i) => vector.get(i) as bigint);
}
