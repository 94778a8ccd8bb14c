/**
 * A diagnosed fix → a placement plan (docs/plan-format.md) that carries that fix alone, for the
 * recorded process (page ranges, thread pins) and, where the trace has allocation sites, for the
 * program's next launch (object entries, thread pins by creation order and name).
 *
 * - page interleave: the object's pages used from several nodes, interleaved over all nodes
 *   (one `interleave` range per contiguous stretch); object entry: interleave over all nodes.
 * - block-wise interleave: one `move` range per thread block (contiguous pages whose owner thread
 *   runs on one node) to that thread's node, every block kept in the plan even where it is already
 *   on its node so that a dry run or apply checks the whole split; each thread pinned to its node.
 *   No object entry: a block per thread is not a memory policy (bind, interleave) the kernel can
 *   set at allocation time; the plan says so in its summary.
 * - move to a node: `move` ranges of the object's pages to that node; object entry: bind there.
 * - thread binding: the thread pinned to the node it ran on longest; no page range.
 * Fixes that are code changes (padding, replication, thread counts, true sharing) have no plan:
 * the error says why (the fix's noPlan).
 */
import { numericColumn, timeColumn } from '../trace/columns.js';
import type { Trace } from '../trace/types.js';
import { PlanBuildError, threadIdentities } from '../plan/build.js';
import { buildObjectEntries } from '../plan/objects.js';
import { allocationObjectInputs } from '../plan/objects-from-trace.js';
import { planEnvelope, RangeWriter } from '../plan/ranges.js';
import { validatePlan, type Plan, type PlanObjectEntry, type PlanThreadPin } from '../plan/schema.js';
import type { Diagnosis, Issue } from './diagnose.js';

export interface FixPlanOptions {
  /** ISO time the plan is made (the engine reads no clock). */
  createdAt: string;
  traceName?: string | null;
}

/** The issue whose fix has this id (or the issue with this id). */
export function findFix(diagnosis: Diagnosis, id: string): Issue {
  const issue = diagnosis.issues.find((i) => i.fix.id === id) ?? diagnosis.issues.find((i) => i.id === id);
  if (!issue) {
    const known = diagnosis.issues.map((i) => i.fix.id);
    throw new PlanBuildError(
      `no diagnosed fix "${id}"` +
        (known.length > 0 ? `; the fixes of this trace are: ${known.join(', ')}` : '; this trace has no issue above its thresholds') +
        ' (numascope-analyze diagnose TRACE --json lists them under issues[].fix.id)',
    );
  }
  return issue;
}

/** A plan that carries one diagnosed fix. Throws PlanBuildError naming why when the fix has no plan. */
export function planFromFix(trace: Trace, diagnosis: Diagnosis, fixId: string, options: FixPlanOptions): Plan {
  const issue = findFix(diagnosis, fixId);
  const fix = issue.fix;
  if (!fix.planable) throw new PlanBuildError(`fix ${fix.id} (${fix.kind}) has no plan: ${fix.noPlan ?? 'no placement carries it'}`);
  const { manifest, tables } = trace;
  if (!manifest.process) throw new PlanBuildError('the trace records no process (manifest.process is null): a plan needs a pid to target');
  const nodeIds = manifest.machine.nodes.map((n) => n.id);
  const idOfSlot = (slot: number): number => {
    const id = nodeIds[slot];
    if (id === undefined) throw new PlanBuildError(`fix ${fix.id} names node slot ${slot}, which the machine (${nodeIds.length} nodes) does not have`);
    return id;
  };
  const writer = new RangeWriter(trace, true);
  const { address, current } = writer;
  const bytesOf = (p: number): bigint => writer.bytesOf(p);
  const byAddress = (a: number, b: number) => (address[a]! < address[b]! ? -1 : address[a]! > address[b]! ? 1 : a - b);
  const label = issue.object ? issue.object.label : `thread${issue.threads.length === 1 ? '' : 's'} ${issue.threads.join(', ')}`;

  /** Pages (rows) in address order, cut where the next page does not follow (or `cut` says so). */
  const stretches = (pages: number[], cut: (prev: number, next: number) => boolean = () => false): number[][] => {
    const sorted = pages.filter((p) => p >= 0 && p < address.length).sort(byAddress);
    const out: number[][] = [];
    for (const p of sorted) {
      const last = out[out.length - 1];
      const prev = last?.[last.length - 1];
      if (last && prev !== undefined && address[p] === address[prev]! + bytesOf(prev) && !cut(prev, p)) last.push(p);
      else out.push([p]);
    }
    return out;
  };

  let objectPolicy: { policy: 'bind' | 'interleave'; nodes: number[] } | null = null;
  let objectNote: string | null = null;
  switch (fix.kind) {
    case 'page-interleave': {
      if (nodeIds.length < 2) throw new PlanBuildError(`fix ${fix.id}: the machine has one node, nothing to interleave over`);
      const pages = fix.pages ?? [];
      if (pages.length === 0) throw new PlanBuildError(`fix ${fix.id}: the object has no page used from several nodes`);
      for (const run of stretches(pages)) {
        writer.push(run, run.map((_, k) => nodeIds[k % nodeIds.length]!), {
          action: 'interleave',
          toNodes: nodeIds,
          reason: `${fix.id}: ${run.length} pages of ${label} used from several nodes, interleaved over nodes ${nodeIds.join(',')}`,
        });
      }
      objectPolicy = { policy: 'interleave', nodes: nodeIds };
      break;
    }
    case 'block-wise-interleave':
    case 'move-to-node': {
      const target = new Map<number, { node: number; thread: number | undefined }>();
      for (const x of fix.pageNodes ?? []) target.set(x.page, { node: idOfSlot(x.node), thread: x.thread });
      if (target.size === 0) throw new PlanBuildError(`fix ${fix.id}: no page of the object has a thread whose node is known`);
      // One range per block: contiguous pages with the same target node (and owner thread, when known).
      const blocks = stretches([...target.keys()], (a, b) => target.get(a)!.node !== target.get(b)!.node || target.get(a)!.thread !== target.get(b)!.thread);
      for (const block of blocks) {
        const { node, thread } = target.get(block[0]!)!;
        writer.push(block, block.map(() => node), {
          action: 'move',
          toNodes: [node],
          reason:
            fix.kind === 'block-wise-interleave' && thread !== undefined
              ? `${fix.id}: block of thread ${thread} (${block.length} pages of ${label}) on the thread's node ${node}`
              : `${fix.id}: ${block.length} pages of ${label} to node ${node}`,
        });
      }
      const nodes = [...new Set([...target.values()].map((x) => x.node))].sort((a, b) => a - b);
      if (fix.kind === 'move-to-node') objectPolicy = { policy: 'bind', nodes };
      else objectNote = 'no object entry: a block per thread is not a memory policy (bind or interleave) that can be set when the object is allocated, so the next launch gets the thread pins only';
      break;
    }
    case 'thread-binding':
      break;
    default:
      throw new PlanBuildError(`fix ${fix.id} (${fix.kind}) has no plan`);
  }

  // Threads: each of the fix's threads pinned to its node, whether or not it ran there last (the
  // fix is the binding: a dry run reports the pins it would make).
  const tid = numericColumn<Int32Array>(tables.threads, 'tid');
  const tpTime = timeColumn(tables.thread_placements, 'time_us');
  const tpThread = numericColumn<Uint32Array>(tables.thread_placements, 'thread');
  const tpNode = numericColumn<Int8Array>(tables.thread_placements, 'node');
  const lastNode = new Int32Array(tid.length).fill(-1);
  const lastAt = new Float64Array(tid.length).fill(-1);
  for (let i = 0; i < tpTime.length; i++) {
    const t = tpThread[i]!;
    if (t < tid.length && tpNode[i]! >= 0 && tpTime[i]! >= lastAt[t]!) {
      lastAt[t] = tpTime[i]!;
      lastNode[t] = tpNode[i]!;
    }
  }
  const allocations = allocationObjectInputs(trace);
  const identity = allocations.length > 0 ? threadIdentities(trace) : null;
  const threads: PlanThreadPin[] = [];
  const pinned = new Set<number>();
  if (fix.kind === 'block-wise-interleave' || fix.kind === 'thread-binding') {
    for (const { thread, node } of fix.threadNodes ?? []) {
      if (thread >= tid.length || tid[thread]! <= 0 || pinned.has(tid[thread]!)) continue;
      pinned.add(tid[thread]!);
      const to = idOfSlot(node);
      const pin: PlanThreadPin = {
        tid: tid[thread]!,
        toNodes: [to],
        expectedNode: lastNode[thread]! >= 0 ? lastNode[thread]! : null,
        reason: fix.kind === 'thread-binding' ? `${fix.id}: thread ${thread} bound to node ${to}, where it ran longest` : `${fix.id}: thread ${thread} bound to node ${to}, the node of its block`,
      };
      if (identity) Object.assign(pin, identity(thread));
      threads.push(pin);
    }
    if (threads.length === 0) throw new PlanBuildError(`fix ${fix.id}: none of its threads has a tid in the trace to pin`);
  }

  // Object entry: the allocation of the issue's object, placed as the fix places it, for the next launch.
  let objects: PlanObjectEntry[] | undefined;
  if (objectPolicy && issue.object && issue.object.allocation >= 0) {
    const start = BigInt(issue.object.address);
    const end = start + BigInt(issue.object.size);
    const mine = allocations.filter((a) => a.start === start && a.end === end);
    const policy = objectPolicy;
    const result = buildObjectEntries(mine, () => new Map(policy.nodes.map((n) => [n, 1])), {
      reason: `${fix.id}: ${policy.policy === 'bind' ? `bind to node ${policy.nodes[0]}` : `interleave over nodes ${policy.nodes.join(',')}`} from the first allocation`,
    });
    if (result.objects.length > 0) objects = result.objects;
    else objectNote = 'no object entry: the allocation is smaller than 64 KiB or its stack names no module that a new run can find';
  }

  const { ranges, pagesToMove, bytesToMove } = writer;
  const pagesPerNodeAfter = writer.pagesPerNodeAfter(nodeIds);
  const what =
    fix.kind === 'thread-binding'
      ? `${threads.length} thread pinned`
      : `${ranges.length} ${fix.kind === 'page-interleave' ? 'interleave' : 'move'} range${ranges.length === 1 ? '' : 's'} (${pagesToMove} pages to move)` + (threads.length > 0 ? `, ${threads.length} threads pinned` : '');
  const summary = `${fix.kind} for ${issue.kind} (${issue.id}, score ${issue.score} ${issue.scoreUnit}): ${what}` + (objects ? `; ${objects.length} allocation site for numascope run --plan` : '') + (objectNote ? `; ${objectNote}` : '');
  return validatePlan({
    ...planEnvelope({ ...manifest, process: manifest.process }, { trace: options.traceName ?? null, policy: `diagnose:${fix.id}`, seed: null, summary: summary.slice(0, 1000) }, options.createdAt),
    pageRanges: ranges,
    threads,
    ...(objects ? { objects } : {}),
    expected: { pagesToMove, bytesToMove, pagesPerNodeAfter, threadsToPin: threads.length },
  });
}
