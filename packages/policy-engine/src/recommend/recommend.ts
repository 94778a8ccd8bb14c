/**
 * Recommendations from analyze's predictions: each an action with its own predicted gain (the
 * what-if of that action alone against the recording: actionGain; a launch line or policy-wide
 * code change is the whole policy, with the policy's headline numbers), its cost (pages, bytes, seconds at MIGRATION_GBPS) and a
 * confidence that says how measured the inputs are. Actions: move page ranges to a node,
 * interleave ranges over nodes, pin a thread group to nodes, a numactl launch line, or a code
 * change (per-node copies, block-wise split with parallel first touch). Plans (src/plan/) are the
 * machine-applicable subset: kinds `move-ranges`, `interleave-ranges` and `pin-threads`.
 */
import type { Decision, Placement, ReplayInput, SimulateWindow, WindowMetrics } from '../model/contract.js';
import type { PolicyResult } from '../analyze/analyze.js';
import { overallMetrics } from '../engine/overall.js';
import { simulateWindow } from '../engine/simulate.js';
import { atFirstTouch } from '../engine/arrivals.js';
import { recordedThreads, windowLengthUs } from '../policies/common.js';
import { bytesText, countText } from '../policies/replicate.js';
import { formatLatencyNs, formatShare, formatSpeedup, formatTimeUs } from '../format.js';

/**
 * Migration rate used for costs, GB/s (1e9 bytes/s): 1 / 0.3 s per GB, the rate AsymSched's
 * Algorithm 1 uses (as its public re-implementation hzqmwne/asymsched_demo has it). Real
 * move_pages rates vary with page size and contention.
 */
export const MIGRATION_GBPS = 1 / 0.3;
/** A replay must predict at least this speedup to be recommended. */
export const MIN_SPEEDUP = 1.02;
/** Share of a page's accesses one thread must make for the page to count as that thread's. */
export const OWNER_SHARE = 0.8;

export type RecommendationKind = 'move-ranges' | 'interleave-ranges' | 'pin-threads' | 'numactl' | 'code-change';
export type CodeChange = 'padding' | 'per-node-copies' | 'block-wise-split' | 'thread-count';

export interface Recommendation {
  id: string;
  kind: RecommendationKind;
  /** The replay it comes from. */
  policy: string;
  /** One sentence with the numbers. */
  title: string;
  /**
   * The action's own predicted gain: the what-if of this action alone (its pages and threads where
   * the policy's headline placement has them, everything else as recorded) against the same
   * evaluation without it (`basis` 'action'); for a launch line or a policy-wide code change the
   * action is the whole policy (`basis` 'policy'). `policySpeedup` is the policy's whole gain, of
   * which the action is part.
   */
  gain: {
    speedup: number;
    latencyNsBefore: number;
    latencyNsAfter: number;
    localAccessRatioBefore: number;
    localAccessRatioAfter: number;
    basis: 'action' | 'policy';
    policySpeedup: number;
    /**
     * Which headline `speedup` is: `applied-now` (the action applied to the running program: its
     * placement from the recorded state on, its pages' migration time included) for page and
     * thread actions, `next-launch` (the steady state, as `numascope run --plan` or a relaunch
     * starts it) for launch lines and code changes; the other beside it (null: not possible).
     */
    headline: 'applied-now' | 'next-launch';
    appliedNowSpeedup: number | null;
    nextLaunchSpeedup: number;
  };
  cost: { pages: number; bytes: number; seconds: number; migrationGBps: number; threads: number };
  confidence: { level: 'high' | 'medium' | 'low'; score: number; reasons: string[] };
  /** Page rows concerned (move/interleave), thread rows (pin). */
  pageIndices?: Int32Array;
  threads?: number[];
  toNodes?: number[];
  /** numactl launch line. */
  command?: string;
  codeChange?: CodeChange;
  /** Whether buildPlan(trace, replay) can turn it into a plan. */
  planable: boolean;
}

export interface RecommendContext {
  /** Capture sources used (`ibs-op`, `pebs-load`, `page-faults`, `synthetic`, …). */
  sources: string[];
  /** The recorded command, for numactl lines (default `./app`). */
  command?: string[];
  /** Whether the trace is synthetic (origin.kind). */
  synthetic?: boolean;
  /**
   * analyze's anchoring of predicted times (AnalysisResult.timeScale) and simulator: with them a
   * code change that is a placement (block-wise split) gets its own predicted speedup, on the same
   * footing as the policies' (without them it is not listed: its gain would be unknown).
   */
  timeScale?: ArrayLike<number>;
  simulate?: SimulateWindow;
}

/** How much the inputs are measured, 0..1, with the reasons that lowered it. */
export function confidenceOf(input: ReplayInput, context: RecommendContext): Recommendation['confidence'] {
  let score = 1;
  const reasons: string[] = [];
  let samples = 0;
  for (let w = 0; w < input.windows.length; w++) samples += input.windows.info(w).sampleCount;
  // The samples the replay uses: DRAM accesses (cache hits load no memory controller and page
  // faults are first touches, so a trace's total sample count is larger: said, not hidden).
  const what = 'DRAM access samples (cache hits and page faults not counted)';
  if (samples < 1_000) {
    score *= 0.4;
    reasons.push(`only ${samples} ${what}`);
  } else if (samples < 20_000) {
    score *= 0.75;
    reasons.push(`${samples} ${what}, < 20000`);
  }
  const m = input.machine;
  const estimated = [
    ['memory-controller bandwidth', m.mcBandwidthBytesPerS.source],
    ['idle latencies', m.idleLatencyNs.source],
    ['link capacities', m.linkSource],
  ].filter(([, src]) => !src!.startsWith('measured') && !src!.startsWith('documented'));
  if (estimated.length > 0) {
    score *= 0.85 ** estimated.length;
    reasons.push(`machine numbers not measured: ${estimated.map(([what]) => what).join(', ')}`);
  }
  const accessSources = context.sources.filter((s) => s === 'ibs-op' || s.startsWith('pebs'));
  if (accessSources.length === 0) {
    score *= 0.5;
    reasons.push(
      input.accessSource === 'hinting-faults'
        ? 'NUMA hinting faults, no hardware access sampling: which thread touched which page about once per scan pass, not how often'
        : context.sources.includes('page-faults')
          ? 'page-fault samples only: accesses after first touch are not seen'
          : 'no hardware access sampling',
    );
  }
  if (context.synthetic) {
    score *= 0.5;
    reasons.push('synthetic trace');
  }
  const level = score >= 0.7 ? 'high' : score >= 0.4 ? 'medium' : 'low';
  return { level, score: Math.round(score * 100) / 100, reasons };
}

const pct = (x: number): string => `${(x * 100).toFixed(0)}%`;

function pagesOf(decisions: Decision[]): Set<number> {
  const set = new Set<number>();
  for (const d of decisions) if (d.pageIndices) for (const p of d.pageIndices) set.add(p);
  return set;
}

/**
 * What a recommendation is made from: a policy's prediction (analyze's PolicyResult). Its
 * headline numbers (steady state by default) are the gain, and its headline placement is what the
 * action reaches, so the numbers in a recommendation are the ones shown for the policy elsewhere.
 */
export type RecommendSubject = Pick<PolicyResult, 'policy' | 'replay' | 'placement' | 'predictedSpeedup' | 'predictedUs' | 'memoryLatencyNs' | 'localAccessRatio'>;

type Confidence = ReturnType<typeof confidenceOf>;

/** An action predicted to make things no better is not offered (its own gain below MIN_SPEEDUP). */
function offered(g: { gain: Recommendation['gain'] } | null): boolean {
  return g === null || g.gain.speedup >= MIN_SPEEDUP;
}
type CostOf = (pages: number, threads?: number) => Recommendation['cost'];

/** recommend: launching under numactl, for interleave and a weighted-interleave over two nodes or more. */
function numactlRecommendations(input: ReplayInput, replay: RecommendSubject['replay'], words: string, gain: Recommendation['gain'], cost: CostOf, confidence: Confidence, command: string): Recommendation[] {
  const out: Recommendation[] = [];
  if (replay.policy === 'interleave') {
    out.push({
      id: `${replay.policy}:numactl`,
      kind: 'numactl',
      policy: replay.policy,
      title: `launch with interleaved memory: ${words}`,
      gain,
      cost: cost(0),
      confidence,
      command: `numactl --interleave=all ${command}`,
      planable: false,
    });
  }
  if (replay.weighted && replay.weighted.process.nodes.length >= 2) {
    // numactl takes the node list only; the weights are the system-wide sysfs ones.
    const w = replay.weighted.process;
    const ids = w.nodes.map((i) => input.machine.nodeIds[i]!);
    out.push({
      id: `${replay.policy}:numactl`,
      kind: 'numactl',
      policy: replay.policy,
      title:
        `launch with weighted-interleaved memory (Linux 6.9+), with the system-wide weights ${ids.map((id, k) => `node${id}=${w.weights[k]}`).join(', ')} ` +
        `in /sys/kernel/mm/mempolicy/weighted_interleave (numactl takes the node list only): ${words}`,
      gain,
      cost: cost(0),
      confidence,
      command: `numactl --weighted-interleave=${ids.join(',')} ${command}`,
      planable: false,
    });
  }
  return out;
}

/**
 * recommend: per-node copies of the pages the policy replicates (a code change, never planable):
 * replicate's what-if, or another policy's replicated pages where their own gain (`ownGain`,
 * asked only then) is offered.
 */
function perNodeCopyRecommendations(
  input: ReplayInput,
  replay: RecommendSubject['replay'],
  replicated: number[],
  words: string,
  gain: Recommendation['gain'],
  cost: CostOf,
  confidence: Confidence,
  ownGain: () => { gain: Recommendation['gain']; words: string } | null,
): Recommendation[] {
  const out: Recommendation[] = [];
  const pageBytes = input.pageBytes;
  let ownCopies: ReturnType<typeof ownGain> = null;
  if (replicated.length > 0 && replay.replication) {
    // replicate: the what-if of per-node copies. Applying it is a code change in the program
    // (no page move can copy memory), so it is never planable.
    const rep = replay.replication;
    const made = rep.units.filter((u) => u.replicated);
    const names = made.slice(0, 3).map((u) => u.label).join(', ') + (made.length > 3 ? ` and ${made.length - 3} more` : '');
    const perNode = rep.addedBytesByNode
      .map((b, i) => (b > 0 ? `node ${input.machine.nodeIds[i]}: ${bytesText(b)}` : ''))
      .filter((x) => x.length > 0)
      .join(', ');
    const stores =
      rep.storesOnReplicated > 0
        ? `; every store must update all copies (${countText(rep.storesOnReplicated)} stores → ${countText(rep.storeFlowsOnReplicated)} writes)`
        : '';
    const addedPages = Math.round(rep.addedBytes / pageBytes);
    out.push({
      id: `${replay.policy}:per-node-copies`,
      kind: 'code-change',
      policy: replay.policy,
      title:
        `code change, not a page move: have the program keep a copy per node of ${names} (${rep.pagesReplicated} read-mostly pages read from several nodes), ` +
        `each thread reading its own node's copy (llama.cpp --numa mirror, per-node weight copies in inference servers, or numa_alloc_onnode and a copy per node where the program supports it); ` +
        `the copies take ${bytesText(rep.addedBytes)} more memory (${perNode})${stores}${rep.capacityKnown ? '' : ' (node memory sizes unknown: not checked)'}; ` +
        `numascope apply cannot make copies, so there is no plan: ${words}`,
      gain,
      // The copies' memory; seconds: copying it once at MIGRATION_GBPS (the program copies at start-up).
      cost: { ...cost(addedPages), bytes: rep.addedBytes, seconds: rep.addedBytes / (MIGRATION_GBPS * 1e9) },
      confidence,
      pageIndices: Int32Array.from(replicated),
      toNodes: rep.addedBytesByNode.map((b, i) => (b > 0 ? i : -1)).filter((i) => i >= 0),
      codeChange: 'per-node-copies',
      planable: false,
    });
  } else if (replicated.length > 0 && offered((ownCopies = ownGain()))) {
    out.push({
      id: `${replay.policy}:per-node-copies`,
      kind: 'code-change',
      policy: replay.policy,
      title: `keep a per-node copy of the ${replicated.length} read-only pages shared by several nodes (${replay.policy} replicates them; no plan can): ${ownCopies?.words ?? words}`,
      gain: ownCopies?.gain ?? gain,
      cost: cost(replicated.length),
      confidence,
      pageIndices: Int32Array.from(replicated),
      codeChange: 'per-node-copies',
      planable: false,
    });
  }
  return out;
}

/**
 * Recommendations from the baseline's prediction (what runs now: observed, or first-touch) and the
 * other policies' predictions of the same input (analyze's results), best predicted speedup first.
 * Speedups are the results' own (baseline time / policy time); an action moves the pages and
 * threads whose place in the policy's headline placement differs from the recording's.
 */
export function recommend(input: ReplayInput, baseline: RecommendSubject, results: readonly RecommendSubject[], context: RecommendContext): Recommendation[] {
  const confidence = confidenceOf(input, context);
  const out: Recommendation[] = [];
  const pageBytes = input.pageBytes;
  const cost = (pages: number, threads = 0): Recommendation['cost'] => ({
    pages,
    bytes: pages * pageBytes,
    seconds: (pages * pageBytes) / (MIGRATION_GBPS * 1e9),
    migrationGBps: MIGRATION_GBPS,
    threads,
  });
  const command = (context.command && context.command.length > 0 ? context.command : ['./app']).join(' ');
  const start = input.initial;
  // The recording's placement (pages where it started them, threads where it had them), evaluated
  // once: what every action's own gain is against.
  let ref: Evaluation | null = null;
  const reference = (): Evaluation => (ref ??= evaluatePlacement(input, input.initial.pageNode, input.initial.replicated, new Map(), context.timeScale ?? [], context.simulate ?? simulateWindow));

  for (const r of results) {
    if (r === baseline || r.policy === baseline.policy) continue;
    // The result's speedup is against the analysis baseline; re-based when `baseline` is another policy.
    const speedup = baseline.predictedSpeedup > 0 ? r.predictedSpeedup / baseline.predictedSpeedup : r.predictedSpeedup;
    if (!(speedup >= MIN_SPEEDUP)) continue;
    const gain: Recommendation['gain'] = {
      speedup,
      latencyNsBefore: baseline.memoryLatencyNs,
      latencyNsAfter: r.memoryLatencyNs,
      localAccessRatioBefore: baseline.localAccessRatio,
      localAccessRatioAfter: r.localAccessRatio,
      basis: 'policy',
      policySpeedup: speedup,
      headline: 'next-launch',
      appliedNowSpeedup: null,
      nextLaunchSpeedup: speedup,
    };
    // An action's own gain: this action alone against the recording (actionGain); null when the
    // analysis gave no anchoring (then the policy's gain stands, said by basis 'policy').
    const own = (pages: readonly number[], threads: readonly number[], replicate: boolean): { gain: Recommendation['gain']; words: string } | null => {
      const g = context.timeScale ? actionGain(input, reference(), place, pages, threads, replicate, context.timeScale, context.simulate ?? simulateWindow) : null;
      if (!g) return null;
      // Two headlines (issue 30): a page or thread action is applied to the running program, so it
      // leads with "applied now": the same placement from now on plus the time to move its pages
      // (MIGRATION_GBPS; copies are made by the program at its next launch, so a code change leads
      // with "at next launch"). The other is beside it.
      const moveUs = replicate ? 0 : ((pages.length * pageBytes) / (MIGRATION_GBPS * 1e9)) * 1e6;
      const appliedNow = g.before.predictedUs / (g.after.predictedUs + moveUs);
      const leads = replicate ? 'next-launch' : 'applied-now';
      const lead = leads === 'applied-now' ? appliedNow : g.speedup;
      const actionGainOf: Recommendation['gain'] = {
        speedup: lead,
        latencyNsBefore: g.before.memoryLatencyNs,
        latencyNsAfter: g.after.memoryLatencyNs,
        localAccessRatioBefore: g.before.localAccessRatio,
        localAccessRatioAfter: g.after.localAccessRatio,
        basis: 'action',
        policySpeedup: speedup,
        headline: leads,
        appliedNowSpeedup: replicate ? null : appliedNow,
        nextLaunchSpeedup: g.speedup,
      };
      const other =
        leads === 'applied-now'
          ? `at next launch ${formatSpeedup(g.speedup)}`
          : 'applied now: not possible (the program makes the copies)';
      return {
        gain: actionGainOf,
        words:
          `this action alone predicted ${formatSpeedup(lead)} vs the recording ${leads === 'applied-now' ? `applied now (moving ${pages.length} pages takes ${formatTimeUs(moveUs)})` : 'at next launch'}, ${other} ` +
          `(memory latency ${formatLatencyNs(g.before.memoryLatencyNs)} → ${formatLatencyNs(g.after.memoryLatencyNs)}, ` +
          `local ${formatShare(g.before.localAccessRatio)} → ${formatShare(g.after.localAccessRatio)}); ${replay.policy} as a whole ${formatSpeedup(speedup)} vs ${baseline.policy} at next launch`,
      };
    };
    const words = `predicted ${formatSpeedup(speedup)} vs ${baseline.policy} (memory latency ${formatLatencyNs(baseline.memoryLatencyNs)} → ${formatLatencyNs(r.memoryLatencyNs)}, local ${formatShare(baseline.localAccessRatio)} → ${formatShare(r.localAccessRatio)})`;
    const replay = r.replay;
    const byKind = (kind: Decision['kind']) => replay.decisions.filter((d) => d.kind === kind);
    const place = r.placement;

    out.push(...numactlRecommendations(input, replay, words, gain, cost, confidence, command));
    // Pages the headline placement has elsewhere than the recording: replicated, interleaved (as the
    // replay's interleave decisions, or every page of an interleave or weighted-interleave policy), else moved.
    const interleavedByDecision = pagesOf(byKind('interleave'));
    const interleavePolicy = replay.policy.startsWith('interleave') || replay.weighted !== undefined;
    const interleaved: number[] = [];
    const moved: number[] = [];
    const replicated: number[] = [];
    for (let p = 0; p < input.pageCount; p++) {
      if (place.replicated[p] && !start.replicated[p]) replicated.push(p);
      else if (place.pageNode[p] !== start.pageNode[p]) (interleavePolicy || interleavedByDecision.has(p) ? interleaved : moved).push(p);
    }
    const pinned = new Set(byKind('pin-threads').flatMap((d) => d.threads ?? []));
    // Threads the policy pins somewhere the recording did not keep them (at its start or in any window).
    const elsewhere = (t: number) => place.threadNode[t] !== start.threadNode[t] || (input.observedThreadNode?.some((w) => w[t] !== place.threadNode[t]) ?? false);
    const threads = [...pinned].filter(elsewhere).sort((a, b) => a - b);
    const nodesOf = (xs: readonly number[], at: Int16Array) => [...new Set(xs.map((x) => at[x]!))].sort((a, b) => a - b);
    const ids = (xs: readonly number[]) => xs.map((x) => input.machine.nodeIds[x]).join(',');
    // The policy's placement change, as separate actions where each stands on its own (its own gain
    // ≥ MIN_SPEEDUP), else as one action: parts that only work together (AsymSched moves threads
    // and their memory together; alone, either makes things worse) are offered together.
    const parts = [
      interleaved.length > 0 ? { part: 'interleave' as const, g: own(interleaved, [], false) } : null,
      moved.length > 0 ? { part: 'move' as const, g: own(moved, [], false) } : null,
      threads.length > 0 ? { part: 'pin' as const, g: own([], threads, false) } : null,
    ].filter((x): x is NonNullable<typeof x> => x !== null);
    const standAlone = parts.every((x) => offered(x.g));
    if (standAlone) {
      for (const { part, g } of parts) {
        if (part === 'interleave') {
          out.push({
            id: `${replay.policy}:interleave`,
            kind: 'interleave-ranges',
            policy: replay.policy,
            title: `interleave ${interleaved.length} pages over the nodes as ${replay.policy} does: ${g?.words ?? words}`,
            gain: g?.gain ?? gain,
            cost: cost(interleaved.length),
            confidence,
            pageIndices: Int32Array.from(interleaved),
            planable: true,
          });
        } else if (part === 'move') {
          const toNodes = nodesOf(moved, place.pageNode);
          out.push({
            id: `${replay.policy}:move`,
            kind: 'move-ranges',
            policy: replay.policy,
            title: `move ${moved.length} page${moved.length === 1 ? '' : 's'} to node${toNodes.length === 1 ? '' : 's'} ${ids(toNodes)} as ${replay.policy} does: ${g?.words ?? words}`,
            gain: g?.gain ?? gain,
            cost: cost(moved.length),
            confidence,
            pageIndices: Int32Array.from(moved),
            toNodes,
            planable: true,
          });
        } else {
          const toNodes = nodesOf(threads, place.threadNode);
          out.push({
            id: `${replay.policy}:pin`,
            kind: 'pin-threads',
            policy: replay.policy,
            title: `pin thread${threads.length === 1 ? '' : 's'} ${threads.join(',')} to node${toNodes.length === 1 ? '' : 's'} ${ids(toNodes)} as ${replay.policy} does: ${g?.words ?? words}`,
            gain: g?.gain ?? gain,
            cost: cost(0, threads.length),
            confidence,
            threads,
            toNodes,
            planable: true,
          });
        }
      }
    } else {
      const pages = [...interleaved, ...moved].sort((a, b) => a - b);
      const g = own(pages, threads, false);
      if (offered(g)) {
        const what = [
          threads.length > 0 ? `pin threads ${threads.join(',')} to nodes ${ids(nodesOf(threads, place.threadNode))}` : '',
          moved.length > 0 ? `move ${moved.length} pages to nodes ${ids(nodesOf(moved, place.pageNode))}` : '',
          interleaved.length > 0 ? `interleave ${interleaved.length} pages over nodes ${ids(nodesOf(interleaved, place.pageNode))}` : '',
        ].filter((x) => x.length > 0);
        const alone = parts.map((x) => `${x.part} alone ${x.g ? formatSpeedup(x.g.gain.speedup) : 'not predicted'}`).join(', ');
        out.push({
          id: `${replay.policy}:${threads.length > 0 ? 'pin' : 'move'}`,
          kind: threads.length > 0 ? 'pin-threads' : moved.length >= interleaved.length ? 'move-ranges' : 'interleave-ranges',
          policy: replay.policy,
          title: `${what.join(' and ')} together, as ${replay.policy} does (the parts only pay together: ${alone}): ${g?.words ?? words}`,
          gain: g?.gain ?? gain,
          cost: cost(pages.length, threads.length),
          confidence,
          ...(pages.length > 0 ? { pageIndices: Int32Array.from(pages) } : {}),
          ...(threads.length > 0 ? { threads } : {}),
          toNodes: nodesOf(threads.length > 0 ? threads : pages, threads.length > 0 ? place.threadNode : place.pageNode),
          planable: true,
        });
      }
    }
    out.push(...perNodeCopyRecommendations(input, replay, replicated, words, gain, cost, confidence, () => own(replicated, [], true)));
  }

  // Block-wise split: pages each used by one thread but first-touched on another node. Its gain is
  // the baseline's placement with those pages on their thread's node, simulated like the policies'
  // steady states (threads where the recording had them, the same anchoring); listed only when that
  // reaches MIN_SPEEDUP like every other recommendation.
  const owned = blockWiseCandidates(input);
  const split = owned.pages.length > 0 && context.timeScale ? blockWiseGain(input, baseline, owned, context.timeScale, context.simulate ?? simulateWindow) : null;
  if (split && split.speedup >= MIN_SPEEDUP) {
    out.push({
      id: 'code:block-wise-split',
      kind: 'code-change',
      policy: baseline.policy,
      title:
        `${owned.pages.length} pages are each used by one thread (≥ ${pct(OWNER_SHARE)} of their accesses) but live on another node: split the data block-wise by thread and let each thread first-touch its block: ` +
        `predicted ${formatSpeedup(split.speedup)} vs ${baseline.policy} (memory latency ${formatLatencyNs(baseline.memoryLatencyNs)} → ${formatLatencyNs(split.memoryLatencyNs)}, local ${formatShare(baseline.localAccessRatio)} → ${formatShare(split.localAccessRatio)})`,
      gain: {
        speedup: split.speedup,
        latencyNsBefore: baseline.memoryLatencyNs,
        latencyNsAfter: split.memoryLatencyNs,
        localAccessRatioBefore: baseline.localAccessRatio,
        localAccessRatioAfter: split.localAccessRatio,
        basis: 'action',
        policySpeedup: split.speedup,
        headline: 'next-launch',
        appliedNowSpeedup: null,
        nextLaunchSpeedup: split.speedup,
      },
      cost: cost(0),
      confidence,
      pageIndices: Int32Array.from(owned.pages),
      threads: owned.threads,
      codeChange: 'block-wise-split',
      planable: false,
    });
  }
  return out.sort((a, b) => b.gain.speedup - a.gain.speedup || a.id.localeCompare(b.id));
}

/** A placement's overall prediction over the recording (anchored like the policies'). */
interface Evaluation {
  predictedUs: number;
  memoryLatencyNs: number;
  localAccessRatio: number;
}

/**
 * `pageNode` (and replicas) with the threads where the recording had them, except those in
 * `pins` (thread → node), simulated over every window and anchored with the analysis' timeScale.
 */
function evaluatePlacement(
  input: ReplayInput,
  pageNode: Int16Array,
  replicated: Uint8Array,
  pins: ReadonlyMap<number, number>,
  timeScale: ArrayLike<number>,
  simulate: SimulateWindow,
): Evaluation {
  const threadsAt = recordedThreads(input);
  const windows: WindowMetrics[] = [];
  for (const w of input.windows) {
    let threadNode = threadsAt(w.index);
    if (pins.size > 0) {
      threadNode = threadNode.slice();
      for (const [t, n] of pins) threadNode[t] = n;
    }
    // As the policies' steady states: a page in the window of its recorded first touch is where
    // allocation puts it (engine/arrivals.ts).
    windows.push(simulate(input.machine, w, atFirstTouch(input, { threadNode, pageNode, replicated }, w.index), windowLengthUs(w), input.pageBytes));
  }
  const m = overallMetrics(windows, timeScale);
  return { predictedUs: m.predictedUs, memoryLatencyNs: m.memoryLatencyNs, localAccessRatio: m.localAccessRatio };
}

/**
 * One action's own gain (issue 30): the recording's placement with only the action's pages (to
 * the policy's node, or replicated) and threads (to the policy's node) changed, against the
 * recording's placement evaluated the same way (`reference`). Null when either cannot be timed.
 */
function actionGain(
  input: ReplayInput,
  reference: Evaluation,
  place: Placement,
  pages: readonly number[],
  threads: readonly number[],
  replicate: boolean,
  timeScale: ArrayLike<number>,
  simulate: SimulateWindow,
): { speedup: number; before: Evaluation; after: Evaluation } | null {
  const pageNode = input.initial.pageNode.slice();
  const replicated = input.initial.replicated.slice();
  for (const p of pages) {
    if (replicate) replicated[p] = 1;
    else pageNode[p] = place.pageNode[p]!;
  }
  const pins = new Map<number, number>(threads.map((t) => [t, place.threadNode[t]!]));
  const after = evaluatePlacement(input, pageNode, replicated, pins, timeScale, simulate);
  if (!(after.predictedUs > 0) || !(reference.predictedUs > 0)) return null;
  return { speedup: reference.predictedUs / after.predictedUs, before: reference, after };
}

/** The baseline's placement with each block-wise page on its owner thread's node, predicted over the recording. */
function blockWiseGain(
  input: ReplayInput,
  baseline: RecommendSubject,
  owned: { pages: number[]; owners: number[] },
  timeScale: ArrayLike<number>,
  simulate: SimulateWindow,
): { speedup: number; memoryLatencyNs: number; localAccessRatio: number } | null {
  const pageNode = baseline.placement.pageNode.slice();
  owned.pages.forEach((p, i) => (pageNode[p] = input.initial.threadNode[owned.owners[i]!]!));
  const threadsAt = recordedThreads(input);
  const replicated = new Uint8Array(input.pageCount);
  const windows: WindowMetrics[] = [];
  for (const w of input.windows) {
    const placement: Placement = { threadNode: threadsAt(w.index), pageNode, replicated };
    windows.push(simulate(input.machine, w, placement, windowLengthUs(w), input.pageBytes));
  }
  const m = overallMetrics(windows, timeScale);
  if (!(m.predictedUs > 0) || !(baseline.predictedUs > 0)) return null;
  return { speedup: baseline.predictedUs / m.predictedUs, memoryLatencyNs: m.memoryLatencyNs, localAccessRatio: m.localAccessRatio };
}

function blockWiseCandidates(input: ReplayInput): { pages: number[]; threads: number[]; owners: number[] } {
  const perPage = new Map<number, Map<number, number>>();
  for (const w of input.windows) {
    for (let i = 0; i < w.page.length; i++) {
      const m = perPage.get(w.page[i]!) ?? new Map<number, number>();
      m.set(w.thread[i]!, (m.get(w.thread[i]!) ?? 0) + w.loads[i]! + w.stores[i]!);
      perPage.set(w.page[i]!, m);
    }
  }
  const found: Array<[page: number, owner: number]> = [];
  for (const [page, m] of perPage) {
    let total = 0;
    let best = -1;
    let bestA = 0;
    for (const [t, a] of m) {
      total += a;
      if (a > bestA) {
        bestA = a;
        best = t;
      }
    }
    if (m.size > 1 || total <= 0) {
      // A page shared by several threads is not a block-wise candidate unless one dominates.
      if (bestA < OWNER_SHARE * total) continue;
    }
    if (input.initial.threadNode[best] !== input.initial.pageNode[page]) found.push([page, best]);
  }
  found.sort((a, b) => a[0] - b[0]);
  // Worth a code change only when it is a real share of the memory in use.
  if (found.length < Math.max(8, 0.1 * perPage.size)) return { pages: [], threads: [], owners: [] };
  return { pages: found.map((f) => f[0]), owners: found.map((f) => f[1]), threads: [...new Set(found.map((f) => f[1]))].sort((a, b) => a - b) };
}
