/**
 * Machine presets: the machines of the published measurements (Carrefour, AsymSched, NUMA-STREAM)
 * and modern ones, as `TraceMachine` values a trace manifest can carry. Every number comes from a
 * published source (the papers and vendor documents docs/policies.md lists) or an estimate that
 * says so: `provenance` says, per field, whether it is `documented:<source>`, `measured:<source>`
 * or `estimated:<rule>` (or `unavailable:<why>`). A source is named as its authors published it
 * (paper with authors, venue and year; vendor document with its number; article by title; public
 * repository or issue), never by a file outside this repository.
 * Where one field mixes documented and estimated numbers it is marked `estimated` and the rule
 * says which part is documented.
 *
 * Conventions: bandwidths are GB/s (1e9 bytes/s) per direction, peak unless said otherwise;
 * latencies are idle load-to-use in ns; one cpu per core (SMT siblings are not modelled); cpus
 * are numbered node by node (node n has cpus n·k … n·k+k−1), an assumption stated in
 * `provenance.cpus` because the real machines' numbering is not documented.
 */
import type { GBps, MachineLink, NodeId, Provenance, TraceMachine } from '../trace/types.js';

/**
 * What kind of number a published figure is: `theoretical` = a peak computed from the parts'
 * specifications (channels × transfer rate × 8 B, link rate × width); `sustained` = the rate a
 * benchmark (STREAM) actually reached; `measured` = another measurement (an idle latency, a clock,
 * a memory size, a pair's end-to-end bandwidth). Independent of the provenance prefix, which says
 * how sure the number is (`documented:`, `measured:`, `estimated:<rule>`).
 */
export type FigureKind = 'theoretical' | 'sustained' | 'measured';

/** A published number about a preset's machine, beyond (or behind) its `TraceMachine` fields. */
export interface PresetFigure {
  /** What the number is of, e.g. `memory bandwidth per node`. */
  quantity: string;
  kind: FigureKind;
  value: number;
  unit: 'GB/s' | 'ns' | 'cycles' | 'GHz' | 'bytes';
  provenance: Provenance;
}

export interface MachinePreset {
  /** Stable id, also the machine's `name`. */
  id: string;
  /** One sentence: what machine this is and what it is for. */
  description: string;
  machine: TraceMachine;
  /**
   * Figures the papers (docs/fidelity.md lists them) give for this machine (the
   * machine's memory-bandwidth and link fields stay theoretical peaks; sustained rates are here);
   * empty for a preset no paper measured.
   */
  figures: PresetFigure[];
  /**
   * Cache coherence traffic on the links, when documented: `broadcast` = every DRAM access sends a
   * probe to every node with caches and each answers the requester (no probe filter); absent =
   * a directory or probe filter (machine/traffic.ts, rule CO1).
   */
  coherence?: { value: 'broadcast' | 'filtered'; provenance: Provenance };
  /**
   * The most L1 data-cache misses one core can have outstanding (miss address buffers / line fill
   * buffers), when known for the machine's core: the ceiling of a core's memory-level parallelism
   * (machine/traffic.ts, rule MLP0). Absent: rule MLP0's default.
   */
  outstandingMissesPerCore?: { value: number; provenance: Provenance };
  /**
   * Set when a published source says the node's northbridge / crossbar, not its DRAM, is what
   * limits the memory bandwidth its own cores reach (machine/traffic.ts, rule XB0): the sustained
   * (STREAM) figure per node is then that crossbar's capacity, which every byte entering or
   * leaving the node passes (its controller's traffic, and link traffic arriving at it), and the
   * controllers take rule S1.
   */
  streamLimitedByCrossbar?: { provenance: Provenance };
  /**
   * The DRAM generation of the machine's memory nodes (as its `memoryBandwidthGBps` provenance
   * says): which sources rule S1 takes its sustained/theoretical share from (machine/traffic.ts,
   * `sustainedShare`). Absent: unknown, treated as a current server.
   */
  memoryGeneration?: MemoryGeneration;
}

/** DRAM generations the presets use. */
export type MemoryGeneration = 'DDR2' | 'DDR3' | 'DDR4' | 'DDR5';

/** AMD Family 10h (K10: Shanghai, Magny-Cours) cores: 8 L1 data-cache miss address buffers. */
/** Golden Cove (Sapphire Rapids) cores: 16 L1 data-cache fill buffers, up from 12 in Willow Cove. */
const GOLDEN_COVE_OUTSTANDING_MISSES = {
  value: 16,
  provenance:
    'documented:Intel 64 and IA-32 Architectures Optimization Reference Manual, Golden Cove microarchitecture (Sapphire Rapids cores): 16 L1 data-cache fill buffers, up from 12 in Willow Cove (also in the Alder Lake/Golden Cove architecture write-ups)',
} as const;

const K10_OUTSTANDING_MISSES = {
  value: 8,
  provenance:
    'estimated:AMD Family 10h (K10) cores track 8 outstanding L1 data-cache misses (miss address buffers); the figure usually quoted for K8/K10, not checked against a readable AMD document here',
} as const;

const GIB = 1024 ** 3;

// The published sources the presets cite. Their bodies are quoted where a figure is used.
const CARREFOUR_PAPER = 'Gaud et al., "Challenges of Memory Management on Modern NUMA Systems", CACM 2015';
const ASYMSCHED_PAPER = 'Lepers, Quéma, Fedorova, "Thread and Memory Placement on NUMA Systems: Asymmetry Matters", USENIX ATC 2015';
const NUMA_STREAM_PAPER = 'Bergstrom, "Measuring NUMA effects with the STREAM benchmark", 2011, University of Chicago TR-2012-04';
const WEIGHTED_INTERLEAVE_SERIES =
  'the Linux weighted-interleave patch series (MPOL_WEIGHTED_INTERLEAVE, merged for Linux 6.9; Gregory Price et al., v5 cover letter, 2024)';
const AMD_40555 = 'AMD pub. 40555, "Performance Guidelines for AMD Athlon 64 and AMD Opteron ccNUMA Multiprocessor Systems"';
const ANANDTECH_MAGNY_COURS = 'AnandTech, "AMD\'s 12-core Magny-Cours Opteron 6174 vs. Intel\'s 6-core Xeon", 2010';
const CHIPS_AND_CHEESE_MAGNY_COURS = 'Chips and Cheese, "AMD\'s Magny Cours and HyperTransport"';
const OPTERON_6272_SLIT_SOURCE = 'xapi-project/xen-api test fixture ocaml/xenopsd/test/test_topology.ml';
/** For the modern presets, which model a platform rather than one machine. */
const GENERIC_MEMORY_SIZE = 'unavailable:the preset models the platform, not one machine; memory size varies by system';

const PAGE_SIZE_BYTES = 4096;
const CPUS_NUMBERING = 'estimated:cpus numbered node by node, one per core (the real machine\'s numbering is not documented)';

// ---------------------------------------------------------------------------------------------
// Building blocks (pure)

function nodesOf(count: number, coresPerNode: number, memoryBandwidthGBps: GBps | null, memoryBytes: number | null = null): TraceMachine['nodes'] {
  return Array.from({ length: count }, (_, id) => ({
    id,
    cpus: Array.from({ length: coresPerNode }, (_, core) => id * coresPerNode + core),
    memoryBytes,
    memoryBandwidthGBps,
  }));
}

/** One link each way between `a` and `b`, same capacity both directions. */
function bothWays(a: NodeId, b: NodeId, capacityGBps: GBps): MachineLink[] {
  return [
    { from: a, to: b, capacityGBps },
    { from: b, to: a, capacityGBps },
  ];
}

export function routeKey(from: NodeId, to: NodeId): string {
  return `${from}->${to}`;
}

/**
 * Fewest-hops routes over directed links for every ordered pair of distinct nodes. Ties go to
 * the path through lower-numbered nodes (breadth-first search visiting neighbours by id), so
 * the result is deterministic. Throws if some node cannot reach another.
 */
export function shortestPathRoutes(nodeIds: readonly NodeId[], links: readonly MachineLink[]): Record<string, number[]> {
  const outgoing = new Map<NodeId, number[]>();
  links.forEach((link, index) => {
    const list = outgoing.get(link.from) ?? [];
    list.push(index);
    outgoing.set(link.from, list);
  });
  for (const list of outgoing.values()) list.sort((x, y) => links[x]!.to - links[y]!.to || x - y);

  const routes: Record<string, number[]> = {};
  for (const source of nodeIds) {
    const viaLink = new Map<NodeId, number>();
    const queue: NodeId[] = [source];
    const seen = new Set<NodeId>([source]);
    while (queue.length > 0) {
      const node = queue.shift()!;
      for (const index of outgoing.get(node) ?? []) {
        const next = links[index]!.to;
        if (seen.has(next)) continue;
        seen.add(next);
        viaLink.set(next, index);
        queue.push(next);
      }
    }
    for (const target of nodeIds) {
      if (target === source) continue;
      if (!seen.has(target)) throw new Error(`no route from node ${source} to node ${target}`);
      const path: number[] = [];
      for (let node = target; node !== source; node = links[path[0]!]!.from) path.unshift(viaLink.get(node)!);
      routes[routeKey(source, target)] = path;
    }
  }
  return routes;
}

/** Routes when every ordered pair has its own direct link. */
function directRoutes(nodeIds: readonly NodeId[], links: readonly MachineLink[]): Record<string, number[]> {
  const routes: Record<string, number[]> = {};
  for (const from of nodeIds) {
    for (const to of nodeIds) {
      if (from === to) continue;
      const index = links.findIndex((l) => l.from === from && l.to === to);
      if (index < 0) throw new Error(`no direct link from node ${from} to node ${to}`);
      routes[routeKey(from, to)] = [index];
    }
  }
  return routes;
}

/** An n×n matrix from a function of (row, column). */
function matrix(n: number, cell: (i: number, j: number) => number): number[][] {
  return Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => cell(i, j)));
}

/** Nodes grouped into sockets of `nodesPerSocket` consecutive ids. */
const sameSocket = (nodesPerSocket: number) => (i: number, j: number) =>
  Math.floor(i / nodesPerSocket) === Math.floor(j / nodesPerSocket);

// ---------------------------------------------------------------------------------------------
// amd-opteron-8385-4p: the Carrefour machine (Dashti et al., ASPLOS 2013; Gaud et al., CACM 2015)

function opteron8385(): MachinePreset {
  const id = 'amd-opteron-8385-4p';
  const nodeIds = [0, 1, 2, 3];
  const hyperTransport1GBps = 4.0; // 16-bit HT1 at 2 GT/s
  const links = [[0, 1], [0, 2], [1, 3], [2, 3]].flatMap(([a, b]) => bothWays(a!, b!, hyperTransport1GBps));
  const routes = shortestPathRoutes(nodeIds, links);
  const hops = (i: number, j: number) => (i === j ? 0 : routes[routeKey(i, j)]!.length);
  const slitByHops = [10, 16, 22];
  const latencyNsByHops = [100, 110, 130];
  const memoryPerNodeBytes = 16 * GIB;
  return {
    id,
    memoryGeneration: 'DDR2',
    description:
      'Carrefour (ASPLOS\'13) testbed as Gaud et al. (CACM 2015) describe it: 4 quad-core Opteron 8385 (Shanghai, 2.3 GHz) sockets, one node each, 64 GB, HyperTransport 1 square.',
    coherence: {
      value: 'broadcast',
      provenance:
        'estimated:Shanghai (2008) predates HT Assist, the probe filter AMD introduced with Istanbul (2009): every DRAM access broadcasts probes to all nodes, which answer the requester',
    },
    outstandingMissesPerCore: K10_OUTSTANDING_MISSES,
    figures: [
      { quantity: 'cpu clock', kind: 'measured', value: 2.3, unit: 'GHz', provenance: `documented:the Carrefour testbed in ${CARREFOUR_PAPER}` },
      { quantity: 'memory per node', kind: 'measured', value: memoryPerNodeBytes, unit: 'bytes', provenance: `documented:${CARREFOUR_PAPER}: 64 GB RAM, 16 GB per node (read as GiB: DIMM sizes are binary)` },
      { quantity: 'memory bandwidth per node', kind: 'theoretical', value: 12.8, unit: 'GB/s', provenance: 'estimated:2 DDR2-800 channels × 8 B (socket F\'s usual configuration, assumed; the testbed\'s DIMMs are not published)' },
      { quantity: 'link bandwidth per direction', kind: 'theoretical', value: hyperTransport1GBps, unit: 'GB/s', provenance: 'estimated:16-bit HyperTransport 1 at 2 GT/s, HT1\'s maximum rate (the testbed\'s link settings are not published)' },
    ],
    machine: {
      name: id,
      source: `preset:${id}`,
      kernel: null,
      cpuModel: 'AMD Opteron 8385 (Shanghai, 4 cores, 2.3 GHz)',
      pageSizeBytes: PAGE_SIZE_BYTES,
      nodes: nodesOf(4, 4, 12.8, memoryPerNodeBytes),
      distances: matrix(4, (i, j) => slitByHops[hops(i, j)]!),
      latenciesNs: matrix(4, (i, j) => latencyNsByHops[hops(i, j)]!),
      links,
      routes,
      provenance: {
        distances:
          'estimated:hop-based 10/16/22 SLIT pattern of AMD BIOSes applied to the square wiring (the usual pattern, not read from this machine); a real BIOS may report 10/20',
        latenciesNs:
          `estimated:local 100 ns from McCalpin (Family 10h 4-socket, 100/130 ns best/worst-connected chip); 1 hop 110 ns and 2 hops 130 ns from the idle read ratios in ${AMD_40555} (108–109 % and 130 % of local, measured on a K8 4P system)`,
        links:
          `estimated:square "Quartet" wiring N0-N1, N0-N2, N1-N3, N2-N3 from ${AMD_40555}, Fig. 1 (the Carrefour machine's own wiring is not documented); 16-bit HyperTransport 1 at 2 GT/s (HT1's maximum rate) = 4.0 GB/s per direction`,
        routes: 'estimated:fewest hops; the 2-hop pairs (0,3) and (1,2) go through the lower-numbered neighbour',
        memoryBandwidthGBps: 'estimated:theoretical peak, 2 DDR2-800 channels per node × 8 B = 12.8 GB/s (socket F\'s usual configuration; the testbed\'s DIMMs are not published); no sustained figure is published for this machine',
        memoryBytes: `documented:${CARREFOUR_PAPER}: 64 GB RAM, 16 GB per node (read as 16 GiB: DIMM sizes are binary)`,
        cpus: CPUS_NUMBERING,
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// amd-asymsched-machine-a: AsymSched's Machine A (Lepers, Quéma, Fedorova, USENIX ATC 2015)

/**
 * Machine A node-to-node bandwidth, MB/s, rows = source node, columns = destination node:
 * hzqmwne/asymsched_demo `fake.py`, likely transcribed from the ATC'15 paper.
 */
const MACHINE_A_BANDWIDTH_MBPS: readonly (readonly number[])[] = [
  [0, 5600, 4300, 3800, 3000, 2900, 3000, 3000],
  [5600, 0, 3800, 4300, 3000, 2900, 2900, 3000],
  [3000, 1900, 0, 5600, 3000, 4300, 1900, 1900],
  [1900, 3000, 5600, 0, 3000, 3000, 1900, 1900],
  [3000, 3000, 3000, 3000, 0, 5600, 4300, 1900],
  [1900, 1900, 4300, 3000, 5600, 0, 4300, 3000],
  [4300, 3800, 3000, 3000, 3000, 1900, 0, 5600],
  [1900, 3000, 3800, 3800, 2900, 3000, 5600, 0],
];

/** A real 8-node SLIT of a 4P Opteron 6272 box (xapi-project/xen-api, ocaml/xenopsd/test/test_topology.ml). */
const OPTERON_6272_4P_SLIT: readonly (readonly number[])[] = [
  [10, 16, 16, 22, 16, 22, 16, 22],
  [16, 10, 22, 16, 16, 22, 22, 16],
  [16, 22, 10, 16, 16, 16, 16, 16],
  [22, 16, 16, 10, 16, 16, 22, 22],
  [16, 16, 16, 16, 10, 16, 16, 22],
  [22, 22, 16, 16, 16, 10, 22, 16],
  [16, 22, 16, 22, 16, 22, 10, 16],
  [22, 16, 16, 22, 22, 16, 16, 10],
];

const MB_PER_GB = 1000;

/** Machine A's clock and the published idle one-hop vs two-hop latency difference (ATC'15). */
const MACHINE_A_CLOCK_GHZ = 2.1;
const MACHINE_A_TWO_HOP_EXTRA_CYCLES = 80;

function asymschedMachineA(): MachinePreset {
  const id = 'amd-asymsched-machine-a';
  const nodeIds = [0, 1, 2, 3, 4, 5, 6, 7];
  // Idle latency: local and one hop as the Opteron 6172 preset (same G34 platform), two hops one
  // hop + 80 cycles at 2.1 GHz (38.1 ns); hops from the SLIT (16 = one hop, 22 = two).
  const twoHopExtraNs = MACHINE_A_TWO_HOP_EXTRA_CYCLES / MACHINE_A_CLOCK_GHZ;
  const localNs = 98;
  const oneHopNs = 145;
  const latencyNs = (i: number, j: number): number =>
    i === j ? localNs : OPTERON_6272_4P_SLIT[i]![j] === 16 ? oneHopNs : Math.round((oneHopNs + twoHopExtraNs) * 10) / 10;
  const links: MachineLink[] = [];
  for (const from of nodeIds) {
    for (const to of nodeIds) {
      if (from !== to) links.push({ from, to, capacityGBps: MACHINE_A_BANDWIDTH_MBPS[from]![to]! / MB_PER_GB });
    }
  }
  return {
    id,
    memoryGeneration: 'DDR3',
    description:
      'AsymSched (ATC\'15) Machine A: 4 Opteron 6272 (Bulldozer, 2.1 GHz) packages, 2 dies each, 8 nodes × 8 cores, with the asymmetric measured node-to-node bandwidths as per-direction pair links.',
    figures: [
      { quantity: 'cpu clock', kind: 'measured', value: MACHINE_A_CLOCK_GHZ, unit: 'GHz', provenance: `documented:Machine A in ${ASYMSCHED_PAPER}` },
      {
        quantity: 'idle latency, two hops minus one hop',
        kind: 'measured',
        value: MACHINE_A_TWO_HOP_EXTRA_CYCLES,
        unit: 'cycles',
        provenance: `measured:${ASYMSCHED_PAPER}: the one-hop vs two-hop latency difference is only about 80 cycles on an idle interconnect`,
      },
      {
        quantity: 'idle latency, two hops minus one hop',
        kind: 'measured',
        value: Math.round(twoHopExtraNs * 10) / 10,
        unit: 'ns',
        provenance: `measured:80 cycles ÷ 2.1 GHz = 38.1 ns (both from ${ASYMSCHED_PAPER})`,
      },
      {
        quantity: 'pair bandwidth over a 16-bit link',
        kind: 'measured',
        value: 5.6,
        unit: 'GB/s',
        provenance: `measured:${ASYMSCHED_PAPER}: 16-bit links about 5.6 GB/s, 8-bit links about half (end-to-end node-to-node bandwidth, what the links of this preset carry)`,
      },
      { quantity: 'memory bandwidth per node', kind: 'theoretical', value: 21.3, unit: 'GB/s', provenance: 'estimated:2 DDR3-1333 channels per die × 8 B, assumed as on the Opteron 6172 preset (Machine A\'s memory is not published)' },
    ],
    machine: {
      name: id,
      source: `preset:${id}`,
      kernel: null,
      cpuModel: 'AMD Opteron 6272 (Interlagos, 16 cores per package, 8 per die, 2.1 GHz)',
      pageSizeBytes: PAGE_SIZE_BYTES,
      nodes: nodesOf(8, 8, 21.3),
      distances: OPTERON_6272_4P_SLIT.map((row) => [...row]),
      latenciesNs: matrix(8, latencyNs),
      links,
      routes: directRoutes(nodeIds, links),
      provenance: {
        distances:
          `estimated:a real SLIT of a 4P Opteron 6272 box (${OPTERON_6272_SLIT_SOURCE}); not necessarily Machine A's`,
        latenciesNs: `estimated:two hops = one hop + 38.1 ns, measured (80 cycles at 2.1 GHz on an idle interconnect, ${ASYMSCHED_PAPER}); local 98 ns and one hop 145 ns assumed as on the Opteron 6172 preset (same G34 platform); hop counts from the estimated SLIT (16 = one hop, 22 = two)`,
        links:
          `documented:hzqmwne/asymsched_demo fake.py (secondary source, likely transcribed from the ATC'15 paper): measured (sustained, not theoretical) end-to-end node-to-node bandwidth in MB/s, used as one per-direction link per ordered node pair; agrees with the paper's 16-bit links at about 5.6 GB/s and 8-bit links at about half (${ASYMSCHED_PAPER}); the physical HyperTransport links, widths and routing table are not documented`,
        routes: 'estimated:each ordered pair uses its own measured pair link (the real routing table is not documented)',
        memoryBandwidthGBps:
          'estimated:theoretical peak, assumed equal to the Opteron 6172 preset on the same G34 platform, 2 DDR3-1333 channels per die × 8 B = 21.3 GB/s; Machine A\'s memory configuration is not documented',
        memoryBytes: 'unavailable:no published memory size for Machine A was found',
        cpus: CPUS_NUMBERING,
        nodes: `documented:8 nodes × 8 cores = 64 cores (${ASYMSCHED_PAPER}; its ;login: article, October 2015)`,
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// amd-opteron-6172-4p: Magny-Cours 4P, 8 nodes (the NUMA-STREAM AMD machine, Bergstrom 2011)

function opteron6172(): MachinePreset {
  const id = 'amd-opteron-6172-4p';
  const nodeIds = [0, 1, 2, 3, 4, 5, 6, 7];
  const package_ = sameSocket(2);
  const intraPackageGBps = 12.8; // x16 HT3 at 6.4 GT/s; the x8 cross-die sublink was never enabled
  const interPackageGBps = 6.4; // x8 HT3 at 6.4 GT/s
  const links: MachineLink[] = [];
  for (const i of nodeIds) {
    for (const j of nodeIds) {
      if (i < j && OPTERON_6272_4P_SLIT[i]![j] === 16) {
        links.push(...bothWays(i, j, package_(i, j) ? intraPackageGBps : interPackageGBps));
      }
    }
  }
  const latencyNs = (i: number, j: number): number => {
    if (i === j) return 98;
    if (package_(i, j)) return 130;
    return OPTERON_6272_4P_SLIT[i]![j] === 16 ? 145 : 170;
  };
  return {
    id,
    memoryGeneration: 'DDR3',
    description: 'Magny-Cours 4P: 4 Opteron 6172 packages, 2 dies each, 8 nodes × 6 cores, HyperTransport 3 (the NUMA-STREAM AMD machine).',
    outstandingMissesPerCore: K10_OUTSTANDING_MISSES,
    streamLimitedByCrossbar: {
      provenance: `documented:${ANANDTECH_MAGNY_COURS}: "the next link in the chain, the Northbridge, only runs at 1.8GHz. We have two 64-bit Northbridges both working at 1.8 GHz, limiting the maximum bandwidth to 28.8 GB/s" (per package; 14.4 GB/s per die) and "the 1.8 GHz Northbridge is limiting the memory subsystem" (their STREAM runs)`,
    },
    figures: [
      { quantity: 'memory bandwidth per node', kind: 'theoretical', value: 21.3, unit: 'GB/s', provenance: `documented:${NUMA_STREAM_PAPER}: local 21.3 GB/s` },
      { quantity: 'link bandwidth, same package', kind: 'theoretical', value: 19.2, unit: 'GB/s', provenance: `documented:${NUMA_STREAM_PAPER}: node in the same package 19.2 GB/s (x16 + x8 HT3; the preset's links use 12.8 as the x8 sublink was never enabled, ${CHIPS_AND_CHEESE_MAGNY_COURS})` },
      { quantity: 'link bandwidth, other package', kind: 'theoretical', value: 6.4, unit: 'GB/s', provenance: `documented:${NUMA_STREAM_PAPER}: other packages 6.4 GB/s (8-bit HT3)` },
      { quantity: 'northbridge (crossbar) bandwidth per node', kind: 'theoretical', value: 14.4, unit: 'GB/s', provenance: `documented:${ANANDTECH_MAGNY_COURS}: a 64-bit northbridge at 1.8 GHz per die (28.8 GB/s per package)` },
      { quantity: 'memory bandwidth, whole machine (NUMA-aware STREAM, all cores)', kind: 'sustained', value: 55, unit: 'GB/s', provenance: `measured:${NUMA_STREAM_PAPER}: near 55,000 MB/s` },
      {
        quantity: 'memory bandwidth per node',
        kind: 'sustained',
        value: 55 / 8,
        unit: 'GB/s',
        provenance: `estimated:55,000 MB/s measured over the machine (NUMA-aware STREAM, ${NUMA_STREAM_PAPER}) ÷ 8 nodes = 6.9 GB/s, about a third of the 21.3 GB/s peak as the paper notes`,
      },
    ],
    machine: {
      name: id,
      source: `preset:${id}`,
      kernel: null,
      cpuModel: 'AMD Opteron 6172 (Magny-Cours, 12 cores per package, 6 per die)',
      pageSizeBytes: PAGE_SIZE_BYTES,
      nodes: nodesOf(8, 6, 21.3),
      distances: OPTERON_6272_4P_SLIT.map((row) => [...row]),
      latenciesNs: matrix(8, latencyNs),
      links,
      routes: shortestPathRoutes(nodeIds, links),
      provenance: {
        distances: `estimated:the real 4P G34 SLIT of an Opteron 6272 box (${OPTERON_6272_SLIT_SOURCE}), same platform`,
        latenciesNs:
          `estimated:local 98 ns documented (${ANANDTECH_MAGNY_COURS}: SiSoft Sandra on Opteron 6174); same package 130, other package 1 hop 145 and 2 hops 170 ns scaled by AMD hop ratios (not measured on this machine)`,
        links:
          `estimated:links = node pairs at SLIT 16 (18 pairs); same-package links 12.8 GB/s per direction (x16 HT3; ${CHIPS_AND_CHEESE_MAGNY_COURS}: the x8 cross-die sublink was never enabled, nominal 19.2), other links x8 HT3 = 6.4 GB/s (${NUMA_STREAM_PAPER}); the real port budget suggests fewer x8 links`,
        routes: 'estimated:fewest hops, ties through lower-numbered nodes',
        memoryBandwidthGBps:
          `documented:theoretical peak, 42.7 GB/s per package (${ANANDTECH_MAGNY_COURS}) = 2 DDR3-1333 channels per die, 21.3 GB/s (the same figure as in ${NUMA_STREAM_PAPER}); the northbridge caps a package near 28.8 GB/s (AnandTech, same article); sustained about 6.9 GB/s per node (preset figures)`,
        memoryBytes: 'unavailable:no published memory size for this machine was found',
        cpus: CPUS_NUMBERING,
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// intel-xeon-x7560-4s: Nehalem-EX, fully connected QPI (the NUMA-STREAM Intel machine, Bergstrom 2011)

function xeonX7560(): MachinePreset {
  const id = 'intel-xeon-x7560-4s';
  const nodeIds = [0, 1, 2, 3];
  const qpiGBps = 12.8; // QPI 6.4 GT/s × 2 B per direction
  const links = nodeIds.flatMap((a) => nodeIds.filter((b) => a < b).flatMap((b) => bothWays(a, b, qpiGBps)));
  return {
    id,
    memoryGeneration: 'DDR3',
    description: 'Nehalem-EX 4S: 4 Xeon X7560 sockets × 8 cores, fully connected QPI (the NUMA-STREAM Intel machine).',
    outstandingMissesPerCore: {
      value: 10,
      provenance:
        'documented:Intel 64 and IA-32 Architectures Optimization Reference Manual, Nehalem microarchitecture: 10 L1 data-cache line fill buffers per core (outstanding L1D misses); Nehalem-EX uses the Nehalem core',
    },
    figures: [
      { quantity: 'memory bandwidth per node', kind: 'theoretical', value: 17.1, unit: 'GB/s', provenance: `documented:${NUMA_STREAM_PAPER}: local 17.1 GB/s` },
      { quantity: 'link bandwidth per direction', kind: 'theoretical', value: qpiGBps, unit: 'GB/s', provenance: `documented:${NUMA_STREAM_PAPER}: remote 25.6 GB/s QPI, both directions together (12.8 per direction)` },
      { quantity: 'memory bandwidth, whole machine (NUMA-aware STREAM, all cores)', kind: 'sustained', value: 40, unit: 'GB/s', provenance: `measured:${NUMA_STREAM_PAPER}: near 40,000 MB/s` },
      {
        quantity: 'memory bandwidth per node',
        kind: 'sustained',
        value: 10,
        unit: 'GB/s',
        provenance: `estimated:40,000 MB/s measured over the machine (NUMA-aware STREAM, ${NUMA_STREAM_PAPER}) ÷ 4 nodes = 10 GB/s`,
      },
    ],
    machine: {
      name: id,
      source: `preset:${id}`,
      kernel: null,
      cpuModel: 'Intel Xeon X7560 (Nehalem-EX, 8 cores)',
      pageSizeBytes: PAGE_SIZE_BYTES,
      nodes: nodesOf(4, 8, 17.1),
      distances: matrix(4, (i, j) => (i === j ? 10 : 20)),
      latenciesNs: matrix(4, (i, j) => (i === j ? 130 : 190)),
      links,
      routes: directRoutes(nodeIds, links),
      provenance: {
        distances: 'estimated:typical Intel 4S BIOS SLIT 10/20 (not read from this machine)',
        latenciesNs: 'estimated:assumed 130 ns local, 190 ns remote, placeholders of the usual magnitude for this platform; no readable measurement of this machine',
        links: `estimated:6 QPI links, fully connected; 6.4 GT/s × 2 B = 12.8 GB/s per direction (the 25.6 GB/s of ${NUMA_STREAM_PAPER} counts both directions)`,
        routes: 'estimated:every pair is directly linked',
        memoryBandwidthGBps:
          `documented:theoretical peak, 17.1 GB/s per node from ${NUMA_STREAM_PAPER}; equals 2 DDR3-1066 channels; sustained about 10 GB/s per node (preset figures)`,
        memoryBytes: 'unavailable:no published memory size for this machine was found',
        cpus: CPUS_NUMBERING,
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// intel-spr-2s: Sapphire Rapids 2S, flat (no SNC)

function sapphireRapids2s(): MachinePreset {
  const id = 'intel-spr-2s';
  const upiGBps = 4 * 32; // 4 UPI 2.0 links × 16 GT/s × 2 B per direction
  const links = bothWays(0, 1, upiGBps);
  return {
    id,
    outstandingMissesPerCore: GOLDEN_COVE_OUTSTANDING_MISSES,
    memoryGeneration: 'DDR5',
    description: '4th-gen Xeon 2S (e.g. Platinum 8480+), flat mode: 2 nodes × 56 cores, 4 UPI links.',
    figures: [],
    machine: {
      name: id,
      source: `preset:${id}`,
      kernel: null,
      cpuModel: 'Intel Xeon Platinum 8480+ (Sapphire Rapids, 56 cores)',
      pageSizeBytes: PAGE_SIZE_BYTES,
      nodes: nodesOf(2, 56, 307.2),
      distances: [
        [10, 21],
        [21, 10],
      ],
      latenciesNs: [
        [110, 185],
        [185, 110],
      ],
      links,
      routes: directRoutes([0, 1], links),
      provenance: {
        distances:
          'documented:numactl on Aurora (Xeon Max 9470, flat mode, DDR nodes 10/21; argonne-lcf/user-guides PR #756) and on an SPR 8468V box (bsc-mem/Mess-benchmark#2)',
        latenciesNs: 'estimated:typical 110 ns local, 185 ns remote for this platform, not measured on this machine',
        links:
          'estimated:4 UPI 2.0 links at 16 GT/s × 2 B = 32 GB/s per direction each, modelled as one 128 GB/s link per direction (link count and rate as TechPowerUp reported them); many 2S boards wire 3',
        routes: 'estimated:the two nodes are directly linked',
        memoryBandwidthGBps: 'estimated:8 DDR5-4800 channels per socket × 8 B = 307.2 GB/s peak (channels and speed as Dell documents them for its 4th-gen Xeon servers: 4800 MT/s at one DIMM per channel)',
        memoryBytes: GENERIC_MEMORY_SIZE,
        cpus: CPUS_NUMBERING,
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// amd-genoa-2s-nps1 / nps4: EPYC 9004 2S

const GENOA_XGMI_LINK_GBPS = 64; // xGMI x16 at 32 Gb/s per lane, per direction
const GENOA_XGMI_LINKS = 4;

function genoa2sNps1(): MachinePreset {
  const id = 'amd-genoa-2s-nps1';
  const links = bothWays(0, 1, GENOA_XGMI_LINKS * GENOA_XGMI_LINK_GBPS);
  return {
    id,
    memoryGeneration: 'DDR5',
    description: 'EPYC 9004 (Genoa) 2S in NPS1: 2 nodes × 96 cores, 4 xGMI links between the sockets.',
    figures: [],
    machine: {
      name: id,
      source: `preset:${id}`,
      kernel: null,
      cpuModel: 'AMD EPYC 9004 series (Genoa, 96 cores)',
      pageSizeBytes: PAGE_SIZE_BYTES,
      nodes: nodesOf(2, 96, 460.8),
      distances: [
        [10, 32],
        [32, 10],
      ],
      latenciesNs: [
        [115, 210],
        [210, 115],
      ],
      links,
      routes: directRoutes([0, 1], links),
      provenance: {
        distances:
          'documented:EPYC 2P NPS1 numactl 10/32 (Turin 9375F: egandro/proxmox-cpu-affinity#58; Turin 9135: kvcache-ai/ktransformers#797)',
        latenciesNs: 'estimated:typical 115 ns local, 210 ns remote for this platform, not measured on this machine',
        links:
          'estimated:4 xGMI x16 links at 32 Gb/s per lane = 64 GB/s per direction each, modelled as one 256 GB/s link per direction; some 2P boards use 3 links (the lane rate is assumed: no AMD document found states it for Genoa)',
        routes: 'estimated:the two nodes are directly linked',
        memoryBandwidthGBps: 'estimated:12 DDR5-4800 channels per socket × 8 B = 460.8 GB/s peak (the EPYC 9004 series\' memory configuration)',
        memoryBytes: GENERIC_MEMORY_SIZE,
        cpus: CPUS_NUMBERING,
      },
    },
  };
}

function genoa2sNps4(): MachinePreset {
  const id = 'amd-genoa-2s-nps4';
  const nodeIds = [0, 1, 2, 3, 4, 5, 6, 7];
  const nodesPerSocket = 4;
  const socket = sameSocket(nodesPerSocket);
  const meshGBps = 100; // IOD Infinity Fabric between quadrants, ≥100 GB/s per direction
  const links: MachineLink[] = [];
  for (const i of nodeIds) {
    for (const j of nodeIds) if (i < j && socket(i, j)) links.push(...bothWays(i, j, meshGBps));
  }
  // One xGMI link per quadrant pair k <-> k+4.
  for (let k = 0; k < nodesPerSocket; k++) links.push(...bothWays(k, k + nodesPerSocket, GENOA_XGMI_LINK_GBPS));

  const linkIndex = (from: number, to: number) => links.findIndex((l) => l.from === from && l.to === to);
  const routes: Record<string, number[]> = {};
  for (const from of nodeIds) {
    for (const to of nodeIds) {
      if (from === to) continue;
      if (socket(from, to)) {
        routes[routeKey(from, to)] = [linkIndex(from, to)];
      } else {
        // Leave through this quadrant's own xGMI link, then cross the other IOD if needed.
        const peer = (from + nodesPerSocket) % (2 * nodesPerSocket);
        routes[routeKey(from, to)] = peer === to ? [linkIndex(from, peer)] : [linkIndex(from, peer), linkIndex(peer, to)];
      }
    }
  }
  return {
    id,
    memoryGeneration: 'DDR5',
    description: 'EPYC 9004 (Genoa) 2S in NPS4: 8 nodes × 24 cores, a quadrant mesh in each socket, 4 xGMI links between them.',
    figures: [],
    machine: {
      name: id,
      source: `preset:${id}`,
      kernel: null,
      cpuModel: 'AMD EPYC 9004 series (Genoa, 96 cores)',
      pageSizeBytes: PAGE_SIZE_BYTES,
      nodes: nodesOf(8, 24, 115.2),
      distances: matrix(8, (i, j) => (i === j ? 10 : socket(i, j) ? 12 : 32)),
      latenciesNs: matrix(8, (i, j) => (i === j ? 105 : socket(i, j) ? 120 : 210)),
      links,
      routes,
      provenance: {
        distances:
          'estimated:10 local, 12 same socket (11/12 in practice), 32 other socket (typical values; no official NPS4 SLIT found)',
        latenciesNs: 'estimated:typical 105 ns local, 120 ns same socket, 210 ns other socket for this platform, not measured on this machine',
        links:
          'estimated:quadrants of a socket fully meshed through the IOD at ≥100 GB/s per direction per pair; 4 xGMI x16 links at 64 GB/s per direction, modelled as one per quadrant pair k<->k+4 (mesh capacity and xGMI lane rate assumed, not from an AMD document)',
        routes: 'estimated:same socket direct; other socket through the source quadrant\'s xGMI link, then the mesh',
        memoryBandwidthGBps: 'estimated:3 DDR5-4800 channels per quadrant × 8 B = 115.2 GB/s peak (a quarter of the socket\'s 12 channels)',
        memoryBytes: GENERIC_MEMORY_SIZE,
        cpus: CPUS_NUMBERING,
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// intel-spr-2s-snc4: Sapphire Rapids 2S with sub-NUMA clustering, 8 nodes

function sapphireRapids2sSnc4(): MachinePreset {
  const id = 'intel-spr-2s-snc4';
  const nodeIds = [0, 1, 2, 3, 4, 5, 6, 7];
  const nodesPerSocket = 4;
  const socket = sameSocket(nodesPerSocket);
  const meshGBps = 200; // EMIB mesh between SNC domains, ≥200 GB/s per direction per pair
  const upiGBps = 4 * 32; // 4 UPI 2.0 links × 16 GT/s × 2 B, shared by the socket's 4 domains
  const links: MachineLink[] = [];
  for (const i of nodeIds) {
    for (const j of nodeIds) if (i < j && socket(i, j)) links.push(...bothWays(i, j, meshGBps));
  }
  links.push(...bothWays(0, nodesPerSocket, upiGBps));
  const linkIndex = (from: number, to: number) => links.findIndex((l) => l.from === from && l.to === to);
  const gateway = (node: number) => (node < nodesPerSocket ? 0 : nodesPerSocket);
  const routes: Record<string, number[]> = {};
  for (const from of nodeIds) {
    for (const to of nodeIds) {
      if (from === to) continue;
      if (socket(from, to)) {
        routes[routeKey(from, to)] = [linkIndex(from, to)];
        continue;
      }
      const out = gateway(from);
      const into = gateway(to);
      const path: number[] = [];
      if (from !== out) path.push(linkIndex(from, out));
      path.push(linkIndex(out, into));
      if (to !== into) path.push(linkIndex(into, to));
      routes[routeKey(from, to)] = path;
    }
  }
  return {
    id,
    outstandingMissesPerCore: GOLDEN_COVE_OUTSTANDING_MISSES,
    memoryGeneration: 'DDR5',
    description: '4th-gen Xeon 2S (e.g. Platinum 8480+) in SNC4: 8 nodes × 14 cores, a mesh inside each socket, UPI shared between the sockets.',
    figures: [],
    machine: {
      name: id,
      source: `preset:${id}`,
      kernel: null,
      cpuModel: 'Intel Xeon Platinum 8480+ (Sapphire Rapids, 56 cores, SNC4)',
      pageSizeBytes: PAGE_SIZE_BYTES,
      nodes: nodesOf(8, 14, 76.8),
      distances: matrix(8, (i, j) => (i === j ? 10 : socket(i, j) ? 12 : 21)),
      latenciesNs: matrix(8, (i, j) => (i === j ? 100 : socket(i, j) ? 115 : 185)),
      links,
      routes,
      provenance: {
        distances:
          'estimated:typical 10 local, 12 same socket, 21 other socket (not found in a readable source; SNC with UPI affinity can expose an asymmetric SLIT, e.g. gramineproject/gramine PR #2122)',
        latenciesNs: 'estimated:typical 100 ns local, 115 ns other SNC domain, 185 ns other socket for this platform, not measured on this machine',
        links:
          'estimated:the 4 SNC domains of a socket fully meshed at ≥200 GB/s per direction per pair; the sockets joined by 4 UPI 2.0 links at 16 GT/s × 2 B = 128 GB/s per direction, modelled as one link between domains 0 and 4 that all domains share (mesh capacity assumed)',
        routes: 'estimated:same socket direct; other socket through the mesh to domain 0 (or 4), over UPI, then the mesh',
        memoryBandwidthGBps: 'estimated:2 DDR5-4800 channels per SNC domain × 8 B = 76.8 GB/s peak (a quarter of the socket\'s 8 channels)',
        memoryBytes: GENERIC_MEMORY_SIZE,
        cpus: CPUS_NUMBERING,
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// cxl-expander: Sapphire Rapids 2S plus one CPU-less CXL memory node on socket 1

function cxlExpander(): MachinePreset {
  const id = 'cxl-expander';
  const nodeIds = [0, 1, 2];
  const upiGBps = 4 * 32;
  const cxlX16GBps = 64; // PCIe 5.0 x16 raw, 32 GT/s × 16 / 8 per direction
  const links = [...bothWays(0, 1, upiGBps), ...bothWays(1, 2, cxlX16GBps)];
  const nodes = nodesOf(2, 56, 307.2);
  nodes.push({ id: 2, cpus: [], memoryBytes: null, memoryBandwidthGBps: 76.8 });
  return {
    id,
    outstandingMissesPerCore: GOLDEN_COVE_OUTSTANDING_MISSES,
    memoryGeneration: 'DDR5',
    description:
      'Sapphire Rapids 2S (flat) with a CXL type-3 memory expander (x16, no cpus) attached to socket 1 as node 2.',
    figures: [
      {
        quantity: 'memory bandwidth of a DRAM socket',
        kind: 'sustained',
        value: 208,
        unit: 'GB/s',
        provenance: `estimated:about 208 GB/s measured for one socket's DRAM on the machine of ${WEIGHTED_INTERLEAVE_SERIES}, not necessarily this one`,
      },
      {
        quantity: 'memory bandwidth of the CXL node',
        kind: 'sustained',
        value: 24,
        unit: 'GB/s',
        provenance: `estimated:about 24 GB/s measured for the CXL expander of ${WEIGHTED_INTERLEAVE_SERIES}; devices differ`,
      },
    ],
    machine: {
      name: id,
      source: `preset:${id}`,
      kernel: null,
      cpuModel: 'Intel Xeon Platinum 8480+ (Sapphire Rapids, 56 cores) + CXL 1.1 type-3 memory expander',
      pageSizeBytes: PAGE_SIZE_BYTES,
      nodes,
      distances: [
        [10, 21, 24],
        [21, 10, 14],
        [24, 14, 10],
      ],
      latenciesNs: [
        [110, 185, 265],
        [185, 110, 190],
        [265, 190, 190],
      ],
      links,
      routes: shortestPathRoutes(nodeIds, links),
      provenance: {
        distances:
          'documented:SLIT of an SPR 8468V 2S box with CXL memory on socket 1 (bsc-mem/Mess-benchmark#2), reduced to one CXL node',
        latenciesNs:
          'estimated:SPR 110/185 ns (typical, as intel-spr-2s); CXL adds about 80 ns (Pond, Li et al., ASPLOS 2023: 70-90 ns) from the attached socket (190 ns) and the UPI hop on top from the other socket (265 ns, within the typical 250-300 ns for CXL memory behind the other socket); the CXL row is never used (no cpus)',
        links:
          'estimated:UPI as intel-spr-2s (128 GB/s per direction); CXL x16 at 32 GT/s raw = 64 GB/s per direction between node 1 and node 2; delivered bandwidth is device-dependent and lower',
        routes: 'estimated:fewest hops; node 0 reaches the CXL node through node 1',
        memoryBandwidthGBps:
          'estimated:sockets 8 DDR5-4800 channels × 8 B = 307.2 GB/s; the expander 2 DDR5-4800 channels = 76.8 GB/s (expanders put one or two DDR5 channels behind the controller: 38.4-76.8)',
        memoryBytes: GENERIC_MEMORY_SIZE,
        cpus: CPUS_NUMBERING,
        nodes: 'estimated:node 2 is a memory-only CXL node (no cpus), attached to socket 1',
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// dram-cxl-1s: one socket of DRAM plus one CPU-less CXL memory node, the machine of the
// weighted-interleave patch series

function dramCxl1s(): MachinePreset {
  const id = 'dram-cxl-1s';
  const cxlX16GBps = 64; // PCIe 5.0 x16 raw, 32 GT/s × 16 / 8 per direction
  const links = bothWays(0, 1, cxlX16GBps);
  const cores = 56;
  return {
    id,
    outstandingMissesPerCore: GOLDEN_COVE_OUTSTANDING_MISSES,
    memoryGeneration: 'DDR5',
    description:
      'One socket of DRAM (node 0, with the cpus) and a CPU-less CXL memory node (node 1), with the node bandwidths of the Linux weighted-interleave patch series (208 and 24 GB/s): the weighted-interleave what-if machine.',
    figures: [
      {
        quantity: 'memory bandwidth of a DRAM socket',
        kind: 'sustained',
        value: 208,
        unit: 'GB/s',
        provenance: `documented:about 208 GB/s for the DRAM node of ${WEIGHTED_INTERLEAVE_SERIES} (the node bandwidth its weights are derived from; its MLC W2 run reached 298.8 GB/s from DRAM alone, so absolute rates here are conservative)`,
      },
      {
        quantity: 'memory bandwidth of the CXL node',
        kind: 'sustained',
        value: 24,
        unit: 'GB/s',
        provenance: `documented:about 24 GB/s for the CXL node of ${WEIGHTED_INTERLEAVE_SERIES}`,
      },
    ],
    machine: {
      name: id,
      source: `preset:${id}`,
      kernel: null,
      cpuModel: 'one server socket (Sapphire Rapids class) + CXL type-3 memory expander',
      pageSizeBytes: PAGE_SIZE_BYTES,
      nodes: [
        { id: 0, cpus: Array.from({ length: cores }, (_, c) => c), memoryBytes: null, memoryBandwidthGBps: 307.2, memoryTier: 0, memoryKind: 'dram' },
        { id: 1, cpus: [], memoryBytes: null, memoryBandwidthGBps: 76.8, memoryTier: 1, memoryKind: 'cxl' },
      ],
      distances: [
        [10, 14],
        [14, 10],
      ],
      latenciesNs: [
        [110, 190],
        [190, 190],
      ],
      links,
      routes: shortestPathRoutes([0, 1], links),
      provenance: {
        distances: 'documented:SLIT of an SPR 8468V box with CXL memory: 14 from a socket to its own CXL node (bsc-mem/Mess-benchmark#2)',
        latenciesNs:
          'estimated:110 ns local DRAM (typical SPR); CXL adds about 80 ns (Pond, Li et al., ASPLOS 2023: 70-90 ns), 190 ns; the CXL row is never used (no cpus)',
        links: 'estimated:CXL x16 at 32 GT/s raw = 64 GB/s per direction between the socket and the expander; delivered bandwidth is device-dependent and lower',
        routes: 'estimated:one direct link',
        memoryBandwidthGBps:
          'estimated:8 DDR5-4800 channels × 8 B = 307.2 GB/s theoretical for the socket; 2 DDR5-4800 channels = 76.8 GB/s for the expander (expanders put one or two DDR5 channels behind the controller); the sustained capacities are the series\' node bandwidths (figures)',
        memoryBytes: GENERIC_MEMORY_SIZE,
        cpus: `estimated:${cores} cores, one socket of a Sapphire Rapids class server (the series does not give the core count); one cpu per core`,
        nodes: 'documented:one socket of DRAM plus CXL memory as a memory-only node, as in the cover letter of the weighted-interleave series',
        memoryTier: 'estimated:DRAM tier 0, CXL tier 1 (the kernel puts CXL memory in a lower tier by its HMAT abstract distance)',
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Xeon Max (Sapphire Rapids with on-package HBM2e) in HBM flat mode: DDR5 nodes with the cpus,
// HBM nodes without cpus (how Linux shows flat mode), one socket.

const XEON_MAX_TILES = 'ServeTheHome, "Intel Xeon MAX 9480 Deep-Dive: 64GB HBM2e Onboard Like a GPU or AI Accelerator", 2023';
const HBM2E_RATE = 'AnandTech, "Intel Shows Off Multi-Chiplet Sapphire Rapids CPU with HBM", 2021 (JEDEC HBM2E tops at 3.2 GT/s per pin, 1024-bit stacks)';
const AURORA_SLIT = 'Aurora (Xeon Max 9470, flat mode) numactl distances: DDR 10/21, HBM 13/23 (argonne-lcf/user-guides PR #756)';
/** One HBM2e stack: 1024 bits × 3.2 GT/s / 8 = 409.6 GB/s peak. */
const HBM2E_STACK_GBPS = 409.6;
const HBM_STACK_BYTES = 16 * GIB;

function xeonMaxFigures(stacksPerNode: number): PresetFigure[] {
  return [
    {
      quantity: 'HBM2e capacity per stack',
      kind: 'measured',
      value: HBM_STACK_BYTES,
      unit: 'bytes',
      provenance: `documented:16 GB of HBM2e per compute tile, 64 GB per Xeon Max 9480 (${XEON_MAX_TILES})`,
    },
    {
      quantity: 'HBM2e peak bandwidth per node',
      kind: 'theoretical',
      value: HBM2E_STACK_GBPS * stacksPerNode,
      unit: 'GB/s',
      provenance: `estimated:${stacksPerNode} stack${stacksPerNode > 1 ? 's' : ''} × 1024 bits × 3.2 GT/s / 8 (${HBM2E_RATE}); Intel's own sustained figure not found in a readable source`,
    },
  ];
}

function xeonMaxFlat(): MachinePreset {
  const id = 'intel-xeon-max-flat';
  const cores = 56;
  const hbmGBps = 4 * HBM2E_STACK_GBPS;
  const links = bothWays(0, 1, hbmGBps);
  return {
    id,
    outstandingMissesPerCore: GOLDEN_COVE_OUTSTANDING_MISSES,
    memoryGeneration: 'DDR5',
    description: 'Xeon Max 9480 (56 cores, 64 GB HBM2e on package) in HBM flat mode, one socket, quadrant: node 0 DDR5 with the cpus, node 1 the HBM without cpus.',
    figures: xeonMaxFigures(4),
    machine: {
      name: id,
      source: `preset:${id}`,
      kernel: null,
      cpuModel: 'Intel Xeon CPU Max 9480 (Sapphire Rapids HBM, 56 cores)',
      pageSizeBytes: PAGE_SIZE_BYTES,
      nodes: [
        { id: 0, cpus: Array.from({ length: cores }, (_, c) => c), memoryBytes: null, memoryBandwidthGBps: 307.2, memoryTier: 0, memoryKind: 'dram' },
        { id: 1, cpus: [], memoryBytes: 4 * HBM_STACK_BYTES, memoryBandwidthGBps: hbmGBps, memoryTier: 0, memoryKind: 'hbm' },
      ],
      distances: [
        [10, 13],
        [13, 10],
      ],
      latenciesNs: [
        [110, 143],
        [143, 143],
      ],
      links,
      routes: shortestPathRoutes([0, 1], links),
      provenance: {
        distances: `documented:local DDR 10, local HBM 13 (${AURORA_SLIT})`,
        latenciesNs: 'estimated:110 ns local DDR5 (typical SPR); HBM 110 × 13 / 10 = 143 ns by the SLIT ratio (HBM\'s idle latency is higher than DDR\'s; not measured here); the HBM row is never used (no cpus)',
        links: `estimated:the HBM is on package: modelled as one link as wide as its peak (${hbmGBps.toFixed(1)} GB/s), so the HBM controllers, not the link, bound it`,
        routes: 'estimated:one direct link',
        memoryBandwidthGBps: `estimated:DDR5 8 channels × 4800 MT/s × 8 B = 307.2 GB/s; HBM 4 stacks × 409.6 = ${hbmGBps.toFixed(1)} GB/s peak (${HBM2E_RATE})`,
        memoryBytes: `documented:HBM 64 GB (${XEON_MAX_TILES}); DDR5 size varies by system`,
        cpus: CPUS_NUMBERING,
        nodes: `documented:flat mode shows the DDR5 and the HBM as separate NUMA nodes, the HBM ones without cpus (${XEON_MAX_TILES}; ${AURORA_SLIT})`,
        memoryTier: 'estimated:one tier: the kernel ranks HBM and DDR by abstract distance from HMAT; with HBM\'s higher bandwidth and latency it commonly lands in the DRAM tier',
      },
    },
  };
}

function xeonMaxSnc4Flat(): MachinePreset {
  const id = 'intel-xeon-max-snc4-flat';
  const tiles = 4;
  const coresPerTile = 14;
  const meshGBps = 200;
  const links: MachineLink[] = [];
  for (let i = 0; i < tiles; i++) for (let j = i + 1; j < tiles; j++) links.push(...bothWays(i, j, meshGBps));
  for (let i = 0; i < tiles; i++) links.push(...bothWays(i, tiles + i, HBM2E_STACK_GBPS));
  const nodeIds = Array.from({ length: 2 * tiles }, (_, i) => i);
  const tileOf = (i: number) => i % tiles;
  const hbm = (i: number) => i >= tiles;
  const dist = (i: number, j: number) => {
    if (i === j) return 10;
    const sameTile = tileOf(i) === tileOf(j);
    if (hbm(i) === hbm(j)) return 12;
    return sameTile ? 13 : 14;
  };
  const lat = (c: number, m: number) => (dist(c, m) * 11);
  return {
    id,
    outstandingMissesPerCore: GOLDEN_COVE_OUTSTANDING_MISSES,
    memoryGeneration: 'DDR5',
    description: 'Xeon Max 9480 in SNC4 with HBM flat mode, one socket: nodes 0-3 the DDR5 of each 14-core tile, nodes 4-7 each tile\'s 16 GB HBM2e stack without cpus.',
    figures: xeonMaxFigures(1),
    machine: {
      name: id,
      source: `preset:${id}`,
      kernel: null,
      cpuModel: 'Intel Xeon CPU Max 9480 (Sapphire Rapids HBM, 56 cores, SNC4)',
      pageSizeBytes: PAGE_SIZE_BYTES,
      nodes: nodeIds.map((i) =>
        hbm(i)
          ? { id: i, cpus: [], memoryBytes: HBM_STACK_BYTES, memoryBandwidthGBps: HBM2E_STACK_GBPS, memoryTier: 0, memoryKind: 'hbm' }
          : { id: i, cpus: Array.from({ length: coresPerTile }, (_, c) => i * coresPerTile + c), memoryBytes: null, memoryBandwidthGBps: 76.8, memoryTier: 0, memoryKind: 'dram' },
      ),
      distances: matrix(2 * tiles, dist),
      latenciesNs: matrix(2 * tiles, lat),
      links,
      routes: shortestPathRoutes(nodeIds, links),
      provenance: {
        distances: `estimated:10 local, 12 another tile's memory of the same kind (typical SNC4), 13 the own tile's HBM (${AURORA_SLIT}), 14 another tile's HBM (assumed)`,
        latenciesNs: 'estimated:110 ns × SLIT / 10 (110 local DDR5, typical SPR; HBM by the SLIT ratio); rows of the HBM nodes are never used (no cpus)',
        links: `estimated:the 4 tiles fully meshed at ≥200 GB/s per direction per pair (EMIB, as intel-spr-2s-snc4); each HBM stack on its tile as a link as wide as its peak (409.6 GB/s)`,
        routes: 'estimated:fewest hops; another tile\'s HBM through that tile',
        memoryBandwidthGBps: `estimated:DDR5 2 channels × 4800 MT/s × 8 B = 76.8 GB/s per tile; HBM 1 stack × 1024 bits × 3.2 GT/s / 8 = 409.6 GB/s per tile (${HBM2E_RATE})`,
        memoryBytes: `documented:16 GB HBM2e per tile (${XEON_MAX_TILES}); DDR5 size varies by system`,
        cpus: CPUS_NUMBERING,
        nodes: `documented:four 14-core tiles, each with two DDR5 channels and a 16 GB HBM2e stack; SNC4 flat mode shows 4 DDR and 4 HBM nodes (${XEON_MAX_TILES})`,
        memoryTier: 'estimated:one tier (as intel-xeon-max-flat)',
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Registry

const PRESET_FACTORIES: readonly (() => MachinePreset)[] = [
  opteron8385,
  asymschedMachineA,
  opteron6172,
  xeonX7560,
  sapphireRapids2s,
  sapphireRapids2sSnc4,
  genoa2sNps1,
  genoa2sNps4,
  cxlExpander,
  dramCxl1s,
  xeonMaxFlat,
  xeonMaxSnc4Flat,
];

/** Every preset, freshly built (callers may modify what they get). */
export function listPresets(): MachinePreset[] {
  return PRESET_FACTORIES.map((make) => make());
}

export const PRESET_IDS: readonly string[] = listPresets().map((p) => p.id);

/** The machine of preset `id`; throws naming the valid ids. */
export function getPreset(id: string): TraceMachine {
  const preset = listPresets().find((p) => p.id === id);
  if (!preset) throw new Error(`unknown machine preset "${id}"; valid presets: ${PRESET_IDS.join(', ')}`);
  return preset.machine;
}
