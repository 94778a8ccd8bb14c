/**
 * Each workload model's defining property, checked on the committed trace read back with
 * readTrace (so a change to the generator that breaks a model's point fails here).
 */
import { describe, expect, it } from 'vitest';
import { COMMITTED_SAMPLES } from '../generator/catalog.js';
import { accesses, nodeOfCpu, numbers, readCommitted, regionAt, strings, tally, texts } from './helpers.js';

const fileOf = (model: string) => COMMITTED_SAMPLES.find((s) => s.model === model)!.file;

describe('streamcluster-hotspot: one node holds the shared array that every node reads', () => {
  const trace = readCommitted(fileOf('streamcluster-hotspot'));
  const points = regionAt(trace, 'alloc_points');
  const pageRegion = numbers(trace, 'pages', 'region');
  const pageNode = numbers(trace, 'pages', 'node');
  const cpuNode = nodeOfCpu(trace);
  const toPoints = accesses(trace).filter((a) => pageRegion[a.page] === points);

  it('has at least 90 % of the point array\'s pages on one node', () => {
    const perNode = tally(pageNode.filter((_, p) => pageRegion[p] === points));
    const total = [...perNode.values()].reduce((s, n) => s + n, 0);
    expect(total).toBeGreaterThan(1000);
    expect(Math.max(...perNode.values()) / total).toBeGreaterThanOrEqual(0.9);
  });

  it('is accessed from every node, by all 16 threads', () => {
    expect(new Set(toPoints.map((a) => cpuNode.get(a.cpu)))).toEqual(new Set(trace.manifest.machine.nodes.map((n) => n.id)));
    expect(new Set(toPoints.map((a) => a.thread)).size).toBe(16);
  });

  it('makes that node serve most DRAM traffic, at a higher latency than idle', () => {
    const dram = accesses(trace).filter((a) => a.dataSource.endsWith('dram'));
    const served = tally(dram.map((a) => a.node));
    expect(Math.max(...served.values()) / dram.length).toBeGreaterThan(0.8);
    const m = trace.manifest.machine;
    const localLoads = dram.filter((a) => a.op === 'load' && a.dataSource === 'local-dram');
    const meanNs = localLoads.reduce((s, a) => s + a.latencyCycles, 0) / localLoads.length / 2.5;
    expect(meanNs).toBeGreaterThan(1.5 * m.latenciesNs![0]![0]!);
  });
});

describe('partitioned: each thread works on memory it first-touched', () => {
  const trace = readCommitted(fileOf('partitioned'));
  const cpuNode = nodeOfCpu(trace);
  const rows = accesses(trace);

  it('makes at least 90 % of accesses local', () => {
    const local = rows.filter((a) => cpuNode.get(a.cpu) === a.node).length;
    expect(local / rows.length).toBeGreaterThanOrEqual(0.9);
  });

  it('spreads the grid over every node', () => {
    const grid = regionAt(trace, 'alloc_grid');
    const pageRegion = numbers(trace, 'pages', 'region');
    const nodes = new Set(numbers(trace, 'pages', 'node').filter((_, p) => pageRegion[p] === grid));
    expect(nodes.size).toBe(trace.manifest.machine.nodes.length);
  });

  it('has one thread migrate once, after which its accesses are remote', () => {
    const kind = strings(trace, 'events', 'kind');
    const migrations = kind.flatMap((k, i) => (k === 'thread-migration' ? [i] : []));
    expect(migrations).toHaveLength(1);
    const thread = numbers(trace, 'events', 'thread')[migrations[0]!]!;
    const atUs = numbers(trace, 'events', 'time_us')[migrations[0]!]!;
    const grid = regionAt(trace, 'alloc_grid');
    const pageRegion = numbers(trace, 'pages', 'region');
    const own = rows.filter((a) => a.thread === thread && pageRegion[a.page] === grid);
    const localShare = (xs: typeof own) => xs.filter((a) => cpuNode.get(a.cpu) === a.node).length / xs.length;
    expect(localShare(own.filter((a) => a.timeUs < atUs))).toBeGreaterThan(0.9);
    expect(localShare(own.filter((a) => a.timeUs >= atUs))).toBeLessThan(0.1);
  });
});

describe('shared-readmostly: a table shared by all threads, almost only read', () => {
  const trace = readCommitted(fileOf('shared-readmostly'));
  const table = regionAt(trace, 'load_table');
  const pageRegion = numbers(trace, 'pages', 'region');
  const toTable = accesses(trace).filter((a) => pageRegion[a.page] === table);
  const cpuNode = nodeOfCpu(trace);

  it('has at least 95 % loads among the table\'s accesses', () => {
    expect(toTable.length).toBeGreaterThan(10_000);
    expect(toTable.filter((a) => a.op === 'load').length / toTable.length).toBeGreaterThanOrEqual(0.95);
  });

  it('is read by every thread, from every node', () => {
    expect(new Set(toTable.map((a) => a.thread)).size).toBe(16);
    expect(new Set(toTable.map((a) => cpuNode.get(a.cpu))).size).toBe(trace.manifest.machine.nodes.length);
  });

  it('keeps private buffers private and mixed read/write', () => {
    const privateRegions = new Set(texts(trace, 'regions', 'alloc_site').flatMap((site, r) => (site === 'alloc_private' ? [r] : [])));
    expect(privateRegions.size).toBe(16);
    const toPrivate = accesses(trace).filter((a) => privateRegions.has(pageRegion[a.page]!));
    const owners = new Map<number, Set<number>>();
    for (const a of toPrivate) owners.set(pageRegion[a.page]!, (owners.get(pageRegion[a.page]!) ?? new Set()).add(a.thread));
    for (const threads of owners.values()) expect(threads.size).toBe(1);
    const loadShare = toPrivate.filter((a) => a.op === 'load').length / toPrivate.length;
    expect(loadShare).toBeGreaterThan(0.3);
    expect(loadShare).toBeLessThan(0.7);
  });
});

describe('two-groups: each group shares its own buffer, and only its own', () => {
  const trace = readCommitted(fileOf('two-groups'));
  const pageRegion = numbers(trace, 'pages', 'region');
  const pageNode = numbers(trace, 'pages', 'node');
  const firstToucher = numbers(trace, 'pages', 'first_touch_thread');
  const cpuNode = nodeOfCpu(trace);
  const rows = accesses(trace);
  const buffers = ['alloc_group_buffer:A', 'alloc_group_buffer:B'].map((site) => regionAt(trace, site));
  // A group = the threads that first-touched its buffer.
  const groups = buffers.map((b) => new Set(firstToucher.filter((_, p) => pageRegion[p] === b)));

  it('has two disjoint groups of 8 threads', () => {
    expect(groups.map((g) => g.size)).toEqual([8, 8]);
    expect([...groups[0]!].filter((t) => groups[1]!.has(t))).toEqual([]);
  });

  it('accesses each buffer only from its own group, by every member', () => {
    buffers.forEach((b, g) => {
      const users = new Set(rows.filter((a) => pageRegion[a.page] === b).map((a) => a.thread));
      expect(users).toEqual(groups[g]);
    });
  });

  it('places each buffer on its group\'s nodes, two nodes per group on Machine A', () => {
    buffers.forEach((b, g) => {
      const bufferNodes = new Set(pageNode.filter((_, p) => pageRegion[p] === b));
      const groupNodes = new Set(rows.filter((a) => groups[g]!.has(a.thread)).map((a) => cpuNode.get(a.cpu)));
      expect(bufferNodes).toEqual(groupNodes);
      expect(bufferNodes.size).toBe(2);
    });
  });

  it('shares heavily: both loads and stores on each buffer, from both nodes of the group', () => {
    for (const b of buffers) {
      const ops = tally(rows.filter((a) => pageRegion[a.page] === b).map((a) => a.op));
      expect(ops.get('store')! / (ops.get('load')! + ops.get('store')!)).toBeGreaterThan(0.2);
      const remote = rows.filter((a) => pageRegion[a.page] === b && cpuNode.get(a.cpu) !== a.node).length;
      expect(remote).toBeGreaterThan(0);
    }
  });
});
