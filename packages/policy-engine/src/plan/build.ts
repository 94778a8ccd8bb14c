/**
 * A replay's final placement (or the placement given: a policy's steady state) → a plan (docs/plan-format.md) for the recorded process.
 *
 * Pages: every page row with an address gets the replay's final node; rows are walked in address
 * order and cut into contiguous stretches (next address = this address + page size). In a stretch,
 * maximal runs of pages with the same final node become `move` ranges; where the final nodes
 * alternate (runs shorter than MIN_MOVE_RUN_PAGES, over ≥ 2 nodes, at least two pages per node) and
 * page i of them is on node i mod n of those nodes (in the order the run cycles through them), the runs merge into one
 * `interleave` range: the plan reaches the placement page by page, so its pages to move are the
 * placement's (otherwise the short runs stay `move` ranges). Ranges in which no page would change
 * node are left out (kept with `includeInPlace`). Replicated pages cannot be expressed (move_pages has no replication) and are
 * left out, counted in the summary; a replicate replay (PolicyReplay.replication), which only
 * replicates, is refused (PlanBuildError: its copies are a code change, replicationNoPlan).
 * Threads: a thread whose final node differs from its last observed node (thread_placements,
 * else the replay's first window) is pinned to its final node; with `threadIdentity:
 * 'order-and-name'` each pin also carries the thread's creation order and name, so that
 * `numascope run` can find it in a new run.
 * Objects: with `objects` (the recording's allocations, see objects.ts), one entry per allocation
 * site with the placement of its pages, for `numascope run`.
 */
import type { Placement, PolicyReplay } from '../model/contract.js';
import { bytesText } from '../policies/replicate.js';
import { numericColumn, stringColumn, timeColumn } from '../trace/columns.js';
import type { Trace } from '../trace/types.js';
import { planEnvelope, RangeWriter } from './ranges.js';
import { buildObjectEntries, pagesInRangeOf, type AllocationObjectInput, type ObjectEntryOptions } from './objects.js';
import { PLAN_LIMITS, validatePlan, type Plan, type PlanThreadPin } from './schema.js';

/** Same-node runs shorter than this, inside an alternating stretch, are read as interleaving. */
export const MIN_MOVE_RUN_PAGES = 4;

export interface BuildPlanOptions {
  /** ISO time the plan is made (pass it in: the engine reads no clock). */
  createdAt: string;
  /** Trace file name, informational. */
  traceName?: string | null;
  seed?: number | null;
  /** One line for source.summary; default: a count of what the plan does. */
  summary?: string;
  /** Reason text per page range / thread; default: from the replay's policy id. */
  reason?: string;
  /**
   * The placement the plan reaches, instead of the replay's final one: analyze's PolicyResult.placement,
   * the steady-state (converged) placement of the policy, which is what its headline predicts.
   */
  placement?: Placement;
  /** Words for that placement in the default reason (e.g. "steady-state placement"). */
  placementLabel?: string;
  /**
   * The recording's allocations (one row each, see objects.ts): the plan then gets `objects[]`,
   * a placement per allocation site that `numascope run --plan` applies to the next run.
   */
  objects?: readonly AllocationObjectInput[];
  objectOptions?: ObjectEntryOptions;
  /**
   * How thread pins name their thread: `tid` (this process only, the default) or
   * `order-and-name`: also the creation order (rank of the tid among the process's threads, the
   * main thread 0) and the name, which a new run of the program has too.
   */
  threadIdentity?: 'tid' | 'order-and-name';
  /**
   * A weighted-interleave replay (PolicyReplay.weighted) is written as `weighted-interleave` ranges
   * with its weights (default); false: as move and interleave ranges like any placement.
   */
  weighted?: boolean;
  /** System-wide weights to carry in the plan (`systemWeights`), by node id: applied only with apply's explicit flag. */
  systemWeights?: { weights: Record<string, number>; reason: string };
  /**
   * Also keep ranges in which no page would change node: a plan that states where every page is
   * to be, so that its dry run checks the placement against the kernel's (the live loop's check
   * of a recording for which nothing is recommended). Default false.
   */
  includeInPlace?: boolean;
  /**
   * Only these page rows are planned to move (the selected recommendations' pages): every other
   * page keeps the node the recording last saw it on (in place inside a range, never a move; left
   * out where that node is unknown), so the plan moves exactly the pages the actions count.
   * Default: every page row goes where the placement has it.
   */
  pages?: ReadonlySet<number>;
}

export class PlanBuildError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PlanBuildError';
  }
}

export function buildPlan(trace: Trace, replay: PolicyReplay, options: BuildPlanOptions): Plan {
  // replicate's placement is copies, not moves: nothing in it is for `numascope apply`.
  if (replay.replication) throw new PlanBuildError(replicationNoPlan(replay));
  const { manifest, tables } = trace;
  if (!manifest.process) throw new PlanBuildError('the trace records no process (manifest.process is null): a plan needs a pid to target');
  const nodeIds = manifest.machine.nodes.map((n) => n.id);
  const final = options.placement ?? replay.finalPlacement;
  if (final.pageNode.length !== tables.pages.numRows) {
    throw new PlanBuildError(`the replay has ${final.pageNode.length} pages, the trace's pages table ${tables.pages.numRows}: replay this trace, on its own machine`);
  }
  const writer = new RangeWriter(trace, options.includeInPlace ?? false);
  const { address } = writer;
  const bytesOf = (p: number): bigint => writer.bytesOf(p);
  const reason = options.reason ?? `${options.placementLabel ?? 'final placement'} of the ${replay.policy} replay`;

  // Pages in address order (replicated pages left out).
  const currentNode = numericColumn<Int8Array>(tables.pages, 'node');
  const order: number[] = [];
  let replicatedLeftOut = 0;
  for (let p = 0; p < address.length; p++) {
    // A page outside `options.pages` stays where the recording last saw it (its target is its
    // current node: in place, never counted as a move), so it can sit inside a range; one whose
    // node is unknown is left out.
    if (options.pages && !options.pages.has(p) && currentNode[p]! < 0) continue;
    if (final.replicated[p]) replicatedLeftOut++;
    else order.push(p);
  }
  order.sort((a, b) => (address[a]! < address[b]! ? -1 : address[a]! > address[b]! ? 1 : a - b));
  const targetId = (p: number): number => (options.pages && !options.pages.has(p) ? currentNode[p]! : nodeIds[final.pageNode[p]!]!);

  const emit = (rows: number[], action: 'move' | 'interleave', toNodes: number[]): void => {
    writer.push(rows, rows.map((_, i) => (action === 'move' ? toNodes[0]! : toNodes[i % toNodes.length]!)), {
      action,
      toNodes,
      reason:
        action === 'interleave'
          ? `${reason}: ${rows.length} pages spread over nodes ${toNodes.join(',')}`
          : `${reason}: ${rows.length} pages on node ${toNodes[0]}`,
    });
  };
  const emitWeighted = (rows: number[], toNodes: number[], weights: number[], slotIds: number[]): void => {
    writer.push(rows, rows.map((_, i) => slotIds[i % slotIds.length]!), {
      action: 'weighted-interleave',
      toNodes,
      weights,
      reason: `${reason}: ${rows.length} pages weighted-interleaved over nodes ${toNodes.map((n, k) => `${n}×${weights[k]}`).join(', ')}`,
    });
  };

  // Weighted interleave: each range the replay counted pages in becomes one `weighted-interleave`
  // range with its weights (docs/plan-format.md), when the placement is exactly the weighted one;
  // other pages go through the stretches below.
  const weighted = replay.weighted;
  if (weighted && options.weighted !== false) {
    const handled = new Uint8Array(address.length);
    const { order: wOrder, rangeStart, rangeWeights } = weighted.ranges;
    for (let r = 0; r < rangeStart.length; r++) {
      const from = rangeStart[r]!;
      const to = r + 1 < rangeStart.length ? rangeStart[r + 1]! : wOrder.length;
      const w = rangeWeights[r]! >= 0 ? weighted.objects[rangeWeights[r]!]!.weights : weighted.process;
      if (w.nodes.length < 2) continue;
      const rows = Array.from(wOrder.subarray(from, to));
      const total = w.weights.reduce((a, b) => a + b, 0);
      const slots: number[] = [];
      w.nodes.forEach((node, k) => {
        for (let j = 0; j < w.weights[k]!; j++) slots.push(node);
      });
      let exact = true;
      for (let i = 0; i < rows.length && exact; i++) {
        const p = rows[i]!;
        if (final.replicated[p] || final.pageNode[p] !== slots[i % total]) exact = false;
        if (i > 0 && address[p]! !== address[rows[i - 1]!]! + bytesOf(rows[i - 1]!)) exact = false;
      }
      if (!exact || rows.length === 0) continue;
      for (const p of rows) handled[p] = 1;
      emitWeighted(rows, w.nodes.map((i) => nodeIds[i]!), w.weights, slots.map((i) => nodeIds[i]!));
    }
    for (let k = order.length - 1; k >= 0; k--) if (handled[order[k]!]) order.splice(k, 1);
  }

  // Contiguous stretches → same-node runs → move or interleave ranges.
  let s = 0;
  while (s < order.length) {
    let e = s + 1;
    while (e < order.length && address[order[e]!]! === address[order[e - 1]!]! + bytesOf(order[e - 1]!)) e++;
    const stretch = order.slice(s, e);
    s = e;
    const runs: number[][] = [];
    for (const p of stretch) {
      const last = runs[runs.length - 1];
      if (last && targetId(last[0]!) === targetId(p)) last.push(p);
      else runs.push([p]);
    }
    let r = 0;
    while (r < runs.length) {
      if (runs[r]!.length >= MIN_MOVE_RUN_PAGES) {
        emit(runs[r]!, 'move', [targetId(runs[r]![0]!)]);
        r++;
        continue;
      }
      let q = r;
      const pages: number[] = [];
      while (q < runs.length && runs[q]!.length < MIN_MOVE_RUN_PAGES) pages.push(...runs[q++]!);
      // The nodes in the order the run cycles through them (page i of an interleave range goes
      // to toNodes[i mod n], so a run that starts on another node than the lowest is still one
      // range). An interleave range only where it puts every page where the placement has it:
      // then the plan reaches the placement page by page, and its pages to move are the
      // placement's (one count from recommendation to apply, issue 30).
      const nodes = [...new Set(pages.map(targetId))];
      const exact = pages.every((p, i) => targetId(p) === nodes[i % nodes.length]);
      if (nodes.length >= 2 && pages.length >= 2 * nodes.length && exact) emit(pages, 'interleave', nodes);
      else for (let k = r; k < q; k++) emit(runs[k]!, 'move', [targetId(runs[k]![0]!)]);
      r = q;
    }
  }

  // Threads.
  const tid = numericColumn<Int32Array>(tables.threads, 'tid');
  const tpTime = timeColumn(tables.thread_placements, 'time_us');
  const tpThread = numericColumn<Uint32Array>(tables.thread_placements, 'thread');
  const tpNode = numericColumn<Int8Array>(tables.thread_placements, 'node');
  // Last and first recorded node of each thread.
  const observed = new Int32Array(tid.length).fill(-1);
  const observedAt = new Float64Array(tid.length).fill(-1);
  const started = new Int32Array(tid.length).fill(-1);
  const startedAt = new Float64Array(tid.length).fill(Infinity);
  for (let i = 0; i < tpTime.length; i++) {
    const t = tpThread[i]!;
    if (t >= tid.length || tpNode[i]! < 0) continue;
    if (tpTime[i]! >= observedAt[t]!) {
      observedAt[t] = tpTime[i]!;
      observed[t] = tpNode[i]!;
    }
    if (tpTime[i]! < startedAt[t]!) {
      startedAt[t] = tpTime[i]!;
      started[t] = tpNode[i]!;
    }
  }
  // A thread is pinned only where the policy placed it: it ends on another node than the one the
  // replay started it on (the recording's first), or a decision pinned it (manual). A policy that
  // places pages only (first-touch, interleave, Carrefour) leaves threads where they run now, even
  // when they moved during the recording.
  const pinnedByDecision = new Set<number>();
  for (const d of replay.decisions) if (d.kind === 'pin-threads') for (const t of d.threads ?? []) pinnedByDecision.add(t);
  const threads: PlanThreadPin[] = [];
  const identity = options.threadIdentity === 'order-and-name' ? threadIdentities(trace) : null;
  const first = replay.threadNodeByWindow[0];
  for (let t = 0; t < Math.min(tid.length, final.threadNode.length); t++) {
    const to = nodeIds[final.threadNode[t]!]!;
    const was = observed[t]! >= 0 ? observed[t]! : first ? nodeIds[first[t]!]! : -1;
    if (to === was || tid[t]! <= 0) continue;
    if (started[t]! >= 0 && to === started[t] && !pinnedByDecision.has(t)) continue;
    const pin: PlanThreadPin = { tid: tid[t]!, toNodes: [to], expectedNode: observed[t]! >= 0 ? observed[t]! : null, reason: `${reason}: thread runs on node ${to}` };
    if (identity) Object.assign(pin, identity(t));
    threads.push(pin);
  }

  // Object entries of a weighted replay carry the weights the replay gave their site.
  const objectWeights = weighted
    ? (label: string) => {
        const own = weighted.objects.find((o) => o.label === label);
        const w = own ? own.weights : weighted.process;
        return w.nodes.length >= 2 ? { nodes: w.nodes.map((i) => nodeIds[i]!), weights: w.weights } : null;
      }
    : undefined;
  const objectResult = options.objects
    ? buildObjectEntries(options.objects, pagesInRangeOf(address, (p) => (final.replicated[p] ? null : targetId(p))), {
        ...options.objectOptions,
        ...(objectWeights && options.weighted !== false ? { weightsFor: objectWeights } : {}),
      })
    : null;

  const { ranges, pagesToMove, bytesToMove } = writer;
  const pagesPerNodeAfter = writer.pagesPerNodeAfter(nodeIds);
  const interleaved = ranges.filter((r) => r.action === 'interleave').length;
  const weightedCount = ranges.filter((r) => r.action === 'weighted-interleave').length;
  const summary =
    options.summary ??
    `${replay.policy}: ${ranges.length - interleaved - weightedCount} move and ${interleaved} interleave ranges${weightedCount > 0 ? `, ${weightedCount} weighted-interleave ranges` : ''} (${pagesToMove} pages), ${threads.length} threads pinned` +
      (replicatedLeftOut > 0 ? `; ${replicatedLeftOut} replicated pages left out (a plan cannot replicate)` : '') +
      (objectResult ? `; ${objectResult.objects.length} allocation sites` : '');
  return validatePlan({
    ...planEnvelope({ ...manifest, process: manifest.process }, { trace: options.traceName ?? null, policy: replay.policy, seed: options.seed ?? null, summary }, options.createdAt),
    pageRanges: ranges,
    threads,
    ...(objectResult ? { objects: objectResult.objects } : {}),
    ...(options.systemWeights ? { systemWeights: options.systemWeights } : {}),
    expected: { pagesToMove, bytesToMove, pagesPerNodeAfter, threadsToPin: threads.length },
  });
}

/**
 * Why a replicate replay has no plan: its per-node copies are made by the program (a code change),
 * and move_pages moves a page, it never copies one.
 */
export function replicationNoPlan(replay: PolicyReplay): string {
  const r = replay.replication!;
  const what =
    r.pagesReplicated > 0
      ? `per-node copies of ${r.pagesReplicated} pages (${bytesText(r.addedBytes)} more memory)`
      : 'per-node copies (none qualified in this recording)';
  return (
    `${replay.policy} is not applicable as a plan: its placement is ${what}, which the program must make itself ` +
    `(a code change: a copy per node that each thread reads from its own node, e.g. llama.cpp --numa mirror, or numa_alloc_onnode and a copy per node); ` +
    `numascope apply moves pages (move_pages) and cannot copy them. See its per-node-copies recommendation`
  );
}

/**
 * Creation order and name of each thread row: its rank among the process's threads by tid (tids
 * grow in creation order until the pid space wraps; the main thread, tid = pid, is 0), and its
 * name when it is a valid comm. Threads that ended before an attached recording began are not
 * counted, which shifts the order: the name is then the better key.
 */
export function threadIdentities(trace: Trace): (t: number) => { order?: number; name?: string } {
  const { tables, manifest } = trace;
  const tid = numericColumn<Int32Array>(tables.threads, 'tid');
  const pid = numericColumn<Int32Array>(tables.threads, 'pid');
  const names = stringColumn(tables.threads, 'name');
  const process = manifest.process?.pid ?? -1;
  const others = [...new Set(Array.from(tid).filter((x, k) => pid[k] === process && x > 0 && x !== process))].sort((a, b) => a - b);
  const rank = new Map(others.map((x, i) => [x, i + 1]));
  rank.set(process, 0);
  return (t) => {
    const out: { order?: number; name?: string } = {};
    const order = pid[t] === process ? rank.get(tid[t]!) : undefined;
    if (order !== undefined && order <= PLAN_LIMITS.maxThreadOrder) out.order = order;
    const name = names[t];
    if (name && new TextEncoder().encode(name).length <= PLAN_LIMITS.maxThreadNameBytes && !/[\0\n]/.test(name)) out.name = name;
    return out;
  };
}
