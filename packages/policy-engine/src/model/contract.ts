/**
 * The contract between the engine's parts: the machine model, the windowed access data built
 * from a trace, the traffic simulator, and the policies that replay a recording window by window.
 * Everything here is plain data over typed arrays (no row objects), so 10M-sample traces replay
 * with memory proportional to pages and threads, not samples.
 *
 * Units are in the names. Node *indices* (0..nodeCount-1) are used inside the engine; the kernel
 * node *ids* are kept in MachineModel.nodeIds for display and plans.
 */
import type { Provenance } from '../trace/types.js';

export type NodeIndex = number;
export type LinkIndex = number;

/** A number and where it came from (`measured:…`, `documented:…`, `estimated:…`, `unavailable:…`). */
export interface Sourced<T> {
  value: T;
  source: Provenance;
}

/** The machine as the simulator sees it. Built from a preset, a trace's machine, JSON or hwloc XML. */
export interface MachineModel {
  name: string;
  /** Where the whole description came from (`preset:…`, `trace`, `hwloc:…`, `json:…`). */
  source: string;
  nodeCount: number;
  /** Kernel node id of each node index. */
  nodeIds: number[];
  /** Node index of each cpu id (cpuNode[cpu]); -1 for a cpu id not present. */
  cpuNode: Int16Array;
  /** cpus per node index (empty for a memory-only node). */
  nodeCpus: number[][];
  /** Memory-controller bandwidth per node index, bytes/s. */
  mcBandwidthBytesPerS: Sourced<Float64Array>;
  /** Measured sustained memory-controller capacity per node, bytes/s (NaN where not measured): a `numascope bench` calibration. */
  sustainedBytesPerS?: Sourced<Float64Array>;
  /**
   * Measured loaded-latency points per node index (null where not measured): a `numascope bench`
   * calibration's curves, latency of a dependent chase against the bandwidth delivered by load
   * threads on the same memory node. The traffic model fits its service scale to them (rule LQ2).
   */
  loadedLatency?: Sourced<Array<LoadedLatencyPoint[] | null>>;
  /** Memory per node index, bytes (NaN = unknown). */
  memoryBytes: Sourced<Float64Array>;
  /**
   * Memory tier per node index, 0 = fastest (the kernel's memory_tiering ranks, or rule T1 of
   * machine/model.ts). Optional for hand-built models: absent = machineTiers() derives it.
   */
  memoryTier?: Sourced<Int16Array>;
  /** What memory each node holds (`dram`, `hbm`, `cxl`, …), null = not said; display only. */
  memoryKind?: Array<string | null>;
  /** The description's cpu model string (`/proc/cpuinfo` model name, perf.data cpudesc), null = not said. Optional for hand-built models. */
  cpuModel?: string | null;
  /**
   * The cpu clock the description records, GHz (TraceMachine.cpuClockGHz: the recording machine's,
   * from cpufreq, the cpu model string or /proc/cpuinfo), with its provenance; absent = not
   * recorded. The traffic model's clock (machine/traffic.ts) takes it first.
   */
  clockGHz?: Sourced<number | null>;
  /** Idle load latency, ns, row = accessing node index, column = memory node index (nodeCount²). */
  idleLatencyNs: Sourced<Float64Array>;
  /** SLIT distances, nodeCount² (row-major). */
  distances: Float64Array;
  /** Directed links. */
  links: Array<{ from: NodeIndex; to: NodeIndex; capacityBytesPerS: number }>;
  linkSource: Provenance;
  /**
   * routes[from * nodeCount + to]: the links crossed, in order, by the data of an access made by a
   * cpu on node index `from` to memory on node index `to` (data flows to → … → from). Empty when
   * from === to. Asymmetric routing is allowed: routes[a→b] need not mirror routes[b→a].
   */
  routes: LinkIndex[][];
  routeSource: Provenance;
}

/**
 * Accesses aggregated over one replay window: one entry per (thread, page) pair seen in the
 * window, scaled to estimated real accesses (samples × weight). Entries are sorted by page, then
 * thread.
 */
export interface AccessWindow {
  index: number;
  startUs: number;
  endUs: number;
  /** Samples (rows) that fell in the window, before aggregation. */
  sampleCount: number;
  thread: Int32Array;
  page: Int32Array;
  loads: Float64Array;
  stores: Float64Array;
  // Optional: absent on hand-built windows (the defaults below apply).
  /**
   * The closed loop the window's threads ran in, calibrated on the recording (engine/windows.ts,
   * "Closed loop"; docs/engine.md §3): the simulator solves T = computeUs + A·R(T)/concurrency
   * for every placement. Absent on hand-built windows: then the window's length and `stallShare`
   * define it (see simulate.ts, defaultLoop).
   */
  loop?: WindowLoop;
  /** Hand-built windows only (absent `loop`): share of the window's time stalled on memory at idle local latency (0..1); absent = MEMORY_STALL_SHARE. */
  stallShare?: number;
  /** Accesses each counted access stands for in rates (hinting-fault recordings: an assumed scale); absent = 1. */
  accessScale?: number;
}

/**
 * A window's closed loop (docs/engine.md, "Closed loop"): its threads keep `concurrency`
 * accesses in flight while they stall and compute for `computeUs` between them, so under any
 * placement the window takes T = computeUs + A · L(A/T) / concurrency (A the
 * window's accesses, L the model's calibrated mean latency at that rate). Calibrated so that the recorded
 * placement takes the recorded time at the recorded latency.
 */
export interface WindowLoop {
  /** Time the window's threads spend not waiting for memory, µs: the same under every placement. */
  computeUs: number;
  /** Accesses in flight over the window's threads while they wait (the closed loop's population). */
  concurrency: number;
  /**
   * The calibration on the recording's measured latency (1 and 1 when nothing measured it): the
   * model's latency is ι·idle + contention + κ·queueing; κ first (the recording's loaded latency
   * attributed to the queues of the resources it loaded, at most QUEUE_SCALE_MAX), then ι for the rest.
   */
  idleScale: number;
  queueScale: number;
  /** The resources the queue scale applies to (those within BOTTLENECK_BAND of the busiest under the recording); absent: all. */
  bottleneck?: { mc: Uint8Array; link: Uint8Array; xb: Uint8Array };
  /** Threads with accesses in the window. */
  threads: number;
  /** The most accesses those threads' cores can keep in flight (threads × outstanding-miss limit, rule MLP0): Little's law bounds latency by this ÷ the delivered rate. */
  maxConcurrency: number;
}

/** A window's bounds and size, known without building its entries. */
export interface WindowInfo {
  index: number;
  startUs: number;
  endUs: number;
  /** Samples (rows) that fell in the window, before aggregation. */
  sampleCount: number;
}

/**
 * The windows of a replay, in time order. Built from a trace they are aggregated on demand
 * (windows.ts, TraceWindows): a window is built when asked for and kept only while a bounded
 * cache has room, so the engine's memory follows pages and threads, not samples. Iterating
 * builds each window in turn; `info` never builds one. Tests and small inputs use a plain array
 * through windowsOf().
 */
export interface WindowSource extends Iterable<AccessWindow> {
  readonly length: number;
  info(index: number): WindowInfo;
  get(index: number): AccessWindow;
  /**
   * Optional: for each placement, window `index`'s accesses by (accessing node, serving node), loads
   * and stores apart (what simulate.ts's accessMatrix gives from the built window), summed straight
   * from the trace's rows without building the window. The steady-state pass uses it
   * (engine/steady.ts).
   */
  accessMatrices?(index: number, placements: readonly Placement[], nodeCount: number): Array<{ loads: Float64Array; stores: Float64Array }>;
  /**
   * Optional: window `index`'s timing fields (as on the built window), remembered once the window
   * has been built, so that passes using accessMatrices need not build it again.
   */
  timing?(index: number): WindowTiming;
}

/** The fields of a window the simulator needs besides its accesses. */
export type WindowTiming = Pick<AccessWindow, 'loop' | 'stallShare' | 'accessScale'>;

/** A WindowSource over windows already in memory. */
export function windowsOf(windows: readonly AccessWindow[]): WindowSource {
  return {
    length: windows.length,
    info: (i) => {
      const w = windows[i]!;
      return { index: w.index, startUs: w.startUs, endUs: w.endUs, sampleCount: w.sampleCount };
    },
    get: (i) => windows[i]!,
    [Symbol.iterator]: () => windows[Symbol.iterator](),
  };
}

/** What the engine knows about the recording, independent of any placement. */
export interface ReplayInput {
  machine: MachineModel;
  threadCount: number;
  pageCount: number;
  /** Bytes per page row (4096). */
  pageBytes: number;
  /** Window length, µs. */
  windowUs: number;
  /** Windows in time order, built on demand (WindowSource). Policies step through them once (PolicyRun). */
  windows: WindowSource;
  /** Placement observed at the start of the recording (first-touch result, threads' first node). */
  initial: Placement;
  /** First node each page was touched from per thread (first-touch owner thread; -1 unknown). */
  firstTouchThread: Int32Array;
  /**
   * Node index of the cpu that made each page's recorded first touch (-1 unknown: no first-touch
   * fault was recorded, or its cpu is not in the machine). Optional for hand-built inputs.
   */
  firstTouchNode?: Int16Array;
  /**
   * Time of each page's recorded first touch (`pages.first_touch_us`), µs since the capture start;
   * NaN unknown (no first-touch fault recorded). Optional for hand-built inputs (engine/arrivals.ts).
   */
  pageFirstUs?: Float64Array;
  /** Counters from the trace when present (L3MPKI, IPC): null when the trace has none. */
  counters: { instructions: number; cycles: number; l3Misses: number } | null;
  // Optional, so that hand-built inputs (tests) need not give them.
  /** Virtual address of each page row (pages.address), for address-ordered rules and plans. */
  pageAddress?: BigUint64Array;
  /** Kernel tid of each thread row (threads.tid), for plans. */
  threadTid?: Int32Array;
  /**
   * The recording's allocation objects with a site (allocation tables, format v2), [start, end)
   * and a label (the site): weighted interleave counts pages per object and can weight each site
   * apart (policies/weighted-interleave.ts).
   */
  objectRanges?: Array<{ start: bigint; end: bigint; label: string }>;
  /**
   * The recording's mappings (regions table) and the mapping of each page row, for the rules that
   * follow the kernel per VMA (AutoNUMA's scanner, policies/numa-scan.ts). Absent for hand-built
   * inputs: every page is then treated alike.
   */
  regions?: ReplayRegions;
  /** Recorded thread node per window (thread_placements; last observation before the window ends). */
  observedThreadNode?: Int16Array[];
  /** What the input builder assumed or dropped, in words (cache-hit samples skipped, fallbacks used). */
  notes?: string[];
  /**
   * What the recording's rates imply that the machine or its cores cannot carry (engine/windows.ts,
   * FeasibilityReport), filled in as windows are built: complete after a pass over every window.
   * Absent on estimates and hand-built inputs.
   */
  feasibility?: FeasibilityReport;
  /** Set when the accesses are an estimate, not samples (ReplayInputOptions.accessEstimate). */
  estimate?: 'uniform';
  /**
   * Set when the access samples are NUMA hinting faults (samples.event `access-fault`, recorded
   * without a PMU): measured pairs of thread and page, about one per page per scan pass of the
   * kernel's balancer, so shares are meaningful and absolute rates are not. Rate gates (Carrefour's
   * MAPTU) cannot be evaluated on them.
   */
  accessSource?: 'hinting-faults';
  /**
   * Set when only the windows overlapping a time range are replayed (ReplayInputOptions.timeRangeUs):
   * window i of this input is window `firstWindow + i` of the whole trace (`totalWindows` windows);
   * startUs–endUs is the span the kept windows cover, requested* the range asked for (µs).
   */
  timeRange?: ReplayTimeRange;
  /**
   * Pages whose node the trace records (pages.node); the others were placed by fallback (first
   * toucher's node). 0 means the trace has no observed page placement: the default baseline is then
   * first-touch (analyze.ts, "Baselines"). Undefined for hand-built inputs (counted as recorded).
   */
  pagesWithRecordedNode?: number;
  /**
   * Set by retarget(): the recording's own machine and placement, so that predicted times stay
   * anchored on what actually ran on the recorded machine (analyze.ts, "Anchoring").
   */
  recorded?: { machine: MachineModel; initial: Placement; observedThreadNode?: Int16Array[] };
}

/** A trace's mappings as the engine uses them (ReplayInput.regions; analyze/replay-input.ts). */
export interface ReplayRegions {
  list: ReplayRegion[];
  /** Row of `list` holding each page row (pages.region), -1 unknown. */
  pageRegion: Int32Array;
  /** False when the trace has no `regions.prot` column (written before it existed, or synthetic): every `prot` is then null. */
  protRecorded: boolean;
}

/** One mapping (a row of the regions table). */
export interface ReplayRegion {
  start: bigint;
  end: bigint;
  /** `heap`, `stack`, `anon`, `file`, `shm`, `vdso`, `other`. */
  kind: string;
  path: string | null;
  /** numa_maps policy as printed (`default`, `bind:1`, `bind=balancing:0-1`, …); `unknown` if not read. */
  policy: string;
  /** /proc/PID/maps permissions (`r--p`, `rw-s`), null unknown. */
  prot: string | null;
  /** numa_maps kernelpagesize_kB × 1024 (region_placements.page_size, the largest seen), 0 unknown. */
  kernelPageBytes: number;
}

export interface ReplayTimeRange {
  requestedStartUs: number;
  requestedEndUs: number;
  startUs: number;
  endUs: number;
  firstWindow: number;
  totalWindows: number;
}

/**
 * Where threads and pages are. A replicated page has a copy on every node that reads it (reads
 * are local, writes go to the home node `pageNode`).
 */
export interface Placement {
  threadNode: Int16Array;
  pageNode: Int16Array;
  replicated: Uint8Array;
  /**
   * Optional, with `replicated`: the nodes that hold a copy of each replicated page, home node
   * included: `sets[setOf[p]]` (node indices, ascending; `setOf[p]` = −1: not said, i.e. a copy on
   * every node that reads it). Set by policies that know where their copies are (replicate), so
   * that a store to a replicated page can write every copy. Arrays are never changed in place.
   */
  replicas?: ReplicaSets;
}

/** Per page, the set of nodes holding its copies (Placement.replicas). */
export interface ReplicaSets {
  /** Index into `sets` per page row, −1 = not said. */
  setOf: Int32Array;
  /** Distinct node sets (node indices, ascending, the home node included). */
  sets: NodeIndex[][];
}

export interface WindowMetrics {
  /** Share of accesses served by the accessing thread's own node, 0..1. */
  localAccessRatio: number;
  /** Mean memory access latency after queueing, ns. */
  memoryLatencyNs: number;
  /** Bytes/s served by each node's memory controller. */
  mcLoadBytesPerS: Float64Array;
  /** mcLoad / mcBandwidth, 0..1 after the throughput feedback settles. */
  mcUtilisation: Float64Array;
  /** Sample standard deviation (N−1, as Carrefour's gsl_stats_sd_m) of per-node MC load, % of the mean. */
  mcImbalancePct: number;
  /** Bytes/s on each directed link. */
  linkLoadBytesPerS: Float64Array;
  linkUtilisation: Float64Array;
  /** Mean link utilisation, %. */
  interconnectUsagePct: number;
  /** Sample std-dev of link load, % of the mean (0 with no links). */
  interconnectImbalancePct: number;
  /** Memory accesses per µs in the window (Carrefour's MAPTU). */
  accessesPerUs: number;
  /** Predicted duration of the window under this placement, µs. */
  predictedUs: number;
  /** Memory accesses of the window (samples × weight, before any access scale): the weight of its metrics in overall means. Optional for hand-made metrics. */
  accesses?: number;
  /** Loads among them: the weight of the window's latency in overall means (the latency a PMU measures is the loads'). */
  loads?: number;
  // The why of the prediction (docs/engine.md, "Decomposition"): predictedUs = computeUs + stallUs.
  /** Time not waiting for memory, µs (the window's loop: the same for every placement). */
  computeUs: number;
  /** Time waiting for memory, µs: accesses × memoryLatencyNs / concurrency. */
  stallUs: number;
  /** Accesses in flight while waiting (the loop's population). */
  concurrency: number;
  /** Accesses-weighted idle part of memoryLatencyNs (before queueing), ns, after the latency scale. */
  idleLatencyNs: number;
  /** The window's calibration (WindowLoop): idle and queueing scales. */
  idleScale: number;
  queueScale: number;
  /** Mean delay each memory controller adds to an access, averaged over all the window's accesses, ns (Σ = the controllers' part of memoryLatencyNs). */
  mcDelayNs: Float64Array;
  /** Same for each directed link. */
  linkDelayNs: Float64Array;
  /** Same for the crossbars (rule XB0), summed over nodes; 0 without. */
  crossbarDelayNs: number;
  /** Little's law: the highest mean latency the cores' outstanding-miss limit allows at the delivered rate, ns (Infinity when unknown). */
  latencyBoundNs: number;
}

export type SimulateWindow = (
  machine: MachineModel,
  window: AccessWindow,
  placement: Placement,
  windowUs: number,
  pageBytes: number,
) => WindowMetrics;

/**
 * What a policy can decide, in the order reports list them. The app's filters, the URL's `dkind`
 * and the CLI's output all take this list.
 */
export const DECISION_KINDS = ['migrate', 'interleave', 'replicate', 'pin-threads', 'enable', 'disable', 'abort', 'none'] as const;
export type DecisionKind = (typeof DECISION_KINDS)[number];

/** One decision, explained in words with the numbers that drove it. */
export interface Decision {
  window: number;
  kind: DecisionKind;
  /** e.g. "page range 0x7f..000–0x7f..fff interleaved: accessed from 3 nodes, MC imbalance 142% > 35%". */
  explanation: string;
  pages?: number;
  /** Page row indices the decision applies to, when it is about pages (may be ranges collapsed by the UI). */
  pageIndices?: Int32Array;
  threads?: number[];
  toNodes?: NodeIndex[];
}

export interface PolicyReplay {
  policy: string;
  /** Metrics per window under the policy's placement. */
  windows: WindowMetrics[];
  /** Placement at the end of each window (threadNode per window; pages only at the end, to keep memory ∝ pages). */
  threadNodeByWindow: Int16Array[];
  finalPlacement: Placement;
  migratedPages: number;
  migratedBytes: number;
  decisions: Decision[];
  /** AsymSched only. */
  placementsEvaluated?: number;
  placementsTotal?: number;
  /**
   * True when the policy's placement is set at allocation and never changes by the policy's own
   * decisions (observed, first-touch, interleave, manual): the replay is then its own steady state.
   */
  placedAtAllocation?: boolean;
  /**
   * True when the policy places pages only: its threads follow the recording's own thread
   * placement window by window (`ReplayInput.observedThreadNode`: the program's and the
   * scheduler's moves), so its steady state does too.
   */
  threadsFollowRecording?: boolean;
  /** The steady-state prediction (engine/steady.ts), filled in by replayAll after the replay pass. */
  steadyState?: SteadyState;
  /**
   * weighted-interleave only: the weights replayed (node indices), per process and per object site,
   * and the engine's recommendation with its curve when the weights were not given.
   */
  weighted?: WeightedReplay;
  /**
   * replicate only: what was copied where and what the copies cost (policies/replicate.ts):
   * per unit (allocation object or contiguous page range), its read share, reader nodes, the
   * nodes given a copy and the bytes added, and the totals per node.
   */
  replication?: ReplicationReplay;
}

/** What a replicate replay copied (policies/replicate.ts; docs/policies.md, "Replicate"). */
export interface ReplicationReplay {
  /** Share of loads (loads / (loads + stores), 0..1) a unit needs over the recording to be replicated. */
  readShareMin: number;
  /** The selector given (`object=TEXT`, `address=0xA-0xB`), null = every unit. */
  selector: string | null;
  /** How units were cut: `objects` (allocation objects and contiguous ranges between them) or `ranges` (contiguous page ranges only). */
  unitsFrom: 'objects' | 'ranges';
  /** Units read from ≥ 2 nodes (the candidates), replicated or not, in address order. */
  units: ReplicationUnit[];
  /** Pages replicated (their copies are on `copyNodes` of their unit). */
  pagesReplicated: number;
  /** Bytes the copies add, per node index: pages × page size × (copies − 1) in all. */
  addedBytesByNode: number[];
  addedBytes: number;
  /** Store accesses of replicated units (over the recording) and the store flows they make when each writes every copy. */
  storesOnReplicated: number;
  storeFlowsOnReplicated: number;
  /** Whether every node's memory size is known (else copies on nodes of unknown size are not checked). */
  capacityKnown: boolean;
}

export interface ReplicationUnit {
  /** `object LABEL` or `pages 0x…–0x…`. */
  label: string;
  kind: 'object' | 'range';
  /** First byte and one past the last (hex), null without page addresses. */
  startAddress: string | null;
  endAddress: string | null;
  pages: number;
  /** Estimated accesses over the recording. */
  loads: number;
  stores: number;
  /** loads / (loads + stores). */
  readShare: number;
  /** Nodes whose threads read it (node indices, ascending). */
  readerNodes: NodeIndex[];
  /** Home nodes of its pages (node indices, ascending). */
  homeNodes: NodeIndex[];
  /** Nodes that get a copy (readers that are not home to all its pages); empty when not replicated. */
  copyNodes: NodeIndex[];
  /** Bytes the copies add, per node index (zeros when not replicated), and in all. */
  addedBytesByNode: number[];
  addedBytes: number;
  /** Loads served by another node than the reader's under the recorded placement: what the copies make local. */
  remoteLoads: number;
  replicated: boolean;
  /** Why not, in words (`null` when replicated). */
  notReplicated: string | null;
}

/** What a weighted-interleave replay used (policies/weighted-interleave.ts). */
export interface WeightedReplay {
  process: { nodes: NodeIndex[]; weights: number[] };
  objects: Array<{ label: string; weights: { nodes: NodeIndex[]; weights: number[] }; dramShare: number }>;
  /** The recommendation, null when the weights were given. */
  recommendation: WeightRecommendation | null;
  /**
   * The ranges pages were counted in: page rows in address order (`order`), the index in `order`
   * where each range starts, and each range's weights (−1 = the process's, else an index into
   * `objects`). A plan states each range as it is (plan/build.ts).
   */
  ranges: { order: Int32Array; rangeStart: number[]; rangeWeights: Int32Array };
}
/** Nodes and their weighted-interleave weights (integers 1–255), same order (node indices). */
export interface NodeWeights {
  nodes: NodeIndex[];
  weights: number[];
}
/** One point of the curve: predicted time with this share of the pages on the fast side. */
export interface WeightCurvePoint {
  /** Share of pages on the fast side (the nodes with cpus: DRAM), 0..1. */
  dramShare: number;
  predictedUs: number;
}

export interface WeightRecommendation {
  /** Fast side (nodes with cpus, or the fastest tier) and slow side (memory-only nodes, or the other tiers), node indices. */
  fast: NodeIndex[];
  slow: NodeIndex[];
  /** How the sides were chosen, in words. */
  sides: string;
  /** The recommended weights (nodes with a zero share left out). */
  weights: NodeWeights;
  /** Share of pages on the fast side under the recommended (integer) weights. */
  dramShare: number;
  /** Predicted time under the recommended weights, µs (the fluid model below). */
  predictedUs: number;
  /** The optimum of the curve before rounding to integer weights. */
  optimum: WeightCurvePoint;
  /** Starting point: shares in proportion to the nodes' sustained bandwidth. */
  bandwidthRatio: { weights: NodeWeights; dramShare: number; predictedUs: number };
  /** All pages on the fast side (DRAM alone, by bandwidth among its nodes). */
  dramOnlyUs: number;
  /** Plain interleave over the same nodes, equal weights. */
  equalUs: number;
  /** Predicted time against the fast-side share, sorted by share. */
  curve: WeightCurvePoint[];
  /** Shares whose predicted time is within policies/weighted-interleave.ts FLAT_BAND of the optimum's: how flat the optimum is. */
  flat: { band: number; fromShare: number; toShare: number };
  /** Per object site (allocation tables), when one placed apart predicts faster than the process weights. */
  objects: Array<{ label: string; weights: NodeWeights; dramShare: number }>;
  /** Method and assumptions, in words. */
  method: string;
}


/**
 * A policy's steady state: its converged placement held over every window of the recording ("had
 * this policy been in force from the start"). docs/engine.md, "Steady state".
 */
export interface SteadyState {
  /**
   * `allocation`: the placement is set at allocation (the replay is the steady state, same windows);
   * `unchanged`: the replay never changed the placement (same windows);
   * `final`: the placement at the end of the replay, which one more round of the policy over the
   * recording's last windows with accesses left (materially) as it was;
   * `continued`: the replay ended still changing; the policy kept running over the recording's last
   * windows with accesses until a round changed nothing material (or CONTINUATION_MAX_ROUNDS).
   */
  basis: 'allocation' | 'unchanged' | 'final' | 'continued';
  /** The placement held (null for `allocation`: the replay's own placement, threads as replayed). */
  placement: Placement | null;
  /** Metrics per window under the held placement (the replay's own array for `allocation`/`unchanged`). */
  windows: WindowMetrics[];
  /**
   * First window of the replay from which its placement no longer changed materially (pages moved
   * afterwards ≤ CONVERGED_MOVE_SHARE of the pages, no thread moved); null when the replay ended
   * still changing (`continued`).
   */
  convergedAtWindow: number | null;
  /** Rounds of continuation run (0 unless `continued`; 1 for `final`, the confirming round). */
  continuationRounds: number;
  /** Pages the continuation moved on top of the replay's (not in the replay's migratedPages). */
  continuationMovedPages: number;
}

export interface ReplayOptions {
  seed: number;
  simulate: SimulateWindow;
  /**
   * Also compute each replay's steady state (engine/steady.ts). analyze() asks for it by default
   * (it is the headline); replayAll and Policy.replay compute it only when this is true.
   */
  steadyState?: boolean;
}

/**
 * A replay in progress, as a generator: it yields the index of the window it needs next and is
 * resumed with that window; it returns the PolicyReplay after the last one. Every policy asks for
 * windows 0, 1, … in order, once each, so several policies can step through one pass over the
 * trace (engine/run.ts, replayAll) and no window need stay in memory.
 */
export type PolicyRun = Generator<number, PolicyReplay, AccessWindow>;

export interface Policy {
  id: string;
  /** One line: what it does and its source. */
  description: string;
  /** Starts a replay (see PolicyRun). */
  run(input: ReplayInput, options: ReplayOptions): PolicyRun;
  /** The whole replay on its own: run() driven over input.windows. */
  replay(input: ReplayInput, options: ReplayOptions): PolicyReplay;
}

/** One measured loaded-latency point: load threads delivering `deliveredBytesPerS` while a chase saw `latencyNs`. */
export interface LoadedLatencyPoint {
  deliveredBytesPerS: number;
  latencyNs: number;
}

/** What the recording's rates imply that the machine or its cores cannot do, accumulated as windows are built. */
export interface FeasibilityReport {
  windows: number;
  /** Windows whose samples × weights imply more traffic through some resource than its capacity. */
  bandwidthWindows: number;
  worstBandwidth: { window: number; resource: string; utilisation: number; bytesPerS: number; capacityBytesPerS: number; capacitySource: string } | null;
  /** Windows whose rate × latency needs more accesses in flight per thread than the cores' outstanding-miss limit. */
  issueWindows: number;
  worstIssue: { window: number; inFlightPerThread: number; limit: number } | null;
  /** Windows calibrated on a measured latency, and those where the model needed more than its bounds (κ at QUEUE_SCALE_MAX, ι above 1.5 or at IDLE_SCALE_MIN). */
  calibrated: number;
  offModel: number;
  worstOffModel: { window: number; measuredNs: number; modelNs: number; idleScale: number; queueScale: number } | null;
}
