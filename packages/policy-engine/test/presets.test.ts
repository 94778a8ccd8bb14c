import { describe, expect, it } from 'vitest';
import { simulateWindow } from '../src/engine/simulate.js';
import { machineModel } from '../src/machine/model.js';
import { PRESET_IDS, getPreset, listPresets, routeKey, shortestPathRoutes, type FigureKind } from '../src/machine/presets.js';
import { carrefourPolicy } from '../src/policies/carrefour.js';
import { replayInputFromTable } from './helpers/replay-table.js';
import { readTrace } from '../src/trace/reader.js';
import type { MachineLink, TraceMachine } from '../src/trace/types.js';
import { emptyColumns, writeTrace } from '../src/trace/writer.js';
import { minimalManifest } from './helpers/minimal-trace.js';

const PROVENANCE_KINDS = /^(measured|documented|estimated|unavailable):\S/;
const REQUIRED_PROVENANCE = ['distances', 'latenciesNs', 'links', 'memoryBandwidthGBps', 'memoryBytes'] as const;

function isSquare(m: number[][], n: number): boolean {
  return m.length === n && m.every((row) => row.length === n);
}

describe('machine presets are well-formed', () => {
  it('includes the machines of the published measurements and the simulator need', () => {
    for (const id of ['amd-opteron-8385-4p', 'amd-asymsched-machine-a', 'amd-genoa-2s-nps4', 'intel-spr-2s']) {
      expect(PRESET_IDS).toContain(id);
    }
    expect(new Set(PRESET_IDS).size).toBe(PRESET_IDS.length);
  });

  for (const { id, machine, description } of listPresets()) {
    describe(id, () => {
      const n = machine.nodes.length;
      const nodeIds = machine.nodes.map((node) => node.id);

      it('names itself and its source', () => {
        expect(machine.name).toBe(id);
        expect(machine.source).toBe(`preset:${id}`);
        expect(description.length).toBeGreaterThan(20);
        expect(machine.pageSizeBytes).toBe(4096);
      });

      it('lists nodes in id order with unique cpus', () => {
        expect(nodeIds).toEqual(Array.from({ length: n }, (_, i) => i));
        const cpus = machine.nodes.flatMap((node) => node.cpus);
        expect(cpus.length).toBeGreaterThan(0);
        expect(new Set(cpus).size).toBe(cpus.length);
        for (const cpu of cpus) expect(Number.isInteger(cpu) && cpu >= 0).toBe(true);
        for (const node of machine.nodes) {
          if (node.memoryBandwidthGBps !== null) expect(node.memoryBandwidthGBps).toBeGreaterThan(0);
          if (node.memoryBytes !== null) expect(node.memoryBytes).toBeGreaterThan(0);
        }
      });

      it('has a square distance matrix, 10 on the diagonal and more elsewhere', () => {
        expect(isSquare(machine.distances, n)).toBe(true);
        machine.distances.forEach((row, i) =>
          row.forEach((d, j) => (i === j ? expect(d).toBe(10) : expect(d).toBeGreaterThan(10))),
        );
      });

      it('has latencies (when known) that are square, positive, and lowest on the local node', () => {
        if (machine.latenciesNs === null) return;
        expect(isSquare(machine.latenciesNs, n)).toBe(true);
        machine.latenciesNs.forEach((row, i) => {
          for (const ns of row) expect(ns).toBeGreaterThan(0);
          expect(Math.min(...row)).toBe(row[i]);
        });
      });

      it('has links between existing, distinct nodes with positive capacity', () => {
        if (n > 1) expect(machine.links.length).toBeGreaterThan(0);
        for (const link of machine.links) {
          expect(nodeIds).toContain(link.from);
          expect(nodeIds).toContain(link.to);
          expect(link.from).not.toBe(link.to);
          if (link.capacityGBps !== null) expect(link.capacityGBps).toBeGreaterThan(0);
        }
      });

      it('routes every ordered pair of distinct nodes along connected links', () => {
        expect(machine.routes).not.toBeNull();
        const routes = machine.routes!;
        const pairs = nodeIds.flatMap((i) => nodeIds.filter((j) => j !== i).map((j) => routeKey(i, j)));
        expect(Object.keys(routes).sort()).toEqual(pairs.sort());
        for (const from of nodeIds) {
          for (const to of nodeIds) {
            if (from === to) continue;
            const route = routes[routeKey(from, to)]!;
            expect(route.length, routeKey(from, to)).toBeGreaterThan(0);
            let at = from;
            for (const index of route) {
              const link = machine.links[index];
              expect(link, `${routeKey(from, to)} uses link ${index}`).toBeDefined();
              expect(link!.from).toBe(at);
              at = link!.to;
            }
            expect(at).toBe(to);
          }
        }
      });

      it('says where each number came from', () => {
        for (const key of REQUIRED_PROVENANCE) expect(machine.provenance[key], key).toMatch(PROVENANCE_KINDS);
        for (const value of Object.values(machine.provenance)) expect(value).toMatch(PROVENANCE_KINDS);
        const allNull = (pick: (node: TraceMachine['nodes'][number]) => unknown) => machine.nodes.every((x) => pick(x) === null);
        const unavailable = (key: string) => machine.provenance[key]!.startsWith('unavailable:');
        expect(unavailable('latenciesNs')).toBe(machine.latenciesNs === null);
        expect(unavailable('memoryBytes')).toBe(allNull((x) => x.memoryBytes));
        expect(unavailable('memoryBandwidthGBps')).toBe(allNull((x) => x.memoryBandwidthGBps));
      });

      it('travels in a trace manifest unchanged', () => {
        const manifest = { ...minimalManifest(), machine };
        expect(readTrace(writeTrace(manifest, emptyColumns())).manifest.machine).toEqual(machine);
      });
    });
  }
});

describe('preset contents that the simulator relies on', () => {
  it('amd-opteron-8385-4p: two-hop pairs are the SLIT-22 pairs and are slower', () => {
    const m = getPreset('amd-opteron-8385-4p');
    for (let i = 0; i < 4; i++) {
      const latencyByHops: number[][] = [[], [], []];
      for (let j = 0; j < 4; j++) {
        const hops = i === j ? 0 : m.routes![routeKey(i, j)]!.length;
        if (i !== j) expect(hops).toBe(m.distances[i]![j] === 22 ? 2 : 1);
        latencyByHops[hops]!.push(m.latenciesNs![i]![j]!);
      }
      expect(latencyByHops.map((l) => l.length)).toEqual([1, 2, 1]);
      expect(Math.max(...latencyByHops[0]!)).toBeLessThan(Math.min(...latencyByHops[1]!));
      expect(Math.max(...latencyByHops[1]!)).toBeLessThan(Math.min(...latencyByHops[2]!));
    }
  });

  it('amd-asymsched-machine-a: one link per ordered pair, asymmetric where the measurements are', () => {
    const m = getPreset('amd-asymsched-machine-a');
    expect(m.links).toHaveLength(8 * 7);
    const capacity = (from: number, to: number) => m.links.find((l) => l.from === from && l.to === to)!.capacityGBps!;
    let asymmetricPairs = 0;
    for (let i = 0; i < 8; i++) for (let j = i + 1; j < 8; j++) if (capacity(i, j) !== capacity(j, i)) asymmetricPairs++;
    // hzqmwne/asymsched_demo's fake.py has 16 asymmetric pairs, e.g. 1→2 = 3800 MB/s but 2→1 = 1900 MB/s.
    expect(asymmetricPairs).toBe(16);
    expect(capacity(1, 2)).toBeCloseTo(2 * capacity(2, 1));
    // Same-package die pairs are the fastest.
    const fastest = Math.max(...m.links.map((l) => l.capacityGBps!));
    for (const [a, b] of [[0, 1], [2, 3], [4, 5], [6, 7]] as const) expect(capacity(a, b)).toBe(fastest);
  });

  it('amd-genoa-2s-nps4: crossing sockets takes an xGMI link, staying inside does not', () => {
    const m = getPreset('amd-genoa-2s-nps4');
    const crossesSockets = (l: MachineLink) => Math.floor(l.from / 4) !== Math.floor(l.to / 4);
    for (let i = 0; i < 8; i++) {
      for (let j = 0; j < 8; j++) {
        if (i === j) continue;
        const crossings = m.routes![routeKey(i, j)]!.filter((index) => crossesSockets(m.links[index]!)).length;
        expect(crossings).toBe(Math.floor(i / 4) === Math.floor(j / 4) ? 0 : 1);
      }
    }
  });
});

describe('getPreset', () => {
  it('names the valid ids when the id is unknown', () => {
    expect(() => getPreset('amd-opteron-8385')).toThrow(/unknown machine preset "amd-opteron-8385".*amd-opteron-8385-4p/);
  });

  it('returns a fresh copy each time', () => {
    const a = getPreset('intel-spr-2s');
    a.nodes[0]!.cpus.push(999);
    a.distances[0]![1] = 99;
    expect(getPreset('intel-spr-2s').nodes[0]!.cpus).not.toContain(999);
    expect(getPreset('intel-spr-2s').distances[0]![1]).toBe(21);
  });
});

describe('shortestPathRoutes', () => {
  const line: MachineLink[] = [
    { from: 0, to: 1, capacityGBps: 1 },
    { from: 1, to: 0, capacityGBps: 1 },
    { from: 1, to: 2, capacityGBps: 1 },
    { from: 2, to: 1, capacityGBps: 1 },
  ];

  it('chains links along the fewest hops', () => {
    const routes = shortestPathRoutes([0, 1, 2], line);
    expect(routes['0->2']).toEqual([0, 2]);
    expect(routes['2->0']).toEqual([3, 1]);
    expect(routes['1->0']).toEqual([1]);
  });

  it('throws when a node cannot be reached', () => {
    expect(() => shortestPathRoutes([0, 1, 2], line.slice(0, 2))).toThrow(/no route from node 0 to node 2/);
  });
});

describe('presets completed from the published figures (the papers\' own numbers, cited by name)', () => {
  const presetOf = (id: string) => listPresets().find((p) => p.id === id)!;
  const figure = (id: string, quantity: string, kind: FigureKind, unit = 'GB/s') =>
    presetOf(id).figures.find((f) => f.quantity === quantity && f.kind === kind && f.unit === unit);

  it('every figure has a kind, a positive value and a provenance', () => {
    for (const preset of listPresets()) {
      for (const f of preset.figures) {
        expect(['theoretical', 'sustained', 'measured'], `${preset.id} ${f.quantity}`).toContain(f.kind);
        expect(f.value, `${preset.id} ${f.quantity}`).toBeGreaterThan(0);
        expect(f.provenance, `${preset.id} ${f.quantity}`).toMatch(PROVENANCE_KINDS);
      }
    }
    // The machines the papers used all carry figures.
    for (const id of ['amd-opteron-8385-4p', 'amd-asymsched-machine-a', 'amd-opteron-6172-4p', 'intel-xeon-x7560-4s']) {
      expect(presetOf(id).figures.length, id).toBeGreaterThan(0);
    }
  });

  it('amd-opteron-8385-4p (Carrefour testbed, Gaud et al. CACM 2015): 64 GB, 16 GB per node, 2.3 GHz', () => {
    const m = getPreset('amd-opteron-8385-4p');
    expect(m.nodes.map((node) => node.memoryBytes)).toEqual(Array(4).fill(16 * 1024 ** 3));
    expect(m.provenance.memoryBytes).toMatch(/^documented:Gaud et al\., "Challenges of Memory Management on Modern NUMA Systems", CACM 2015: 64 GB RAM, 16 GB per node/);
    expect(figure('amd-opteron-8385-4p', 'cpu clock', 'measured', 'GHz')!.provenance).toMatch(/^documented:the Carrefour testbed in Gaud et al\., .*CACM 2015$/);
    expect(figure('amd-opteron-8385-4p', 'cpu clock', 'measured', 'GHz')!.value).toBe(2.3);
    expect(figure('amd-opteron-8385-4p', 'memory bandwidth per node', 'theoretical')!.provenance).toMatch(/^estimated:/);
    const model = machineModel(m);
    expect([...model.memoryBytes.value].reduce((a, b) => a + b, 0)).toBe(64 * 1024 ** 3);
    expect(model.memoryBytes.source).toBe(m.provenance.memoryBytes);
  });

  it('amd-asymsched-machine-a (Lepers et al. ATC 2015): two hops cost 80 cycles at 2.1 GHz (38.1 ns) more than one hop, idle', () => {
    const m = getPreset('amd-asymsched-machine-a');
    const extraNs = 80 / 2.1;
    for (let i = 0; i < 8; i++) {
      for (let j = 0; j < 8; j++) {
        const ns = m.latenciesNs![i]![j]!;
        if (i === j) expect(ns).toBe(98);
        else if (m.distances[i]![j] === 16) expect(ns).toBe(145);
        else expect(ns - 145).toBeCloseTo(extraNs, 1);
      }
    }
    expect(m.provenance.latenciesNs).toMatch(/^estimated:two hops = one hop \+ 38\.1 ns, measured \(80 cycles at 2\.1 GHz/);
    expect(figure('amd-asymsched-machine-a', 'idle latency, two hops minus one hop', 'measured', 'cycles')!.value).toBe(80);
    expect(figure('amd-asymsched-machine-a', 'idle latency, two hops minus one hop', 'measured', 'cycles')!.provenance).toMatch(
      /^measured:Lepers, Quéma, Fedorova, "Thread and Memory Placement on NUMA Systems: Asymmetry Matters", USENIX ATC 2015: .*80 cycles/,
    );
    expect(figure('amd-asymsched-machine-a', 'idle latency, two hops minus one hop', 'measured', 'ns')!.value).toBe(38.1);
    expect(figure('amd-asymsched-machine-a', 'pair bandwidth over a 16-bit link', 'measured')!.value).toBe(5.6);
    // The links are the measured pair bandwidths: the widest is 5.6 GB/s.
    expect(Math.max(...m.links.map((l) => l.capacityGBps!))).toBe(5.6);
    expect(m.provenance.links).toMatch(/measured \(sustained, not theoretical\)/);
    // No memory size is published for Machine A.
    expect(m.nodes.every((node) => node.memoryBytes === null)).toBe(true);
    expect(m.provenance.memoryBytes).toMatch(/^unavailable:/);
    const model = machineModel(m);
    expect(model.idleLatencyNs.source).toBe(m.provenance.latenciesNs);
    expect(model.idleLatencyNs.value[0]).toBe(98);
  });

  it('amd-opteron-6172-4p (NUMA-STREAM AMD, Bergstrom 2011): peak 21.3 GB/s per node, sustained about a third', () => {
    const m = getPreset('amd-opteron-6172-4p');
    expect(m.nodes.every((node) => node.memoryBandwidthGBps === 21.3)).toBe(true);
    expect(m.provenance.memoryBandwidthGBps).toMatch(/^documented:theoretical peak/);
    expect(figure('amd-opteron-6172-4p', 'memory bandwidth per node', 'theoretical')!.value).toBe(21.3);
    expect(figure('amd-opteron-6172-4p', 'link bandwidth, same package', 'theoretical')!.value).toBe(19.2);
    expect(figure('amd-opteron-6172-4p', 'link bandwidth, other package', 'theoretical')!.value).toBe(6.4);
    expect(figure('amd-opteron-6172-4p', 'memory bandwidth, whole machine (NUMA-aware STREAM, all cores)', 'sustained')!.provenance).toMatch(
      /^measured:Bergstrom, "Measuring NUMA effects with the STREAM benchmark", 2011, University of Chicago TR-2012-04: near 55,000 MB\/s$/,
    );
    const sustained = figure('amd-opteron-6172-4p', 'memory bandwidth per node', 'sustained')!;
    expect(sustained.value).toBeCloseTo(6.875, 3);
    expect(sustained.provenance).toMatch(/^estimated:55,000 MB\/s measured .* ÷ 8 nodes/);
    expect(sustained.value / 21.3).toBeCloseTo(1 / 3, 1);
  });

  it('intel-xeon-x7560-4s (NUMA-STREAM Intel, Bergstrom 2011): peak 17.1 GB/s per node, sustained 10', () => {
    const m = getPreset('intel-xeon-x7560-4s');
    expect(m.nodes.every((node) => node.memoryBandwidthGBps === 17.1)).toBe(true);
    expect(figure('intel-xeon-x7560-4s', 'memory bandwidth per node', 'theoretical')!.value).toBe(17.1);
    expect(figure('intel-xeon-x7560-4s', 'link bandwidth per direction', 'theoretical')!.value).toBe(12.8);
    expect(figure('intel-xeon-x7560-4s', 'memory bandwidth, whole machine (NUMA-aware STREAM, all cores)', 'sustained')!.value).toBe(40);
    expect(figure('intel-xeon-x7560-4s', 'memory bandwidth per node', 'sustained')!.value).toBe(10);
  });

  it('machineModel accepts every preset and keeps its provenance', () => {
    for (const { id, machine } of listPresets()) {
      const model = machineModel(machine);
      expect(model.nodeCount, id).toBe(machine.nodes.length);
      expect(model.memoryBytes.source, id).toBe(machine.provenance.memoryBytes);
      expect(model.mcBandwidthBytesPerS.source, id).toBe(machine.provenance.memoryBandwidthGBps);
      if (machine.latenciesNs) expect(model.idleLatencyNs.source, id).toBe(machine.provenance.latenciesNs);
    }
  });

  it('with the testbed\'s memory size, Carrefour\'s replication can apply on amd-opteron-8385-4p', () => {
    // 600 read-only pages shared by 4 nodes: 2.4 MB of 64 GiB, far below the 25 % memory-use limit.
    const input = replayInputFromTable({
      preset: 'amd-opteron-8385-4p',
      threads: 16,
      pages: 600,
      threadNodes: '0-3:0 4-7:1 8-11:2 12-15:3',
      pageNodes: '0-599:0',
      windowUs: 10_000,
      ipc: 0.15, // a memory-bound program's IPC (§1): enough IBS samples per page for the module
      table: `
        window | threads | pages | loads | stores
        0-2    | 0-15    | 0-599 | 200   | 0`,
    });
    const replay = carrefourPolicy.replay(input, { seed: 1, simulate: simulateWindow });
    const replicate = replay.decisions.filter((d) => d.kind === 'replicate');
    expect(replicate.length).toBeGreaterThan(0);
    expect(replicate[0]!.explanation).toMatch(/memory usage 0\.0% ≤ 25%/);
    expect(replay.finalPlacement.replicated.every((x) => x === 1)).toBe(true);
  });
});
