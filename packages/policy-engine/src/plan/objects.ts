/**
 * Object entries of a plan (docs/plan-format.md, "Object entries"): a placement per allocation
 * site, which `numascope run --plan` applies to the next run of the program from its first
 * allocation. Addresses change from run to run (ASLR); the call stack as module + address in the
 * module's ELF file does not, so the entry names the site that way.
 *
 * The input is a small typed interface, one row per recorded allocation, so that it can be fed
 * from the trace's allocation tables (docs/alloc-sites.md: allocations, stacks, frames,
 * modules; `alloc_*` in format v2) once they are in the trace, and is tested with hand-made rows.
 * How each site is placed comes from the plan's page placement (the replay's final node of each
 * page in the allocation's address range).
 */
import { PLAN_LIMITS, PLAN_PAGE_BYTES, type PlanObjectEntry, type PlanObjectFrame } from './schema.js';

/** One frame of a recorded allocation's stack. */
export interface AllocationFrameInput {
  /** The module's path as the shim recorded it (modules.path). */
  module: string;
  /** GNU build id, hex (modules.build_id; empty or null when none). */
  buildId: string | null;
  /** Address as in the module's ELF file (frames.module_offset). */
  offset: bigint;
}

/** One recorded allocation. */
export interface AllocationObjectInput {
  /** Human-readable site ("points.c:84 alloc_points"), or null. */
  site: string | null;
  /**
   * Physical frames, innermost first, starting at the allocation site (allocations.site: the
   * first frame outside the allocator and language runtimes). Inlined frames share their physical
   * frame's address and are folded into it (one row per distinct address).
   */
  frames: readonly AllocationFrameInput[];
  /** The allocation's address range in the recorded run, [start, end). */
  start: bigint;
  end: bigint;
}

/** The label objects of one site share: the site's description, else its first frame. */
export function objectLabel(site: string | null, frames: readonly { module: string; offset: bigint | string }[]): string {
  if (site) return site;
  const f = frames[0];
  return f ? `${f.module}+0x${BigInt(f.offset).toString(16)}` : '(no site)';
}

export interface ObjectEntryOptions {
  /** Frames kept per entry, 1 to 16; default 4 (enough to tell apart sites called from several places). */
  maxFrames?: number;
  /**
   * Allocations smaller than this get no entry; default 64 KiB (the shim's default threshold for
   * recording every allocation: smaller ones are sampled, and page policies matter for large objects).
   * Never below the page size.
   */
  minBytes?: number;
  /**
   * Sites whose pages the placement spreads unevenly over several nodes get `weighted-interleave`
   * with weights from their page shares. Off by default: the kernel's weights are system-wide, so
   * `numascope run` refuses such an entry unless the machine has exactly those weights.
   */
  weighted?: boolean;
  /** Reason text; default: the spread of the site's pages. */
  reason?: string;
  /**
   * The weights a weighted-interleave replay gave a site, by its label (objectLabel): the entry is
   * then `weighted-interleave` with these node ids and weights, whatever its pages' spread.
   */
  weightsFor?: (label: string) => { nodes: number[]; weights: number[] } | null;
}

/** Pages of [start, end) per target node id, under the plan's placement. */
export type PagesInRange = (start: bigint, end: bigint) => ReadonlyMap<number, number>;

export interface ObjectEntriesResult {
  objects: PlanObjectEntry[];
  /** Allocations left out, by reason. */
  skipped: { tooSmall: number; noFrames: number; noPages: number; overLimit: number };
}

const hex = (x: bigint): string => `0x${x.toString(16)}`;

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

/** Weights 1-255 in the proportion of `pages`: the exact ratio where it fits, else rounded (the smallest share at least 1). */
export function weightsFromPages(pages: readonly number[]): number[] {
  const g0 = pages.reduce(gcd);
  const reduced = pages.map((p) => p / g0);
  if (Math.max(...reduced) <= 255) return reduced;
  const max = Math.max(...pages);
  const scaled = pages.map((p) => Math.max(1, Math.round((p / max) * 255)));
  const g = scaled.reduce(gcd);
  return scaled.map((w) => w / g);
}

function frameKey(f: PlanObjectFrame): string {
  return `${f.module}\u0000${f.buildId ?? ''}\u0000${f.offset}`;
}

/** The plan frames of an allocation: absolute-path modules only, cut at the first other one. */
function planFrames(frames: readonly AllocationFrameInput[], max: number): PlanObjectFrame[] {
  const out: PlanObjectFrame[] = [];
  for (const f of frames) {
    if (out.length >= max) break;
    if (!f.module.startsWith('/') || f.offset < 0n || f.offset >= 2n ** 64n) break;
    const id = (f.buildId ?? '').toLowerCase();
    out.push({ module: f.module, buildId: /^([0-9a-f]{2}){1,64}$/.test(id) ? id : null, offset: hex(f.offset) });
  }
  return out;
}

interface Group {
  site: string | null;
  frames: PlanObjectFrame[];
  minSize: number;
  maxSize: number;
  pages: Map<number, number>;
  bytes: number;
  count: number;
}

/**
 * Groups allocations by their (cut) stack and turns each group into an object entry: its size
 * range is that of its allocations, its policy the placement of their pages (one node: `bind`;
 * several: `interleave` over them in id order, or `weighted-interleave` with `weighted`). The
 * largest sites come first; at most PLAN_LIMITS.maxObjects entries.
 */
export function buildObjectEntries(allocations: readonly AllocationObjectInput[], pagesInRange: PagesInRange, options: ObjectEntryOptions = {}): ObjectEntriesResult {
  const maxFrames = Math.min(Math.max(1, Math.floor(options.maxFrames ?? 4)), PLAN_LIMITS.maxFramesPerObject);
  const minBytes = Math.max(PLAN_PAGE_BYTES, options.minBytes ?? 64 * 1024);
  const skipped = { tooSmall: 0, noFrames: 0, noPages: 0, overLimit: 0 };
  const groups = new Map<string, Group>();
  for (const a of allocations) {
    const size = a.end - a.start;
    if (size < BigInt(minBytes) || size > BigInt(PLAN_LIMITS.maxObjectBytes)) {
      skipped.tooSmall++;
      continue;
    }
    const frames = planFrames(a.frames, maxFrames);
    if (frames.length === 0) {
      skipped.noFrames++;
      continue;
    }
    const pages = pagesInRange(a.start, a.end);
    let total = 0;
    for (const n of pages.values()) total += n;
    if (total === 0) {
      skipped.noPages++;
      continue;
    }
    const key = frames.map(frameKey).join('\u0001');
    let g = groups.get(key);
    if (!g) {
      g = { site: a.site, frames, minSize: Number(size), maxSize: Number(size), pages: new Map(), bytes: 0, count: 0 };
      groups.set(key, g);
    }
    g.minSize = Math.min(g.minSize, Number(size));
    g.maxSize = Math.max(g.maxSize, Number(size));
    g.bytes += Number(size);
    g.count++;
    for (const [node, n] of pages) g.pages.set(node, (g.pages.get(node) ?? 0) + n);
  }
  const ordered = [...groups.values()].sort((a, b) => b.bytes - a.bytes || (a.site ?? '').localeCompare(b.site ?? ''));
  // Modules are bounded per plan too.
  const modules = new Set<string>();
  const objects: PlanObjectEntry[] = [];
  for (const g of ordered) {
    const mods = g.frames.map((f) => `${f.module}\u0000${f.buildId ?? ''}`);
    const newMods = mods.filter((m) => !modules.has(m));
    if (objects.length >= PLAN_LIMITS.maxObjects || modules.size + new Set(newMods).size > PLAN_LIMITS.maxPlanModules) {
      skipped.overLimit += g.count;
      continue;
    }
    for (const m of newMods) modules.add(m);
    const nodes = [...g.pages.keys()].sort((a, b) => a - b);
    const counts = nodes.map((n) => g.pages.get(n)!);
    const spread = nodes.map((n, i) => `node ${n}: ${counts[i]} pages`).join(', ');
    const reason = options.reason ?? `${g.count} allocation${g.count === 1 ? '' : 's'} of this site; placement: ${spread}`;
    const entry: PlanObjectEntry = {
      site: g.site,
      frames: g.frames,
      size: { min: g.minSize, max: g.maxSize },
      policy: 'bind',
      nodes,
      reason,
    };
    const given = options.weightsFor?.(objectLabel(g.site, g.frames));
    if (given) {
      entry.policy = 'weighted-interleave';
      entry.nodes = given.nodes;
      entry.weights = given.weights;
      entry.reason = options.reason ?? `${g.count} allocation${g.count === 1 ? '' : 's'} of this site; weighted interleave ${given.nodes.map((n, k) => `node ${n}×${given.weights[k]}`).join(', ')}`;
    } else if (nodes.length > 1) {
      const weights = weightsFromPages(counts);
      if (options.weighted && weights.some((w) => w !== weights[0])) {
        entry.policy = 'weighted-interleave';
        entry.weights = weights;
      } else {
        entry.policy = 'interleave';
      }
    }
    objects.push(entry);
  }
  return { objects, skipped };
}

/**
 * PagesInRange over a page list (addresses and target node ids, in any order): pages whose
 * start lies in [start, end).
 */
export function pagesInRangeOf(addresses: ArrayLike<bigint>, targetNode: (page: number) => number | null): PagesInRange {
  const order = Array.from({ length: addresses.length }, (_, i) => i).sort((a, b) => (addresses[a]! < addresses[b]! ? -1 : addresses[a]! > addresses[b]! ? 1 : 0));
  const lowerBound = (x: bigint): number => {
    let lo = 0;
    let hi = order.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (addresses[order[mid]!]! < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  return (start, end) => {
    const out = new Map<number, number>();
    for (let k = lowerBound(start); k < order.length && addresses[order[k]!]! < end; k++) {
      const node = targetNode(order[k]!);
      if (node !== null) out.set(node, (out.get(node) ?? 0) + 1);
    }
    return out;
  };
}
