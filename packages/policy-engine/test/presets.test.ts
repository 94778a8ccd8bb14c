import { describe, expect, it } from 'vitest';
import { PRESET_IDS, getPreset, listPresets, routeKey, shortestPathRoutes } from '../src/machine/presets.js';
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
  it('includes the machines the seed articles and the simulator need', () => {
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
    // reference §2.3 lists 16 asymmetric pairs, e.g. 1→2 = 3800 MB/s but 2→1 = 1900 MB/s.
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
