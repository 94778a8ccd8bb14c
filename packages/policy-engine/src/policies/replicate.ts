/**
 * replicate: a what-if of its own, "had this read-mostly object a copy on every node that reads
 * it" (llama.cpp's `--numa mirror`, the per-node weight copies of inference servers, a lookup
 * table the program copies per node). docs/policies.md, "Replicate".
 *
 * Units: the recording's allocation objects (ReplayInput.objectRanges) and, between them,
 * contiguous page ranges (page rows in address order, cut where the next page is not the next
 * address): the same cuts as weighted interleave (weightedRanges). A unit whose accesses over the
 * recording are ≥ `readShare` loads (default 95 %: Carrefour's replication gate, DCMR ≤ 5 %,
 * CARREFOUR_CONSTANTS.DCMR_MAX_PCT) and which threads on ≥ 2 nodes read is copied onto every
 * reader node: `Placement.replicated` for its pages (loads are then served by the reader's own
 * node) and `Placement.replicas` (the copy nodes, home included) so that a store can write every
 * copy. Homes stay where the recording had them; threads are where the recording had them, window
 * by window. Placed at allocation: the program makes its copies when it loads the data, so nothing
 * migrates and the replay is its own steady state.
 *
 * Memory: each copy adds the unit's pages on that node (pages × page size × (copies − 1) in all).
 * Units are taken in order of the remote loads they save; a unit whose copy does not fit on some
 * reader node (node memory, less the recording's own pages there and the copies already made) is
 * not replicated at all, and its decision says which node lacks room: the placement cannot say "a
 * copy on some readers only" (a replicated page's loads are served by every reader's own node).
 * Nodes of unknown size are not checked, and the decisions say so.
 *
 * Stores to a replicated page must update every copy: one store flow per copy. The decisions and
 * `PolicyReplay.replication` count them (`storeFlowsOnReplicated`); the simulator writes them as
 * Placement.replicas says (engine/simulate.ts).
 */
import { atFirstTouch } from '../engine/arrivals.js';
import type { AccessWindow, Decision, NodeIndex, Placement, Policy, ReplayInput, ReplicaSets, ReplicationReplay, ReplicationUnit, WindowMetrics } from '../model/contract.js';
import { EngineError } from '../model/errors.js';
import { definePolicy } from '../engine/run.js';
import { CARREFOUR_CONSTANTS } from './carrefour.js';
import { recordedThreads, windowLengthUs } from './common.js';
import { pagesByAddress } from './interleave.js';
import { weightedRanges } from './weighted-interleave.js';

/**
 * The default read share, 0.95: Carrefour's replication gate (read ratio ≥ 95 %, i.e. DCMR ≤ 5 %;
 * carrefour-runtime `carrefour.c`, CARREFOUR_CONSTANTS.DCMR_MAX_PCT), applied here per unit over the
 * recording instead of per round over the machine.
 */
export const REPLICATE_DEFAULT_READ_SHARE = 1 - CARREFOUR_CONSTANTS.DCMR_MAX_PCT / 100;
/** Not-replicated units listed as decisions one by one; the rest are counted in one decision (all are in `replication.units`). */
export const REPLICATE_MAX_REFUSAL_DECISIONS = 50;

export interface ReplicateOptions {
  /** Share of loads (0..1) a unit needs over the recording; default REPLICATE_DEFAULT_READ_SHARE. */
  readShare?: number;
  /** Only allocation objects whose label (site) contains this text. */
  object?: string;
  /** Only pages whose address is in [start, end). */
  address?: { start: bigint; end: bigint };
}

const hex = (a: bigint): string => `0x${a.toString(16)}`;

/** Bytes in words, binary units: "512 B", "32.0 KiB", "112.0 MiB", "1.50 GiB". */
export function bytesText(bytes: number): string {
  if (!Number.isFinite(bytes)) return 'unknown';
  const abs = Math.abs(bytes);
  if (abs < 1024) return `${bytes.toFixed(0)} B`;
  if (abs < 1024 ** 2) return `${(bytes / 1024).toFixed(1)} KiB`;
  if (abs < 1024 ** 3) return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
  return `${(bytes / 1024 ** 3).toFixed(2)} GiB`;
}
const mib = bytesText;

/** An estimated access count: "640", "24.8 k", "199 M" (three significant digits above 10 000). */
export function countText(x: number): string {
  const v = Math.round(x);
  if (Math.abs(v) < 10_000) return `${v}`;
  const [d, unit] = Math.abs(v) < 1e6 ? [1e3, 'k'] : Math.abs(v) < 1e9 ? [1e6, 'M'] : [1e9, 'G'];
  const y = v / d;
  return `${Math.abs(y) >= 100 ? y.toFixed(0) : Math.abs(y) >= 10 ? y.toFixed(1) : y.toFixed(2)} ${unit}`;
}

/** The id a replicate policy is replayed under: `replicate`, or `replicate:read=S,object=TEXT,address=0xA-0xB`. */
export function replicateId(options: ReplicateOptions = {}): string {
  const parts: string[] = [];
  if (options.readShare !== undefined) parts.push(`read=${options.readShare}`);
  if (options.object !== undefined) parts.push(`object=${options.object}`);
  if (options.address) parts.push(`address=${hex(options.address.start)}-${hex(options.address.end)}`);
  return parts.length > 0 ? `replicate:${parts.join(',')}` : 'replicate';
}

/**
 * The options of a replicate id: `replicate` → {}; `replicate:read=0.9`, `read=90%`,
 * `object=TEXT`, `address=0xA-0xB`, joined by commas. Null for an id that is not replicate's;
 * EngineError `unknown-policy` naming the problem for a malformed one.
 */
export function parseReplicateId(id: string): ReplicateOptions | null {
  if (id === 'replicate') return {};
  if (!id.startsWith('replicate:')) return null;
  const bad = (why: string) =>
    new EngineError('unknown-policy', `"${id}": ${why}; write replicate:read=S,object=TEXT,address=0xA-0xB (each optional; S a share 0–1 or a percentage, default ${REPLICATE_DEFAULT_READ_SHARE})`);
  const out: ReplicateOptions = {};
  const body = id.slice('replicate:'.length);
  if (body.length === 0) throw bad('nothing after "replicate:"');
  for (const part of body.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) throw bad(`"${part}" is not KEY=VALUE`);
    const key = part.slice(0, eq);
    const value = part.slice(eq + 1);
    if (key in out) throw bad(`${key} given twice`);
    if (key === 'read') {
      const pct = value.endsWith('%');
      const v = Number(pct ? value.slice(0, -1) : value);
      const share = pct ? v / 100 : v;
      if (value.length === 0 || !Number.isFinite(share) || share < 0 || share > 1) throw bad(`read=${value} is not a share from 0 to 1 (or 0–100 %)`);
      out.readShare = share;
    } else if (key === 'object') {
      if (value.length === 0) throw bad('object= needs some text of the object’s site');
      out.object = value;
    } else if (key === 'address') {
      const m = /^(0x[0-9a-f]+)-(0x[0-9a-f]+)$/i.exec(value);
      if (!m) throw bad(`address=${value} is not 0xSTART-0xEND`);
      const start = BigInt(m[1]!);
      const end = BigInt(m[2]!);
      if (end <= start) throw bad(`address=${value}: the end must be after the start`);
      out.address = { start, end };
    } else throw bad(`unknown key "${key}" (read, object, address)`);
  }
  return out;
}

/** What replicate decides for an input: the replicated pages, their copy nodes, the cost and the decisions. */
export interface ReplicationResult {
  replicated: Uint8Array;
  replicas: ReplicaSets;
  replication: ReplicationReplay;
  decisions: Decision[];
}

interface UnitWork {
  unit: ReplicationUnit;
  pages: Int32Array;
  order: number;
}

/** replicationOf: accesses per page over the recording, the nodes that read it (readBy[p·n + node]) and the loads served remotely. */
function pageAccesses(input: ReplayInput): PageAccesses {
  const n = input.machine.nodeCount;
  const home = input.initial.pageNode;
  const loads = new Float64Array(input.pageCount);
  const stores = new Float64Array(input.pageCount);
  const remote = new Float64Array(input.pageCount);
  const readBy = new Uint8Array(input.pageCount * n);
  const threadsAt = recordedThreads(input);
  for (const window of input.windows) {
    const threadNode = threadsAt(window.index);
    for (let k = 0; k < window.thread.length; k++) {
      const p = window.page[k]!;
      const l = window.loads[k]!;
      stores[p]! += window.stores[k]!;
      if (!(l > 0)) continue;
      loads[p]! += l;
      const c = threadNode[window.thread[k]!]!;
      if (c < 0 || c >= n) continue;
      readBy[p * n + c] = 1;
      if (c !== home[p]) remote[p]! += l;
    }
  }
  return { loads, stores, remote, readBy };
}

interface PageAccesses {
  loads: Float64Array;
  stores: Float64Array;
  remote: Float64Array;
  readBy: Uint8Array;
}

/** replicationOf: the units (objects and contiguous ranges, in address order) read from two nodes or more, of those the options select. */
function replicationUnits(input: ReplayInput, options: ReplicateOptions, pageUse: PageAccesses) {
  const n = input.machine.nodeCount;
  const pageBytes = input.pageBytes;
  const home = input.initial.pageNode;
  const { loads, stores, remote, readBy } = pageUse;
  const ranges = weightedRanges(input);
  const address = input.pageAddress;
  if (options.address && !address) throw new EngineError('bad-option', `${replicateId(options)}: the recording has no page addresses to select by`);
  if (options.object !== undefined && !(input.objectRanges && input.objectRanges.length > 0)) {
    throw new EngineError('bad-option', `${replicateId(options)}: the recording has no allocation objects (allocation tables with sites, objects ≥ 64 KiB) to select by; select an address range instead (address=0xA-0xB)`);
  }
  const unitsFrom: ReplicationReplay['unitsFrom'] = input.objectRanges && input.objectRanges.length > 0 ? 'objects' : 'ranges';
  const order = ranges.order.length > 0 ? ranges.order : pagesByAddress(input);
  const works: UnitWork[] = [];
  let selectedUnits = 0;
  let unitsSeen = 0;
  for (let r = 0; r < ranges.rangeStart.length; r++) {
    const from = ranges.rangeStart[r]!;
    const to = r + 1 < ranges.rangeStart.length ? ranges.rangeStart[r + 1]! : order.length;
    let rows = Array.from(order.subarray(from, to));
    const group = ranges.group[rows[0]!]!;
    const label = group >= 0 ? ranges.labels[group]! : null;
    unitsSeen++;
    if (options.object !== undefined && !(label !== null && label.includes(options.object))) continue;
    if (options.address) {
      const { start, end } = options.address;
      rows = rows.filter((p) => address![p]! >= start && address![p]! < end);
      if (rows.length === 0) continue;
    }
    selectedUnits++;
    let l = 0;
    let s = 0;
    let rem = 0;
    const readers = new Uint8Array(n);
    const homes = new Uint8Array(n);
    for (const p of rows) {
      l += loads[p]!;
      s += stores[p]!;
      rem += remote[p]!;
      for (let c = 0; c < n; c++) if (readBy[p * n + c]) readers[c] = 1;
      if (home[p]! >= 0 && home[p]! < n) homes[home[p]!] = 1;
    }
    const readerNodes = nodesOf(readers);
    if (readerNodes.length < 2) continue;
    const startAddress = address ? hex(address[rows[0]!]!) : null;
    const endAddress = address ? hex(address[rows[rows.length - 1]!]! + BigInt(pageBytes)) : null;
    const where = startAddress ? `${startAddress}–${endAddress}` : `page rows ${rows[0]}…${rows[rows.length - 1]}`;
    const unit: ReplicationUnit = {
      label: label !== null ? `object ${label}` : `pages ${where}`,
      kind: label !== null ? 'object' : 'range',
      startAddress,
      endAddress,
      pages: rows.length,
      loads: l,
      stores: s,
      readShare: l + s > 0 ? l / (l + s) : 1,
      readerNodes,
      homeNodes: nodesOf(homes),
      copyNodes: [],
      addedBytesByNode: new Array<number>(n).fill(0),
      addedBytes: 0,
      remoteLoads: rem,
      replicated: false,
      notReplicated: null,
    };
    works.push({ unit, pages: Int32Array.from(rows), order: works.length });
  }
  return { works, unitsFrom, selectedUnits, unitsSeen };
}

/** The replication replicate makes of `input` (pure; one pass over the windows). */
export function replicationOf(input: ReplayInput, options: ReplicateOptions = {}): ReplicationResult {
  const machine = input.machine;
  const n = machine.nodeCount;
  const pageBytes = input.pageBytes;
  const readShareMin = options.readShare ?? REPLICATE_DEFAULT_READ_SHARE;
  const home = input.initial.pageNode;
  const ids = (xs: readonly number[]) => xs.map((i) => machine.nodeIds[i]).join(',');

  // Accesses per page over the recording, the nodes that read it and the loads served remotely.
  const pageUse = pageAccesses(input);
  const { stores } = pageUse;

  // Units: objects and contiguous ranges, in address order.
  const { works, unitsFrom, selectedUnits, unitsSeen } = replicationUnits(input, options, pageUse);

  // Room per node: its memory less the recording's own pages there (NaN size = not checked).
  const room = new Float64Array(n);
  let capacityKnown = true;
  const resident = new Float64Array(n);
  for (let p = 0; p < home.length; p++) if (home[p]! >= 0 && home[p]! < n) resident[home[p]!]! += pageBytes;
  for (let i = 0; i < n; i++) {
    const bytes = machine.memoryBytes.value[i]!;
    if (Number.isFinite(bytes) && bytes > 0) room[i] = Math.max(0, bytes - resident[i]!);
    else {
      room[i] = Infinity;
      if (machine.nodeCpus[i]!.length > 0) capacityKnown = false;
    }
  }

  // Replicate read-mostly units, the most remote loads saved first.
  const replicated = new Uint8Array(input.pageCount);
  const setOf = new Int32Array(input.pageCount).fill(-1);
  const sets: NodeIndex[][] = [];
  const setIndex = new Map<string, number>();
  const added = new Array<number>(n).fill(0);
  const ranked = [...works].sort((a, b) => b.unit.remoteLoads - a.unit.remoteLoads || a.order - b.order);
  const shareText = (x: number) => `${(x * 100).toFixed(1)} %`;
  for (const w of ranked) {
    const u = w.unit;
    if (u.readShare < readShareMin) {
      u.notReplicated = `${shareText(u.readShare)} of its accesses are loads, < ${shareText(readShareMin)} (${countText(u.stores)} stores)`;
      continue;
    }
    // Bytes each reader node needs: the unit's pages whose home is another node.
    const need = new Array<number>(n).fill(0);
    for (const p of w.pages) for (const c of u.readerNodes) if (home[p] !== c) need[c]! += pageBytes;
    const short = u.readerNodes.filter((c) => need[c]! > room[c]!);
    if (short.length > 0) {
      u.notReplicated =
        `the copies do not fit: ` +
        short.map((c) => `node ${machine.nodeIds[c]} needs ${mib(need[c]!)}, has ${mib(room[c]!)} free of ${mib(machine.memoryBytes.value[c]!)}`).join('; ') +
        ` (the recording's pages and the copies made before use the rest); a copy on some readers only cannot be expressed, so none is made`;
      continue;
    }
    for (const c of u.readerNodes) {
      room[c]! -= need[c]!;
      added[c]! += need[c]!;
      u.addedBytesByNode[c] = need[c]!;
    }
    u.copyNodes = u.readerNodes.filter((c) => need[c]! > 0);
    u.addedBytes = need.reduce((a, b) => a + b, 0);
    u.replicated = true;
    for (const p of w.pages) {
      replicated[p] = 1;
      const copies = [...new Set([...u.readerNodes, home[p]!])].sort((a, b) => a - b);
      const key = copies.join(',');
      let k = setIndex.get(key);
      if (k === undefined) {
        k = sets.length;
        sets.push(copies);
        setIndex.set(key, k);
      }
      setOf[p] = k;
    }
  }

  // Stores on replicated pages and the store flows they make when each writes every copy.
  let storesOn = 0;
  let flows = 0;
  for (let p = 0; p < input.pageCount; p++) {
    if (!replicated[p] || !(stores[p]! > 0)) continue;
    storesOn += stores[p]!;
    flows += stores[p]! * sets[setOf[p]!]!.length;
  }
  let pagesReplicated = 0;
  for (let p = 0; p < replicated.length; p++) pagesReplicated += replicated[p]!;
  const addedBytes = added.reduce((a, b) => a + b, 0);
  const selector = options.object !== undefined || options.address ? replicateId({ object: options.object, address: options.address }).slice('replicate:'.length) : null;
  const replication: ReplicationReplay = {
    readShareMin,
    selector,
    unitsFrom,
    units: works.map((w) => w.unit),
    pagesReplicated,
    addedBytesByNode: added,
    addedBytes,
    storesOnReplicated: storesOn,
    storeFlowsOnReplicated: flows,
    capacityKnown,
  };

  // Decisions: the totals first (the CLI's text report shows the first few), then each unit.
  const unchecked = capacityKnown ? '' : '; node memory sizes unknown: copies not checked against them';
  const perNodeText = (bytes: readonly number[]) => {
    const nodes = bytes.map((b, i) => (b > 0 ? i : -1)).filter((i) => i >= 0);
    if (nodes.length === 0) return 'nothing';
    const same = nodes.every((i) => bytes[i] === bytes[nodes[0]!]);
    return same ? `${mib(bytes[nodes[0]!]!)} on each of nodes ${ids(nodes)}` : nodes.map((i) => `node ${machine.nodeIds[i]}: ${mib(bytes[i]!)}`).join(', ');
  };
  const storeText = (s: number, f: number) => (s > 0 ? `; its ${countText(s)} stores each write every copy (${countText(f)} store flows instead of ${countText(s)})` : '; no store seen');
  const decisions: Decision[] = [];
  const made = ranked.filter((w) => w.unit.replicated);
  const refused = works.filter((w) => !w.unit.replicated);
  const scope = selector ? ` selected by ${selector}` : '';
  if (made.length > 0) {
    decisions.push({
      window: 0,
      kind: 'replicate',
      explanation:
        `${made.length} of ${works.length} units${scope} read from ≥ 2 nodes replicated at allocation (${pagesReplicated} pages, ≥ ${shareText(readShareMin)} loads): ` +
        `the copies add ${mib(addedBytes)} (${perNodeText(added)})${storeText(storesOn, flows)}${unchecked}`,
      toNodes: nodesOf(Uint8Array.from(added, (b) => (b > 0 ? 1 : 0))),
    });
  } else {
    decisions.push({
      window: 0,
      kind: 'none',
      explanation:
        selector && selectedUnits === 0
          ? `nothing replicated: no unit of the ${unitsSeen} matches ${selector}` +
            (options.object !== undefined ? `; objects: ${[...new Set((input.objectRanges ?? []).map((o) => o.label))].slice(0, 5).join(', ')}` : '')
          : works.length === 0
            ? `nothing replicated: no ${unitsFrom === 'objects' ? 'object or page range' : 'page range'}${scope} is read from ≥ 2 nodes (${selectedUnits} units)`
            : `nothing replicated: none of the ${works.length} units${scope} read from ≥ 2 nodes qualifies (below)`,
    });
  }
  for (const w of made) {
    const u = w.unit;
    const copies = new Set<number>();
    for (const p of w.pages) for (const c of sets[setOf[p]!]!) copies.add(c);
    decisions.push({
      window: 0,
      kind: 'replicate',
      explanation:
        `${u.label} (${u.pages} pages, ${mib(u.pages * pageBytes)}, home node${u.homeNodes.length > 1 ? 's' : ''} ${ids(u.homeNodes)}) replicated on nodes ${ids(u.copyNodes)}: ` +
        `${shareText(u.readShare)} of its accesses are loads (≥ ${shareText(readShareMin)}), read from ${u.readerNodes.length} nodes (${ids(u.readerNodes)}), ` +
        `${countText(u.remoteLoads)} remote loads made local; the copies add ${mib(u.addedBytes)} (${perNodeText(u.addedBytesByNode)})` +
        storeText(u.stores, storeFlowsOf(w.pages, stores, sets, setOf)) +
        unchecked,
      pages: u.pages,
      pageIndices: w.pages,
      toNodes: [...u.copyNodes],
    });
  }
  for (const w of refused.slice(0, REPLICATE_MAX_REFUSAL_DECISIONS)) {
    const u = w.unit;
    decisions.push({
      window: 0,
      kind: 'none',
      explanation: `${u.label} (${u.pages} pages, read from nodes ${ids(u.readerNodes)}) not replicated: ${u.notReplicated}`,
      pages: u.pages,
      pageIndices: w.pages,
    });
  }
  if (refused.length > REPLICATE_MAX_REFUSAL_DECISIONS) {
    const rest = refused.slice(REPLICATE_MAX_REFUSAL_DECISIONS);
    decisions.push({
      window: 0,
      kind: 'none',
      explanation: `${rest.length} more units read from ≥ 2 nodes not replicated (${rest.reduce((a, w) => a + w.unit.pages, 0)} pages; each with its reason in replication.units)`,
    });
  }
  return { replicated, replicas: { setOf, sets }, replication, decisions };
}

function storeFlowsOf(pages: Int32Array, stores: Float64Array, sets: NodeIndex[][], setOf: Int32Array): number {
  let f = 0;
  for (const p of pages) if (stores[p]! > 0) f += stores[p]! * sets[setOf[p]!]!.length;
  return f;
}

function nodesOf(flags: Uint8Array): NodeIndex[] {
  const out: NodeIndex[] = [];
  for (let i = 0; i < flags.length; i++) if (flags[i]) out.push(i);
  return out;
}

/** The replicate policy with these options (`replicatePolicy()` = the default, id `replicate`). */
export function replicatePolicy(options: ReplicateOptions = {}): Policy {
  const id = replicateId(options);
  return definePolicy({
    id,
    description:
      'Per-node copies (llama.cpp --numa mirror, per-node weight copies): every read-mostly object or page range (≥ 95 % loads, Carrefour\'s replication gate) read from ≥ 2 nodes copied onto each node that reads it, at allocation; copies that do not fit in node memory are not made; stores write every copy; threads where the recording had them.',
    *run(input, replayOptions) {
      const r = replicationOf(input, options);
      // Homes where the recording had them, the copies on top; threads as recorded, window by window.
      const threadsAt = recordedThreads(input);
      const windows: WindowMetrics[] = [];
      const threadNodeByWindow: Int16Array[] = [];
      let threadNode = input.initial.threadNode;
      for (let w = 0; w < input.windows.length; w++) {
        const window: AccessWindow = yield w;
        threadNode = threadsAt(window.index);
        // The program copies a unit once it has written it: a page is not replicated in the window of its first touch (engine/arrivals.ts).
        const placement: Placement = atFirstTouch(input, { threadNode, pageNode: input.initial.pageNode, replicated: r.replicated, replicas: r.replicas }, w);
        windows.push(replayOptions.simulate(input.machine, window, placement, windowLengthUs(window), input.pageBytes));
        threadNodeByWindow.push(threadNode);
      }
      return {
        policy: id,
        windows,
        threadNodeByWindow,
        finalPlacement: { threadNode: threadNode.slice(), pageNode: input.initial.pageNode, replicated: r.replicated, replicas: r.replicas },
        // Copies are made by the program at allocation: nothing migrates.
        migratedPages: 0,
        migratedBytes: 0,
        decisions: r.decisions,
        placedAtAllocation: true,
        replication: r.replication,
      };
    },
  });
}

export const replicateDefaultPolicy: Policy = replicatePolicy();
