/**
 * The code behind an object's issue (issue 31, "Diagnostics cite the code"): the functions whose
 * first touches placed the object's pages, and the functions that access it (remotely most), from
 * the code attribution (code/: functionTable over the object's own sample rows, attributed by code
 * site). Each issue with an object gets one IssueCode; its texts and its fix's text then name those
 * functions and lines (citeCode). A trace without call stacks gets `available: false` with the
 * `code-locations` capability's reason, and the texts stay as they are.
 *
 * The object is the diagnostics' own (an allocation, or a region without one), so the rows are
 * passed to functionTable as a list (CodeOptions.samples); its `object` filter (every allocation of
 * a site) names the Code view's filter for the app's link (IssueCode.object). Pure, no DOM or Node.
 */
import { codeFrames, type CodeFrames } from '../code/frames.js';
import { attributedFrame, functionTable, objectLabel, type FunctionRow } from '../code/functions.js';
import { numericColumn } from '../trace/columns.js';
import type { ObjectColumns } from '../query/objects.js';
import type { Trace } from '../trace/types.js';

/** First-touch sites and accessors listed per issue. */
export const ISSUE_CODE_SITES = 3;

/** A function that first-touched pages of the object (its fault rows on the object). */
export interface IssueFirstTouch {
  function: string;
  /** Its module's path, null unknown. */
  module: string | null;
  /** `file:line` (the file's base name) of its line with the most first touches of the object, null without line information. */
  fileLine: string | null;
  /** Node id of the pages it first-touched most (`pages.node`, weighted), -1 unknown. */
  node: number;
  /** Its weighted first touches of the object per page node (node ids ascending, -1 unknown last). */
  nodes: Array<{ node: number; firstTouches: number }>;
  /** The thread (row of `threads`) with the most of those first touches, and its tid; -1 unknown. */
  thread: number;
  tid: number;
  /** Distinct threads among its fault rows on the object. */
  threads: number;
  /** Weighted first touches (the sum of its fault rows' weight: an estimate of the faults). */
  firstTouches: number;
  /** Distinct pages of the object its fault rows sampled. */
  pagesSampled: number;
}

/** A function that accessed the object (its load, store and unknown-op rows on the object). */
export interface IssueAccessor {
  function: string;
  module: string | null;
  /** `file:line` of its busiest line on the object, null without line information. */
  fileLine: string | null;
  /** Weighted accesses, and those whose memory was on another node than the sample's cpu. */
  accesses: number;
  remote: number;
  /** remote / (local + remote); null when neither is known. */
  remoteShare: number | null;
}

export interface IssueCode {
  /** The trace has call stacks (the `code-locations` capability). */
  available: boolean;
  /** Why no code is cited: the capability's reason, or that none of the object's samples has a stack; null when some is. */
  reason: string | null;
  /** The Code view's data-object filter for the object (its allocation site, code/ objectLabel), null for a region. */
  object: string | null;
  /** The top first-touch sites of the object's pages, most first touches first. */
  firstTouch: IssueFirstTouch[];
  /** The top accessors of the object, most remote accesses first (then most accesses). */
  accessors: IssueAccessor[];
}

/** An object's sample rows: its fault rows (first touches) and its other rows (accesses). */
export interface ObjectRows {
  faults: number[];
  accesses: number[];
}

/**
 * The IssueCode of each object of `rowsOf` (object id → its sample rows), the trace's code frames
 * computed once (code/ caches them per trace), each row visited once (two tables per object, one
 * over its fault rows, one over its accesses). `allocationOf`: the object's allocation row, -1 for
 * a region; `objects`: the trace's objectColumns (the diagnostics' query columns hold them), for
 * the labels.
 */
export function objectCodes(trace: Trace, rowsOf: Map<number, ObjectRows>, allocationOf: (obj: number) => number, objects: ObjectColumns | null): Map<number, IssueCode> {
  const code = codeFrames(trace);
  const out = new Map<number, IssueCode>();
  if (!code.available) {
    for (const obj of rowsOf.keys()) out.set(obj, { available: false, reason: code.reason, object: null, firstTouch: [], accessors: [] });
    return out;
  }
  const tid = numericColumn<Int32Array>(trace.tables.threads, 'tid');
  for (const [obj, rows] of rowsOf) out.set(obj, objectCode(trace, code, rows, allocationOf(obj), tid, objects));
  return out;
}

function fileLineOf(row: FunctionRow, by: 'accesses' | 'firstTouches'): string | null {
  let best = row.lines[0];
  for (const l of row.lines) if (l[by] > best![by]) best = l;
  if (!best || best.file === null || best.line < 0) return row.location;
  return `${best.file.slice(best.file.lastIndexOf('/') + 1)}:${best.line}`;
}

function objectCode(trace: Trace, code: CodeFrames, rows: ObjectRows, allocation: number, tid: Int32Array, objects: ObjectColumns | null): IssueCode {
  const object = allocation >= 0 ? objectLabel(trace, allocation, objects) : null;
  // Threads per first-touching function: the fault rows' attributed function (code site), as functionTable attributes them.
  const thread = numericColumn<Uint32Array>(trace.tables.samples, 'thread');
  const weight = numericColumn<Uint32Array>(trace.tables.samples, 'weight');
  const none = { rows: [] as FunctionRow[] };
  const faults = rows.faults.length > 0 ? functionTable(trace, { samples: rows.faults, op: 'fault', limit: Number.POSITIVE_INFINITY, objectLimit: 0 }) : none;
  const all = rows.accesses.length > 0 ? functionTable(trace, { samples: rows.accesses, limit: Number.POSITIVE_INFINITY, objectLimit: 0 }) : none;
  const threadsOf = new Map<string, Map<number, number>>();
  if (faults.rows.length > 0) {
    for (const i of rows.faults) {
      const st = code.sampleStack[i]!;
      if (st < 0 || st >= code.stackCount) continue;
      const { frame } = attributedFrame(code, st, 'site');
      if (frame < 0) continue;
      const fn = code.functions[code.frames.functionOf[frame]!]!;
      const key = `${fn.module ?? ''}\u0000${fn.name}`;
      let m = threadsOf.get(key);
      if (!m) threadsOf.set(key, (m = new Map()));
      const t = thread[i]!;
      m.set(t, (m.get(t) ?? 0) + weight[i]!);
    }
  }
  const firstTouch = faults.rows
    .filter((r) => r.firstTouches > 0)
    .slice(0, ISSUE_CODE_SITES)
    .map((r): IssueFirstTouch => {
      let node = -1;
      let most = -1;
      for (const n of r.firstTouchesByNode) if (n.firstTouches > most || (n.firstTouches === most && node < 0 && n.node >= 0)) [node, most] = [n.node, n.firstTouches];
      const m = threadsOf.get(`${r.module ?? ''}\u0000${r.function}`) ?? new Map<number, number>();
      let t = -1;
      let tw = -1;
      for (const [th, w] of m) if (w > tw || (w === tw && th < t)) [t, tw] = [th, w];
      return {
        function: r.function,
        module: r.module,
        fileLine: fileLineOf(r, 'firstTouches'),
        node,
        nodes: r.firstTouchesByNode,
        thread: t,
        tid: t >= 0 && t < tid.length ? tid[t]! : -1,
        threads: m.size,
        firstTouches: r.firstTouches,
        pagesSampled: r.pagesSampled,
      };
    });
  const accessors = all.rows
    .filter((r) => r.accesses > 0)
    .sort((a, b) => b.remote - a.remote || b.accesses - a.accesses)
    .slice(0, ISSUE_CODE_SITES)
    .map((r): IssueAccessor => ({ function: r.function, module: r.module, fileLine: fileLineOf(r, 'accesses'), accesses: r.accesses, remote: r.remote, remoteShare: r.remoteShare }));
  const cited = firstTouch.length + accessors.length > 0;
  return {
    available: true,
    reason: cited ? null : 'none of the object\'s samples has a call stack',
    object,
    firstTouch,
    accessors,
  };
}

/** A function as the texts cite it: `name (file:line)`, or the name alone without line information. */
export function codeSiteText(site: { function: string; fileLine: string | null }): string {
  return site.fileLine ? `${site.function} (${site.fileLine})` : site.function;
}

/** `first touched by init_grid (grid.c:41) on node 0 by thread 0 (tid 1234)`, with the other threads counted. */
export function firstTouchText(f: IssueFirstTouch): string {
  const others = f.threads - 1;
  const by = f.thread >= 0 ? ` by thread ${f.thread} (tid ${f.tid})${others > 0 ? ` and ${others} other thread${others === 1 ? '' : 's'}` : ''}` : '';
  return `first touched by ${codeSiteText(f)}${f.node >= 0 ? ` on node ${f.node}` : ''}${by}`;
}

/** The functions as a list: `a (x.c:1), b (x.c:2) and c`. */
function listText(sites: Array<{ function: string; fileLine: string | null }>): string {
  const t = sites.map(codeSiteText);
  return t.length <= 1 ? (t[0] ?? '') : `${t.slice(0, -1).join(', ')} and ${t[t.length - 1]}`;
}

/**
 * What citeCode reads and writes of a diagnosis issue (diagnose.ts `Issue` is one): declared
 * here so that this file, below diagnose.ts, does not import it back.
 */
export interface CitableIssue {
  kind: string;
  text: string;
  code: IssueCode | null;
  object: { site: string | null } | null;
  fix: { kind: string; text: string; pageNodes?: readonly { node: number }[] };
}

/**
 * The issue's text and its fix's text, citing its code where known (issue.code with a first touch
 * or an accessor): the first-touch site and the remote accessor for remote access and page
 * sharing, with the fix's code change naming the first-touch line (initialise in parallel there,
 * initialise from the target node, interleave at allocation); the accessors for cache-line
 * sharing. Unchanged without code. `slotNode`: node slot → node id (the fixes' pageNodes hold slots).
 */
export function citeCode(issue: CitableIssue, slotNode: (slot: number) => number | undefined): void {
  const code = issue.code;
  if (!code || !code.available) return;
  const ft = code.firstTouch[0];
  const remote = code.accessors.filter((a) => a.remote > 0);
  const fix = issue.fix;
  if (issue.kind === 'remote-access' || issue.kind === 'page-sharing') {
    const parts: string[] = [];
    if (ft) parts.push(firstTouchText(ft) + (code.firstTouch.length > 1 ? ` (also ${listText(code.firstTouch.slice(1))})` : ''));
    if (remote.length > 0) parts.push(`accessed remotely mostly by ${codeSiteText(remote[0]!)}${remote.length > 1 ? ` (then ${listText(remote.slice(1))})` : ''}`);
    if (parts.length > 0) issue.text += `; ${parts.join('; ')}`;
    if (!ft) return;
    const at = codeSiteText(ft);
    const site = issue.object?.site ?? null;
    if (fix.kind === 'block-wise-interleave') {
      fix.text += `; in the code: initialise it in parallel in ${at}, each thread its own block`;
    } else if (fix.kind === 'move-to-node') {
      const slot = fix.pageNodes?.[0]?.node;
      const node = slot !== undefined ? slotNode(slot) : undefined;
      const on = node !== undefined ? ` on node ${node}` : '';
      fix.text += `; in the code: initialise it in ${at} from a thread${on} (its first touch places the pages), or bind it${on} at allocation${site ? ` at ${site}` : ''}`;
    } else if (fix.kind === 'page-interleave') {
      fix.text += `; in the code: interleave it at allocation${site ? ` at ${site}` : ''}, before ${at} first touches it`;
    } else if (fix.kind === 'replicate') {
      fix.text += `; in the code: make the copies where ${at} initialises it`;
    }
    return;
  }
  if ((issue.kind === 'false-sharing' || issue.kind === 'true-sharing') && code.accessors.length > 0) {
    const who = listText(code.accessors);
    issue.text += `; accessed by ${who}`;
    if (fix.kind === 'padding') fix.text += ` (the accesses in ${who})`;
    else if (fix.kind === 'none') fix.text += `; the sharing is in ${who}`;
  }
}

/**
 * The issue's code as lines of text (the CLI's `diagnose` prints them under the issue): each
 * first-touch site with its estimated first touches and pages sampled, each accessor with its
 * accesses and remote share; or why there is no code.
 */
export function issueCodeLines(code: IssueCode): string[] {
  if (!code.available) return [`code: not available: ${code.reason ?? 'no call stacks'}`];
  if (code.firstTouch.length + code.accessors.length === 0) return [`code: ${code.reason ?? 'none'}`];
  const pct = (x: number | null) => (x === null ? 'locality unknown' : `${(x * 100).toFixed(1)}% remote`);
  return [
    ...code.firstTouch.map((f) => `${firstTouchText(f)}: ${f.firstTouches} first touches (est.), ${f.pagesSampled} page${f.pagesSampled === 1 ? '' : 's'} sampled`),
    ...code.accessors.map((a) => `accessed by ${codeSiteText(a)}: ${a.accesses} accesses, ${pct(a.remoteShare)}`),
  ];
}
