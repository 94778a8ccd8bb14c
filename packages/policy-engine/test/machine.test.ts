import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { machineFromHwlocXml, machineFromJson, parseHwlocCpuset } from '../src/machine/loaders.js';
import { machineModel } from '../src/machine/model.js';
import { getPreset, listPresets, PRESET_IDS } from '../src/machine/presets.js';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const SHARED = process.env['NUMASCOPE_SHARED'] ?? resolve(REPO_ROOT, '../shared');
const HWLOC_DIR = resolve(SHARED, 'data/hwloc');

function hwloc(file: string): { xml: string; machine: ReturnType<typeof machineFromHwlocXml> } {
  const path = resolve(HWLOC_DIR, file);
  if (!existsSync(path)) {
    throw new Error(`hwloc fixture ${path} is missing: set NUMASCOPE_SHARED to the shared folder (with data/hwloc/) or put it next to the repository as ../shared`);
  }
  const xml = readFileSync(path, 'utf8');
  return { xml, machine: machineFromHwlocXml(xml, file) };
}

const distinct = (m: number[][]) => [...new Set(m.flat())].sort((a, b) => a - b);
const puCount = (xml: string) => (xml.match(/<object type="PU"/g) ?? []).length;

describe('hwloc XML loader on real lstopo files', () => {
  it('64amd64 (4P Opteron 6272): 8 nodes × 8 cpus, SLIT 10/16/22', () => {
    const { xml, machine } = hwloc('hwloc_64amd64-4p2n4ca2co.xml');
    expect(machine.nodes.map((n) => n.id)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(machine.nodes.map((n) => n.cpus.length)).toEqual(Array(8).fill(8));
    expect(machine.nodes[1]!.cpus).toEqual([8, 9, 10, 11, 12, 13, 14, 15]);
    expect(machine.nodes.reduce((s, n) => s + n.cpus.length, 0)).toBe(puCount(xml));
    expect(distinct(machine.distances)).toEqual([10, 16, 22]);
    expect(machine.distances[0]).toEqual([10, 16, 16, 22, 16, 22, 16, 22]);
    expect(machine.nodes[0]!.memoryBytes).toBe(16822734848);
  });

  it('192em64t: 24 nodes × 16 cpus, SLIT 10/50/65/79', () => {
    const { xml, machine } = hwloc('hwloc_192em64t-24n8c2t.xml');
    expect(machine.nodes.length).toBe(24);
    expect(machine.nodes.every((n) => n.cpus.length === 16)).toBe(true);
    expect(machine.nodes.reduce((s, n) => s + n.cpus.length, 0)).toBe(puCount(xml));
    expect(distinct(machine.distances)).toEqual([10, 50, 65, 79]);
    expect(machine.distances.every((row, i) => row[i] === 10)).toBe(true);
  });

  it('EPYC 7742 2S NPS4: 8 nodes × 32 cpus, SLIT 10/12/32', () => {
    const { machine } = hwloc('psmgmt_topo.jrc0323_amd-epyc7742-2s-nps4.xml');
    expect(machine.nodes.length).toBe(8);
    expect(machine.nodes.every((n) => n.cpus.length === 32)).toBe(true);
    expect(distinct(machine.distances)).toEqual([10, 12, 32]);
    expect(machine.distances[0]).toEqual([10, 12, 12, 12, 32, 32, 32, 32]);
  });

  it('memory-side caches: nodes listed out of order come back in id order', () => {
    const { machine } = hwloc('hwloc_memorysidecaches.xml');
    expect(machine.nodes.map((n) => n.id)).toEqual([0, 1, 2, 3]);
    expect(distinct(machine.distances)).toEqual([10, 11, 21]);
  });

  it('reads hwloc XML as XML (issue 32): nesting, entities, attribute order; refuses entity declarations and malformed files', () => {
    // A NUMANode whose MemoryTier info comes after a child element, attributes in another order
    // than lstopo's, single quotes, an entity in the cpu model: what a regular expression reading
    // of the file got wrong (the first "</object>" was a nested child's).
    const xml = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x00000003">
    <info name="CPUModel" value="Vendor &amp; Co CPU &lt;test&gt;"/>
    <object type="Package" os_index="0" cpuset="0x00000003">
      <object cpuset='0x00000001' local_memory="1073741824" os_index="0" type="NUMANode" gp_index="3">
        <object type="MemCache" os_index="0"></object>
        <info name="MemoryTier" value="1"/>
      </object>
      <object type="NUMANode" os_index="1" cpuset="0x00000002" local_memory="2147483648" gp_index="4"><info name="MemoryTier" value="0"/></object>
    </object>
  </object>
  <distances2 type="NUMANode" nbobjs="2" kind="5" name="NUMALatency" indexing="os">
    <indexes length="4">0 1</indexes>
    <u64values length="8">10 21
      21 10</u64values>
  </distances2>
</topology>`;
    const m = machineFromHwlocXml(xml, 'nested.xml');
    expect(m.cpuModel).toBe('Vendor & Co CPU <test>');
    expect(m.nodes.map((n) => [n.id, n.cpus, n.memoryBytes, n.memoryTier])).toEqual([
      [0, [0], 1073741824, 1],
      [1, [1], 2147483648, 0],
    ]);
    expect(m.distances).toEqual([
      [10, 21],
      [21, 10],
    ]);
    expect(() => machineFromHwlocXml(xml.replace('<!DOCTYPE topology SYSTEM "hwloc2.dtd">', '<!DOCTYPE topology [<!ENTITY a "aaaa">]>'), 'bomb.xml')).toThrow(/declares XML entities/);
    expect(() => machineFromHwlocXml(xml.replace('</distances2>', ''), 'cut.xml')).toThrow(/cut\.xml is not well-formed XML/);
    expect(() => machineFromHwlocXml('<?xml version="1.0"?><lstopo/>', 'other.xml')).toThrow(/no <topology> element/);
  });

  it('models an hwloc machine with estimated bandwidth, latency and links, saying so', () => {
    const model = machineModel(hwloc('psmgmt_topo.jrc0323_amd-epyc7742-2s-nps4.xml').machine);
    expect(model.mcBandwidthBytesPerS.source).toMatch(/^estimated:M1 /);
    expect(model.idleLatencyNs.source).toMatch(/^estimated:L1 idle latency = 100 ns local × SLIT distance \/ 10/);
    expect(model.idleLatencyNs.value[0 * 8 + 4]).toBeCloseTo(320, 9);
    expect(model.linkSource).toMatch(/^estimated:K2 /);
    expect(model.links.length).toBe(8 * 7);
    expect(model.routes[1]).toEqual([model.links.findIndex((l) => l.from === 1 && l.to === 0)]);
  });

  it('names what is wrong with a file that is not hwloc', () => {
    expect(() => machineFromHwlocXml('<html></html>', 'x.xml')).toThrow(/x\.xml is not an hwloc topology/);
    expect(parseHwlocCpuset('0x00000001,0x80000000')).toEqual([31, 32]);
  });
});

describe('machine model from presets and JSON', () => {
  it('has the Sapphire Rapids SNC4 and CXL expander presets', () => {
    expect(PRESET_IDS).toContain('intel-spr-2s-snc4');
    expect(PRESET_IDS).toContain('cxl-expander');
    const cxl = getPreset('cxl-expander');
    expect(cxl.nodes[2]!.cpus).toEqual([]);
    expect(machineModel(cxl).nodeCpus[2]).toEqual([]);
  });

  it('builds a model for every preset, with data routes m → c that are paths', () => {
    for (const { machine } of listPresets()) {
      const model = machineModel(machine);
      const n = model.nodeCount;
      for (let c = 0; c < n; c++) {
        for (let m = 0; m < n; m++) {
          const route = model.routes[c * n + m]!;
          if (c === m) expect(route).toEqual([]);
          else {
            expect(model.links[route[0]!]!.from).toBe(m);
            expect(model.links[route[route.length - 1]!]!.to).toBe(c);
          }
        }
      }
      expect(model.mcBandwidthBytesPerS.source).toMatch(/^(measured|documented|estimated|unavailable):/);
    }
  });

  it('SNC4 shares one UPI link between the sockets', () => {
    const model = machineModel(getPreset('intel-spr-2s-snc4'));
    const upi = model.links.findIndex((l) => l.from === 4 && l.to === 0);
    for (const c of [0, 1, 2, 3]) for (const m of [4, 5, 6, 7]) expect(model.routes[c * 8 + m]).toContain(upi);
  });

  it('loads JSON and fills what is missing by documented rules', () => {
    const m = machineFromJson(
      JSON.stringify({ name: 'two', nodes: [{ id: 0, cpus: [0, 1] }, { id: 1, cpus: [2, 3], memoryBandwidthGBps: 40 }], distances: [[10, 21], [21, 10]] }),
      'two.json',
    );
    const model = machineModel(m);
    expect(model.mcBandwidthBytesPerS.value[0]).toBe(40e9);
    expect(model.mcBandwidthBytesPerS.source).toMatch(/^estimated:M1b .*median/);
    expect(model.idleLatencyNs.value[1]).toBeCloseTo(210, 9);
    expect(model.links.map((l) => l.capacityBytesPerS)).toEqual([20e9, 20e9]);
    expect(() => machineFromJson('{"nodes":[{"id":0,"cpus":[0]}],"distances":[[10,20]]}', 'bad.json')).toThrow(/bad\.json: distances must be 1×1/);
    expect(() => machineFromJson('nope', 'x.json')).toThrow(/x\.json is not valid JSON/);
  });
});
