/**
 * Machine loaders for memory tiers and memory-only nodes: a sysfs copy (nodes, HMAT access0
 * figures, memory_tiering) and hwloc memory attributes. The fixtures are written here in the
 * formats the kernel and hwloc document, with the figures of a DRAM + CXL and a DDR + HBM machine.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../cli/main.js';
import { machineFromHwlocXml, machineFromSysfs, MachineLoadError, parseCpuList } from '../src/machine/loaders.js';
import { machineModel, machineTiers } from '../src/machine/model.js';
import { LQ_CONTENTION_SHARE, trafficModel } from '../src/machine/traffic.js';
import { recommendWeights } from '../src/policies/weighted-interleave.js';
import { streamLikeCxl, dramCxlRatio } from '../fidelity/fidelity.js';

/** /sys of a one-socket DRAM + CXL guest: node 1 has memory and no cpus, HMAT gives 208 / 24 GB/s. */
const SYSFS: Record<string, string> = {
  'devices/system/node/node0/cpulist': '0-3\n',
  'devices/system/node/node0/meminfo': 'Node 0 MemTotal:        8388608 kB\nNode 0 MemFree:         1000 kB\n',
  'devices/system/node/node0/distance': '10 14\n',
  'devices/system/node/node0/access0/initiators/read_bandwidth': '208000\n',
  'devices/system/node/node0/access0/initiators/write_bandwidth': '208000\n',
  'devices/system/node/node0/access0/initiators/read_latency': '110\n',
  'devices/system/node/node1/cpulist': '\n',
  'devices/system/node/node1/meminfo': 'Node 1 MemTotal:        4194304 kB\n',
  'devices/system/node/node1/distance': '14 10\n',
  'devices/system/node/node1/access0/initiators/read_bandwidth': '24000\n',
  'devices/system/node/node1/access0/initiators/read_latency': '190\n',
  'devices/virtual/memory_tiering/memory_tier4/nodelist': '0\n',
  'devices/virtual/memory_tiering/memory_tier22/nodelist': '1\n',
};

describe('machineFromSysfs', () => {
  it('reads memory-only nodes, HMAT bandwidth and latency, and the memory tiers', () => {
    const m = machineFromSysfs(SYSFS, 'guest');
    expect(m.nodes.map((n) => [n.id, n.cpus, n.memoryBytes, n.memoryBandwidthGBps, n.memoryTier])).toEqual([
      [0, [0, 1, 2, 3], 8 * 1024 ** 3, 208, 0],
      [1, [], 4 * 1024 ** 3, 24, 1],
    ]);
    expect(m.distances).toEqual([[10, 14], [14, 10]]);
    // From the socket: the HMAT figure; the CXL row (never used) scaled by the SLIT.
    expect(m.latenciesNs![0]).toEqual([110, 190]);
    expect(m.provenance['memoryBandwidthGBps']).toMatch(/^documented:firmware HMAT/);
    expect(m.provenance['memoryTier']).toMatch(/^measured:devices\/virtual\/memory_tiering/);
    const model = machineModel(m);
    expect(Array.from(machineTiers(model))).toEqual([0, 1]);
    // The memory-only node's controller is timed from its nearest node with cpus.
    // the memory-only node's curve scales with its idle latency from the cpus' node (190 ns)
    expect(trafficModel(model).mcContentionNs[1]).toBeCloseTo(LQ_CONTENTION_SHARE * 190, 9);
  });

  it('accepts /sys-prefixed paths, and says what is missing', () => {
    const prefixed = Object.fromEntries(Object.entries(SYSFS).map(([k, v]) => [`/sys/${k}`, v]));
    expect(machineFromSysfs(prefixed).nodes.length).toBe(2);
    const noHmat = Object.fromEntries(Object.entries(SYSFS).filter(([k]) => !k.includes('access0')));
    const m = machineFromSysfs(noHmat, 'old-firmware');
    expect(m.nodes.every((n) => n.memoryBandwidthGBps === null)).toBe(true);
    expect(m.provenance['memoryBandwidthGBps']).toMatch(/^unavailable:no HMAT access0 figures/);
    expect(m.latenciesNs).toBeNull();
    expect(() => machineFromSysfs({}, 'empty')).toThrow(MachineLoadError);
    expect(() => machineFromSysfs({ ...SYSFS, 'devices/system/node/node0/cpulist': '0-x' })).toThrow(/"0-x" is not a number or a range/);
    expect(parseCpuList('0-2,5,7-8', 'x')).toEqual([0, 1, 2, 5, 7, 8]);
  });

  it('gives the figures the recorder writes for the same /sys (native topology test: tiers_and_hmat_reach_the_manifest_machine)', () => {
    // a tiers guest laid out as the testbed's: node 2 memory-only, HMAT 20480/20480/5120 MB/s, 80/80/250 ns, tiers 4 and 22
    const files: Record<string, string> = {
      'devices/virtual/memory_tiering/memory_tier4/nodelist': '0-1\n',
      'devices/virtual/memory_tiering/memory_tier22/nodelist': '2\n',
    };
    const rows = ['10 20 28', '20 10 28', '28 28 10'];
    const fig = [[20480, 80], [20480, 80], [5120, 250]] as const;
    ['0', '1', ''].forEach((cpus, i) => {
      const d = `devices/system/node/node${i}/`;
      files[d + 'cpulist'] = cpus + '\n';
      files[d + 'distance'] = rows[i] + '\n';
      files[d + 'meminfo'] = `Node ${i} MemTotal:       262144 kB\n`;
      files[d + 'access0/initiators/read_bandwidth'] = `${fig[i]![0]}\n`;
      files[d + 'access0/initiators/read_latency'] = `${fig[i]![1]}\n`;
    });
    const m = machineFromSysfs(files, 'tiers');
    // the same numbers the Rust test asserts for the recorded manifest's machine
    expect(m.nodes.map((n) => n.memoryBandwidthGBps)).toEqual([20.48, 20.48, 5.12]);
    expect(m.nodes.map((n) => n.memoryTier)).toEqual([0, 0, 1]);
    expect(m.latenciesNs).toEqual([
      [80, 160, 250],
      [160, 80, 250],
      [224, 224, (250 * 10) / 28],
    ]);
    expect(m.provenance['memoryBandwidthGBps']).toMatch(/^documented:firmware HMAT/);
  });

  it('recommends weights from the HMAT figures: the STREAM-like recording re-targeted onto the guest', () => {
    const guest = machineModel(machineFromSysfs(SYSFS, 'guest'));
    const { input } = streamLikeCxl();
    // Same node ids; the guest's own bandwidths (both through rule S1, so their ratio is HMAT's 208:24).
    const r = recommendWeights({ ...input, machine: guest });
    expect(r.fast).toEqual([0]);
    expect(r.slow).toEqual([1]);
    const ratio = dramCxlRatio(r);
    expect(ratio).toBeGreaterThanOrEqual(6);
    expect(ratio).toBeLessThanOrEqual(14);
    expect(r.bandwidthRatio.weights.weights).toEqual([9, 1]);
  });

  it('the CLI takes a sysfs directory as --machine', async () => {
    const root = mkdtempSync(join(tmpdir(), 'numascope-sysfs-'));
    for (const [k, v] of Object.entries(SYSFS)) {
      mkdirSync(dirname(join(root, k)), { recursive: true });
      writeFileSync(join(root, k), v);
    }
    const trace = join(root, 'stream.numascope');
    const { mirrorTrace } = await import('../fidelity/mirror.js');
    writeFileSync(
      trace,
      mirrorTrace({
        id: 's', description: 's', preset: 'dram-cxl-1s', threadNodes: Array(56).fill(0),
        regions: [{ name: 'a', pageNodes: Array(56 * 4).fill(0) }], targets: [{ region: 0, share: 1, loadShare: 2 / 3, sliced: true }],
        accessesPerThreadPerS: 40e6, durationUs: 100_000, samples: 2000, seed: 9, // 56 × 40 M × 64 B = 143 GB/s: near the DRAM node's 168 GB/s (HMAT 208 × rule S1), so CXL pays
      }),
    );
    let out = '';
    const status = await main(['analyze', trace, '--machine', root, '--policy', 'weighted-interleave', '--json'], (s) => (out += s), (s) => (out += s));
    expect(status, out).toBe(0);
    const json = JSON.parse(out);
    expect(json.machine.source).toBe(`sysfs:${root.split('/').pop()}`);
    expect(json.policies[0].weights.nodes).toEqual([0, 1]);
  });
});

/** hwloc XML of one tile with DDR (cpus) and HBM sharing its cpuset, with memory attributes and tiers. */
const HWLOC = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x0000000f" complete_cpuset="0x0000000f" nodeset="0x00000003" gp_index="1">
    <info name="CPUModel" value="Test CPU Max"/>
    <object type="Package" os_index="0" cpuset="0x0000000f" nodeset="0x00000003" gp_index="5">
      <object type="NUMANode" os_index="0" cpuset="0x0000000f" nodeset="0x00000001" gp_index="2" subtype="DRAM" local_memory="34359738368">
        <info name="MemoryTier" value="1"/>
      </object>
      <object type="NUMANode" os_index="1" cpuset="0x0000000f" nodeset="0x00000002" gp_index="3" subtype="HBM" local_memory="17179869184">
        <info name="MemoryTier" value="0"/>
      </object>
      <object type="Core" os_index="0" cpuset="0x0000000f" gp_index="6">
        <object type="PU" os_index="0" cpuset="0x00000001" gp_index="7"/>
        <object type="PU" os_index="1" cpuset="0x00000002" gp_index="8"/>
        <object type="PU" os_index="2" cpuset="0x00000004" gp_index="9"/>
        <object type="PU" os_index="3" cpuset="0x00000008" gp_index="10"/>
      </object>
    </object>
  </object>
  <distances2 type="NUMANode" nbobjs="2" kind="5" name="NUMALatency" indexing="os">
    <indexes length="3">0 1 </indexes>
    <u64values length="12">10 13 13 10 </u64values>
  </distances2>
  <memattr name="Bandwidth" flags="5">
    <memattr_value target_obj_type="NUMANode" target_obj_gp_index="2" value="76800" initiator_cpuset="0x0000000f"/>
    <memattr_value target_obj_type="NUMANode" target_obj_gp_index="3" value="409600" initiator_cpuset="0x0000000f"/>
  </memattr>
  <memattr name="Latency" flags="6">
    <memattr_value target_obj_type="NUMANode" target_obj_gp_index="2" value="110" initiator_cpuset="0x0000000f"/>
    <memattr_value target_obj_type="NUMANode" target_obj_gp_index="3" value="143" initiator_cpuset="0x0000000f"/>
  </memattr>
</topology>
`;

describe('machineFromHwlocXml: memory attributes', () => {
  it('gives the cpus to the DRAM node, makes the HBM node memory-only, reads bandwidth, latency, kind and tier', () => {
    const m = machineFromHwlocXml(HWLOC, 'tile.xml');
    expect(m.nodes.map((n) => [n.id, n.cpus, n.memoryBandwidthGBps, n.memoryKind, n.memoryTier])).toEqual([
      [0, [0, 1, 2, 3], 76.8, 'dram', 1],
      [1, [], 409.6, 'hbm', 0],
    ]);
    // Row 0 from the HMAT figures; row 1 (no cpus, never used) by the SLIT ratio.
    expect(m.latenciesNs).toEqual([[110, 143], [143, 110]]);
    expect(m.provenance['memoryBandwidthGBps']).toMatch(/^documented:hwloc memory attribute Bandwidth/);
    expect(m.provenance['memoryTier']).toMatch(/MemoryTier/);
    const model = machineModel(m);
    expect(model.nodeCpus[1]).toEqual([]);
    // hwloc ranks HBM tier 0: the weights' fast side is still the DRAM with the cpus.
    expect(Array.from(machineTiers(model))).toEqual([1, 0]);
  });
});
