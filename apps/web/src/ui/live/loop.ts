/**
 * The live loop (docs/live-api.md, "The live loop"): record a process, stop (it keeps running),
 * recommend, dry run, apply, verify, record the same pid again, and compare before with after.
 *
 * It starts when a recording ends with its process left running (`summary.leftRunning`). The
 * recommendation comes from the policy engine, run on the recording's own trace in a Worker of
 * the loop's own: the best machine-applicable recommendation, or, when there is none, a
 * placement check (every recorded page range to the node it is on: its dry run asks the kernel
 * whether the pages are still there, and applying it moves only those that are not). The plan
 * targets the recorded pid and start time; serve (or the desktop app) refuses it for any other
 * process. "Record again" attaches a new recording to the same pid; its trace is analysed the same
 * way for the before/after comparison. The state lives outside React so that it survives a visit
 * to the trace views.
 */
import type { AnalyzeRequest, AnalyzeOutcome, AnalysisView, PlanOutcome } from '../../worker/analysis';
import type { OpenResult } from '../../worker/protocol';
import { ApiError } from './client';
import type { LiveClient } from './client';
import type { LiveSession } from './session';
import type { PlanLike } from './apply';
import { LOOP_RECORD_VERSION, describeIssue, loopRecord } from '@numascope/protocol';
import type { ApplyReport, ErrorBody, LiveEnd, LiveWindow, LoopRecord, NodeCount, Recording } from '@numascope/protocol';
import { engineRequest } from '../selectors/request';

/** The part of the trace Worker client the loop uses (TraceWorkerClient). */
export interface LoopEngine {
  open(bytes: ArrayBuffer): Promise<OpenResult>;
  analyze(traceId: number, recording: number | null, request: AnalyzeRequest): Promise<AnalyzeOutcome>;
  plan(traceId: number, request: AnalyzeRequest, ids: string[], createdAt: string, traceName: string, check?: boolean): Promise<PlanOutcome>;
  dispose?(): void;
}

export type Step<T> = { kind: 'idle' } | { kind: 'running' } | { kind: 'done'; value: T } | { kind: 'error'; error: ErrorBody };

/** The engine's prediction for one recording as it ran (the observed placement). */
export interface Prediction {
  policy: string;
  localAccessRatio: number;
  predictedUs: number;
  memoryLatencyNs: number;
  /** The recording has no memory-access samples: the engine used its placement-only estimate. */
  estimate: boolean;
  /** The recording's work (the report's: instructions or DRAM accesses; null for an estimate): before and after are compared per unit of it. */
  work: { unit: string; amount: number } | null;
}

/** One recording of the loop: what was measured, and what the engine predicts for it. */
export interface Measure {
  recording: string;
  pid: number;
  durationUs: number;
  /** Pages per node at the end (the final live window: measured with move_pages). */
  pagesByNode: NodeCount[];
  pages: number;
  prediction: Step<Prediction>;
}

export interface LoopPlan {
  plan: PlanLike;
  /** A recommendation's plan, or the placement check when nothing is recommended. */
  kind: 'recommendation' | 'check';
  title: string;
  /** Why nothing was recommended (kind 'check'). */
  why: string | null;
  speedup: number | null;
  ranges: number;
  pages: number;
  threads: number;
  /**
   * Ranges left out because they lie outside every mapping of the process now (the server's
   * `range-not-mapped`: freed since the recording), as `start-end`.
   */
  dropped: string[];
}

/** At most this many unmapped ranges are left out one by one before the refusal is shown as it is. */
export const MAX_DROPPED_RANGES = 64;

export interface LoopState {
  before: Measure | null;
  /** The NUMA node ids of this machine. */
  nodeIds: number[];
  recommend: Step<LoopPlan>;
  dry: Step<ApplyReport>;
  apply: Step<ApplyReport>;
  /** Recording the same pid again. */
  again: { kind: 'idle' } | { kind: 'recording'; recording: string | null } | { kind: 'done' } | { kind: 'error'; error: ErrorBody };
  after: Measure | null;
  /**
   * After the second recording: a dry run of the same plan, whose `pages.before` is where the
   * plan's pages are now (move_pages on the live process), against the first dry run's.
   */
  afterCheck: Step<ApplyReport>;
  /**
   * Whether the loop is kept with the server (a reload or a new tab brings it back): not yet,
   * saved (when), or the save failed (why). Never part of the saved record.
   */
  kept: { kind: 'no' } | { kind: 'saved'; at: string } | { kind: 'error'; error: ErrorBody };
  /** The loop came back from the server's record saved at this time (a reload, a new tab). */
  restoredFrom: string | null;
  /** A record the server kept could not be brought back: why (the loop starts empty). */
  restoreError: ErrorBody | null;
}

const IDLE = { kind: 'idle' } as const;

export function initialLoop(): LoopState {
  return {
    before: null,
    nodeIds: [],
    recommend: IDLE,
    dry: IDLE,
    apply: IDLE,
    again: IDLE,
    after: null,
    afterCheck: IDLE,
    kept: { kind: 'no' },
    restoredFrom: null,
    restoreError: null,
  };
}

/** A step in flight is saved as not started: a reload cannot resume a request the old page made. */
function settled<T>(step: Step<T>): Step<T> {
  return step.kind === 'running' ? IDLE : step;
}

function settledMeasure(m: Measure): Measure {
  return { ...m, prediction: settled(m.prediction) };
}

/** The loop's record for the server (`PUT /api/recordings/:id/loop`); null before a loop started. */
export function toLoopRecord(s: LoopState, savedAt: string): LoopRecord | null {
  if (!s.before) return null;
  const record = {
    format: 'numascope-loop' as const,
    version: LOOP_RECORD_VERSION,
    savedAt,
    nodeIds: s.nodeIds,
    before: settledMeasure(s.before),
    recommend: settled(s.recommend),
    dry: settled(s.dry),
    apply: settled(s.apply),
    again: s.again,
    after: s.after ? settledMeasure(s.after) : null,
    afterCheck: settled(s.afterCheck),
  };
  // The Step types include 'running', which settled() removed; the plan is a PlanLike object.
  return record as unknown as LoopRecord;
}

/** A loop record read back from the server, checked field by field (packages/protocol loopRecord). */
export function fromLoopRecord(v: unknown, recording: string): { state: LoopState; savedAt: string } | { error: ErrorBody } {
  const r = loopRecord.safeParse(v);
  if (!r.success) {
    const issue = r.error.issues[0];
    return { error: { code: 'bad-loop', message: issue ? describeIssue('loop', issue) : 'the saved loop is not a loop record' } };
  }
  const rec = r.data;
  if (rec.before.recording !== recording) {
    return { error: { code: 'bad-loop', message: `the loop saved for recording ${recording} names recording ${rec.before.recording}` } };
  }
  const state: LoopState = {
    ...initialLoop(),
    nodeIds: rec.nodeIds,
    before: rec.before as Measure,
    recommend: rec.recommend as Step<LoopPlan>,
    dry: rec.dry,
    apply: rec.apply,
    again: rec.again,
    after: rec.after as Measure | null,
    afterCheck: rec.afterCheck,
  };
  return { state, savedAt: rec.savedAt };
}

function asError(e: unknown): ErrorBody {
  if (e instanceof ApiError) return { code: e.code, message: e.message };
  return { code: 'internal', message: e instanceof Error ? e.message : String(e) };
}

function pagesOf(counts: NodeCount[]): number {
  return counts.reduce((a, c) => a + c.count, 0);
}

/** One line on what a dry run says: nothing to move (and where everything is), or what would move. */
export function dryRunVerdict(r: ApplyReport): string {
  return dryRunCounts(r) + toMoveDifference(r);
}

/**
 * Where the pages to move now differ from the plan's count (the recording's): the counts that can
 * account for it, as `numascope apply` says them (the plan carries no per-page recorded node, so
 * the difference is named, not attributed page by page). Empty when they agree.
 */
export function toMoveDifference(r: ApplyReport): string {
  const planned = r.expected?.pagesToMove ?? null;
  if (planned === null || planned === r.pages.toMove) return '';
  const p = r.pages;
  const parts = [
    ...(p.notPresentBefore > 0 ? [`${n(p.notPresentBefore)} of the plan's pages are not present now (freed or swapped out since the recording, or never touched)`] : []),
    ...(p.unmapped > 0 ? [`${n(p.unmapped)} are outside the process's mappings now`] : []),
    `${n(p.alreadyInPlace)} are already on their planned node (moved since the recording, or touched first there)`,
  ];
  const diff = p.toMove - planned;
  return ` The plan counted ${n(planned)} page${planned === 1 ? '' : 's'} to move from the recording; ${n(p.toMove)} now (${n(Math.abs(diff))} ${diff > 0 ? 'more' : 'fewer'}): ${parts.join('; ')}.`;
}

function dryRunCounts(r: ApplyReport): string {
  const threads = r.threads.filter((t) => t.previousCpus === null || !sameSet(t.previousCpus, t.cpus)).length;
  if (r.pages.toMove === 0 && threads === 0) {
    const nodes = Object.entries(r.pages.before).filter(([, v]) => v > 0);
    if (r.pages.alreadyInPlace > 0 && nodes.length === 1) {
      return `Nothing to move: every page is already on node ${nodes[0]![0]} (${n(r.pages.alreadyInPlace)} pages checked with move_pages), and no thread needs pinning.`;
    }
    if (r.pages.alreadyInPlace > 0) return `Nothing to move: all ${n(r.pages.alreadyInPlace)} pages are already on their planned nodes, and no thread needs pinning.`;
    return 'Nothing to move: none of the plan’s pages is present in the process now, and no thread needs pinning.';
  }
  return `${n(r.pages.toMove)} pages to move (${n(r.pages.alreadyInPlace)} already in place), ${n(threads)} threads to pin.`;
}

/** One line on what an apply did and what its verification found. */
export function applyVerdict(r: ApplyReport): string {
  const pinned = r.threads.filter((t) => t.pinned).length;
  const verified = r.pages.onTargetAfter !== null ? ` Verified: ${n(r.pages.onTargetAfter)} of ${n(r.pages.pages - r.pages.unmapped)} pages on their planned node.` : '';
  if (r.pages.moved === 0 && pinned === 0 && r.pages.toMove === 0) {
    return `Trivially satisfied: nothing needed to change, nothing was moved or pinned (${r.status}).${verified}`;
  }
  return `${r.status}: ${n(r.pages.moved)} of ${n(r.pages.toMove)} pages moved, ${n(pinned)} threads pinned.${verified}`;
}

function sameSet(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x) => b.includes(x));
}

const n = (v: number) => v.toLocaleString('en-US');

export class LiveLoop {
  state: LoopState = initialLoop();
  private listeners = new Set<(s: LoopState) => void>();
  private engine: LoopEngine | null = null;
  private beforeTrace: { traceId: number; request: AnalyzeRequest; view: AnalysisView } | null = null;
  private beforeBytes: ArrayBuffer | null = null;
  private ticket = 0;

  constructor(
    private readonly session: LiveSession,
    private readonly api: LiveClient,
    private readonly newEngine: () => LoopEngine,
    private readonly work: () => () => void = () => () => {},
  ) {}

  subscribe(fn: (s: LoopState) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private set(patch: Partial<LoopState>) {
    this.state = { ...this.state, ...patch };
    for (const l of this.listeners) l(this.state);
    this.keep();
  }

  /** The record last sent to the server (without its time), so an unchanged loop is not sent again. */
  private lastKept = '';
  private keeping = false;
  private keepAgain = false;

  /**
   * Keeps the loop with the server after each change (PUT /api/recordings/:id/loop), one request
   * at a time, the newest state last; marked as work so the idle signal waits for it.
   */
  private keep() {
    if (!this.api.saveLoop || !this.state.before) return;
    this.keepAgain = true;
    if (this.keeping) return;
    this.keeping = true;
    void this.tracked(async () => {
      try {
        while (this.keepAgain) {
          this.keepAgain = false;
          const at = new Date().toISOString();
          const record = toLoopRecord(this.state, at);
          if (!record) break;
          const text = JSON.stringify({ ...record, savedAt: '' });
          if (text === this.lastKept) continue;
          let kept: LoopState['kept'];
          try {
            await this.api.saveLoop!(record.before.recording, record);
            this.lastKept = text;
            kept = { kind: 'saved', at };
          } catch (e) {
            kept = { kind: 'error', error: asError(e) };
          }
          // Only this field changes: no new save for it.
          this.state = { ...this.state, kept };
          for (const l of this.listeners) l(this.state);
        }
      } finally {
        this.keeping = false;
      }
    });
  }

  /**
   * Brings back the loop kept with the server (a reload, a new tab): recording `id`'s, or the
   * one saved last. Nothing changes when this page already has that loop, or a loop of its own
   * and no id was asked for. A record that does not parse is said (restoreError), not shown.
   */
  /** Who keeps this loop, as the panel says it: "numascope serve" or "the desktop app". */
  get keeps(): boolean {
    return this.api.saveLoop !== undefined;
  }

  get keeper(): string {
    return this.api.loopKeeper ?? 'numascope serve';
  }

  async restore(id: string | null): Promise<void> {
    const api = this.api;
    if (!api.loadLoop || !api.latestLoop) return;
    if (this.state.before && (id === null || this.state.before.recording === id)) return;
    const ticket = this.ticket;
    await this.tracked(async () => {
      let value: unknown;
      let recording: string | null = id;
      try {
        if (id !== null) value = await api.loadLoop!(id);
        else {
          const latest = await api.latestLoop!();
          value = latest?.loop ?? null;
          recording = latest?.recording ?? null;
        }
      } catch (e) {
        if (ticket === this.ticket) this.set({ restoreError: asError(e) });
        return;
      }
      // A recording of this page ended meanwhile: its loop wins.
      if (ticket !== this.ticket || value === null || recording === null) return;
      const parsed = fromLoopRecord(value, recording);
      if ('error' in parsed) {
        this.set({ restoreError: parsed.error });
        return;
      }
      this.ticket++;
      this.engine?.dispose?.();
      this.engine = null;
      this.beforeTrace = null;
      this.beforeBytes = null;
      const record = toLoopRecord(parsed.state, '');
      this.lastKept = JSON.stringify(record);
      this.set({ ...parsed.state, restoredFrom: parsed.savedAt, kept: { kind: 'saved', at: parsed.savedAt } });
      const again = parsed.state.again;
      if (again.kind === 'recording' && again.recording !== null) await this.followAgain(again.recording);
    });
  }

  /**
   * After a reload during "record again": the server still has that recording. When it has
   * finished, its trace becomes the after side; while it runs, the loop waits for its end.
   */
  private async followAgain(recording: string): Promise<void> {
    const ticket = this.ticket;
    const arrive = async (r: Recording) => {
      if (ticket !== this.ticket) return;
      const end: LiveEnd = { type: 'end', recording, status: r.status, summary: r.summary, error: r.error };
      if (r.status !== 'finished' || !r.summary) {
        this.set({ again: { kind: 'error', error: r.error ?? { code: 'no-trace', message: `recording ${recording} ended without a trace` } } });
        return;
      }
      const bytes = await this.api.trace(recording);
      this.traceArrived(recording, end, bytes, r.latest, this.state.nodeIds);
    };
    try {
      const r = await this.api.status(recording);
      if (r.status !== 'running') return await arrive(r);
      await new Promise<void>((resolve) => {
        const stop = this.api.watch(recording, {
          onWindow: () => {},
          onEnd: () => {
            stop();
            void this.api.status(recording).then(arrive).catch((e: unknown) => this.set({ again: { kind: 'error', error: asError(e) } })).finally(resolve);
          },
          onLost: (message) => {
            this.set({ again: { kind: 'error', error: { code: 'lost', message } } });
            resolve();
          },
        });
      });
    } catch (e) {
      if (ticket === this.ticket) this.set({ again: { kind: 'error', error: asError(e) } });
    }
  }

  /** Whether `recording` is this loop's second recording (its trace stays with the loop, the views do not open it). */
  isAfter(recording: string): boolean {
    return this.state.after?.recording === recording;
  }

  private async tracked<T>(fn: () => Promise<T>): Promise<T> {
    const done = this.work();
    try {
      return await fn();
    } finally {
      done();
    }
  }

  /** Whether the loop wants this recording's trace (the session copies it before the views take it). */
  wants(end: LiveEnd): boolean {
    return end.summary?.leftRunning === true || this.state.again.kind === 'recording';
  }

  /**
   * A recording's trace arrived (a copy of its bytes). The loop's "record again" recording becomes
   * the after side; any other recording whose process was left running starts a new loop.
   */
  traceArrived(recording: string, end: LiveEnd, bytes: ArrayBuffer, latest: LiveWindow | null, nodeIds: number[]) {
    const s = end.summary;
    if (!s) return;
    const measure: Measure = {
      recording,
      pid: s.pid,
      durationUs: s.durationUs,
      pagesByNode: latest?.totals.pagesByNode ?? [],
      pages: latest ? pagesOf(latest.totals.pagesByNode) : s.pages,
      prediction: { kind: 'running' },
    };
    const again = this.state.again;
    if (again.kind === 'recording' && (again.recording === null || again.recording === recording) && this.state.before?.pid === s.pid) {
      this.set({ after: measure, again: { kind: 'done' }, afterCheck: IDLE });
      void this.predictAfter(bytes);
      void this.checkAfter();
      return;
    }
    if (!s.leftRunning) return;
    this.ticket++;
    this.engine?.dispose?.();
    this.engine = null;
    this.beforeTrace = null;
    this.beforeBytes = bytes;
    this.set({ ...initialLoop(), nodeIds, before: { ...measure, prediction: IDLE } });
  }

  private engineFor(): LoopEngine {
    this.engine ??= this.newEngine();
    return this.engine;
  }

  /** Opens `bytes` and analyses them (placement-only estimate when the recording has no access samples). */
  private async analyse(bytes: ArrayBuffer): Promise<{ traceId: number; request: AnalyzeRequest; view: AnalysisView }> {
    const engine = this.engineFor();
    const opened = await engine.open(bytes);
    if ('error' in opened) throw Object.assign(new Error(opened.error.message), { code: opened.error.code });
    const traceId = opened.overview.traceId;
    let request = engineRequest(null, false);
    let out = await engine.analyze(traceId, null, request);
    if ('error' in out && out.error.code === 'no-access-data') {
      request = engineRequest(null, true);
      out = await engine.analyze(traceId, null, request);
    }
    if ('error' in out) throw Object.assign(new Error(out.error.message), { code: out.error.code });
    return { traceId, request, view: out.view };
  }

  private prediction(view: AnalysisView): Prediction {
    const p = view.policies.find((x) => x.policy === 'observed') ?? view.policies.find((x) => x.policy === view.baseline) ?? view.policies[0]!;
    return {
      policy: p.policy,
      localAccessRatio: p.localAccessRatio,
      predictedUs: p.predictedUs,
      memoryLatencyNs: p.memoryLatencyNs,
      estimate: view.estimate !== null,
      work: view.work ? { unit: view.work.unit, amount: view.work.amount } : null,
    };
  }

  /** Step 1: the engine's recommendation for the recorded process, as a plan (or the placement check). */
  async recommend(): Promise<void> {
    const before = this.state.before;
    if (!before || this.state.recommend.kind === 'running') return;
    const ticket = this.ticket;
    this.set({ recommend: { kind: 'running' }, dry: IDLE, apply: IDLE, before: { ...before, prediction: { kind: 'running' } } });
    await this.tracked(async () => {
      try {
        // A loop brought back from the server has no trace yet: the server still has it.
        this.beforeBytes ??= await this.api.trace(before.recording);
        const bytes = this.beforeBytes;
        if (ticket !== this.ticket) return;
        // The Worker takes the buffer: keep the copy for a second try.
        this.beforeTrace ??= await this.analyse(bytes.slice(0));
        const { traceId, request, view } = this.beforeTrace;
        if (ticket !== this.ticket) return;
        this.set({ before: { ...this.state.before!, prediction: { kind: 'done', value: this.prediction(view) } } });
        const best = view.planReason === null ? view.recommendations.find((r) => r.planable) : undefined;
        const createdAt = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
        const name = `numascope-${before.recording}.numascope`;
        const out = best
          ? await this.engineFor().plan(traceId, request, [best.id], createdAt, name)
          : await this.engineFor().plan(traceId, request, [], createdAt, name, true);
        if (ticket !== this.ticket) return;
        if (!out.plan || !out.json) throw Object.assign(new Error(out.error ?? 'the engine built no plan'), { code: 'plan-failed' });
        const plan = JSON.parse(out.json) as PlanLike;
        // One count from the recommendation to the apply: the pages whose node changes (the
        // plan's expected.pagesToMove, the recommendation's cost), not the pages the ranges span.
        const spanned = (plan.pageRanges ?? []).reduce((a, r) => a + Number((BigInt(r.end) - BigInt(r.start)) / 4096n), 0);
        const pages = plan.expected?.pagesToMove ?? spanned;
        this.set({
          recommend: {
            kind: 'done',
            value: {
              plan,
              kind: best ? 'recommendation' : 'check',
              title: best ? best.title : 'Placement check: keep every recorded page range on the node it is on',
              why: best ? null : this.whyNone(view),
              speedup: best ? best.gain.speedup : null,
              ranges: plan.pageRanges?.length ?? 0,
              pages,
              threads: plan.threads?.length ?? 0,
              dropped: [],
            },
          },
        });
      } catch (e) {
        if (ticket !== this.ticket) return;
        const error = { code: (e as { code?: string }).code ?? 'internal', message: e instanceof Error ? e.message : String(e) };
        const b = this.state.before!;
        this.set({ recommend: { kind: 'error', error }, before: { ...b, prediction: b.prediction.kind === 'running' ? { kind: 'error', error } : b.prediction } });
      }
    });
  }

  private whyNone(view: AnalysisView): string {
    if (view.planReason) return `plans cannot be built from this recording: ${view.planReason}`;
    const oneNode = view.machine.nodeIds.length === 1 ? ` This machine has one NUMA node (node ${view.machine.nodeIds[0]}): every placement is the same here.` : '';
    if (view.recommendations.length === 0) return `no policy is predicted to be at least 2% faster than ${view.baseline} on this recording.${oneNode}`;
    return `no recommendation is machine-applicable (only launch lines or code changes).${oneNode}`;
  }

  /**
   * Applies (or dry-runs) the plan on the recorded pid. A range the server refuses as no longer
   * mapped (`range-not-mapped`, naming `pageRanges[i]`: memory the process freed since the
   * recording) is left out of the plan, said in `dropped`, and the call made again.
   */
  private async send(dryRun: boolean): Promise<ApplyReport> {
    for (;;) {
      const r = this.state.recommend;
      const before = this.state.before;
      if (r.kind !== 'done' || !before) throw Object.assign(new Error('no plan'), { code: 'no-plan' });
      try {
        return await this.api.apply({ plan: r.value.plan as unknown as Record<string, unknown>, pid: before.pid, dryRun });
      } catch (e) {
        const m = e instanceof ApiError && e.code === 'range-not-mapped' ? /pageRanges\[(\d+)\]/.exec(e.message) : null;
        const ranges = r.value.plan.pageRanges ?? [];
        const i = m ? Number(m[1]) : -1;
        if (i < 0 || i >= ranges.length || r.value.dropped.length >= MAX_DROPPED_RANGES) throw e;
        const gone = ranges[i]!;
        const plan = { ...r.value.plan, pageRanges: ranges.filter((_, k) => k !== i) };
        const pages = r.value.pages - Number((BigInt(gone.end) - BigInt(gone.start)) / 4096n);
        this.set({
          recommend: {
            kind: 'done',
            value: { ...r.value, plan, ranges: plan.pageRanges.length, pages, dropped: [...r.value.dropped, `${gone.start}-${gone.end}`] },
          },
        });
      }
    }
  }

  private async call(step: 'dry' | 'apply', dryRun: boolean): Promise<void> {
    const r = this.state.recommend;
    const before = this.state.before;
    if (r.kind !== 'done' || !before || this.state[step].kind === 'running') return;
    this.set({ [step]: { kind: 'running' } } as Partial<LoopState>);
    await this.tracked(async () => {
      try {
        const report = await this.send(dryRun);
        this.set({ [step]: { kind: 'done', value: report } } as Partial<LoopState>);
      } catch (e) {
        this.set({ [step]: { kind: 'error', error: asError(e) } } as Partial<LoopState>);
      }
    });
  }

  /** Step 2: dry run of the plan on the recorded pid (nothing changes). */
  dryRun(): Promise<void> {
    return this.call('dry', true);
  }

  /** Step 3: apply and verify (serve moves, pins, then queries the pages again). */
  apply(): Promise<void> {
    if (this.state.dry.kind !== 'done') return Promise.resolve();
    return this.call('apply', false);
  }

  /** Step 4: a new recording attached to the same pid, to see the effect. */
  async recordAgain(durationS: number): Promise<void> {
    const before = this.state.before;
    if (!before || this.state.again.kind === 'recording') return;
    this.set({ again: { kind: 'recording', recording: null }, after: null });
    this.session.reset();
    await this.session.start({ pid: before.pid, durationS });
    const p = this.session.state.phase;
    if (p.kind === 'running' || p.kind === 'stopping') this.set({ again: { kind: 'recording', recording: p.recording.id } });
    else this.set({ again: { kind: 'error', error: this.session.state.startError ?? { code: 'start-failed', message: 'the recording did not start' } } });
  }

  /** Where the plan's pages are now (a dry run: nothing changes). */
  private async checkAfter(): Promise<void> {
    const r = this.state.recommend;
    const before = this.state.before;
    if (r.kind !== 'done' || !before) return;
    this.set({ afterCheck: { kind: 'running' } });
    await this.tracked(async () => {
      try {
        const report = await this.send(true);
        this.set({ afterCheck: { kind: 'done', value: report } });
      } catch (e) {
        this.set({ afterCheck: { kind: 'error', error: asError(e) } });
      }
    });
  }

  private async predictAfter(bytes: ArrayBuffer): Promise<void> {
    const ticket = this.ticket;
    await this.tracked(async () => {
      let prediction: Step<Prediction>;
      try {
        prediction = { kind: 'done', value: this.prediction((await this.analyse(bytes)).view) };
      } catch (e) {
        prediction = { kind: 'error', error: { code: (e as { code?: string }).code ?? 'internal', message: e instanceof Error ? e.message : String(e) } };
      }
      if (ticket === this.ticket && this.state.after) this.set({ after: { ...this.state.after, prediction } });
    });
  }

  dispose() {
    this.engine?.dispose?.();
    this.engine = null;
    this.listeners.clear();
  }
}
