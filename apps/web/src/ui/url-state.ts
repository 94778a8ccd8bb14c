/**
 * The screen's state in the address bar, so a shared link opens the same screen:
 * `?trace=URL&view=memory&from=1000&to=5000&region=3&thread=2&heat=accesses&pages=0-512`,
 * `&view=decisions&dpol=carrefour&dkind=migrate&dec=carrefour.12`, `&view=compare&cmp=first-touch~manual&man=t0:1,r3:0`,
 * `&view=code&cby=self&cloc=remote&cop=fault&cobj=main code_sites.c:33&cthr=2&cfn=init_beta`, `&region=6&obj=1` (an object in the Memory view).
 * Pure functions over query strings; App owns history (pushState / popstate).
 *
 * Links are versioned as traces are: `v=N` is the parameters' version (a link without `v` is
 * version 0, what every link was before versions), URL_UPGRADERS holds one step per version, and
 * parseViewState reads every link through the chain, so the rest of the app only ever sees the
 * current version. A link from a newer app is read as far as this version understands it.
 */
import { BASELINES, CODE_LOCALITIES, DECISION_KINDS } from '@numascope/policy-engine';
import type { CodeLocality, CodeOp, DecisionKind, HeatmapMode, TimeRange } from '@numascope/policy-engine';

/** The views, in tab order; keys 1–9 open the first nine, 0 the tenth. */
export const VIEWS = ['overview', 'memory', 'threads', 'traffic', 'compare', 'decisions', 'recommend', 'diagnose', 'machine', 'code'] as const;
export type ViewId = (typeof VIEWS)[number];

export interface ViewState {
  view: ViewId;
  /** Brushed time range, µs, half-open; null = whole trace. */
  range: TimeRange | null;
  /**
   * Committed zoom ranges, outermost first (`zoom=0-800000~200000-400000`, µs): the timeline
   * shows the last one, and each is a breadcrumb back (Firefox Profiler's committed ranges).
   */
  zoom: TimeRange[];
  /** Selected region (memory view), index into regions. */
  region: number | null;
  /** Selected thread (threads view), index into threads. */
  thread: number | null;
  heat: HeatmapMode;
  /** Heatmap zoom: pages [lo, hi) in address order; null = all. */
  pages: { lo: number; hi: number } | null;
  /** Traffic view: the policy drawn (null = observed, else first-touch). */
  policy: string | null;
  /** Compare columns (ui/selectors/compare.ts specs: `first-touch`, `interleave@amd-genoa-2s-nps4`); null = default set. */
  cmp: string[] | null;
  /** Placement-only access estimate for page-fault-only recordings (`est=uniform`). */
  estimate: boolean;
  /** Baseline of every speedup (`base=first-touch`); null = the engine's default (observed: what actually ran). */
  base: (typeof BASELINES)[number] | null;
  /** The engine's replay window, ms (`win=500`); null = the engine's default for the trace. */
  win: number | null;
  /**
   * The access rate the engine assumes for NUMA hinting-fault recordings (`rates=bandwidth-bound`:
   * the user says the program streams); null = the engine's default (typical, memory-bound code).
   */
  rates: 'bandwidth-bound' | null;
  /** Decisions view: policy and kind filters (null = all). */
  dpol: string | null;
  dkind: DecisionKind | null;
  /** The selected policy decision (`policy.index` in the current analysis: worker/decisions.ts), shown in the Decisions and Memory views. */
  dec: string | null;
  /** Compare's manual column: threads and regions dragged onto nodes (`man=t0:1,r3:0`: thread or region index, then node id). */
  manual: ManualState | null;
  /** The object (allocation row) selected in the Memory view's Objects panel (`obj=1`); null = the busiest. */
  obj: number | null;
  /** Code view: attribution to the code site (default) or the sampled instruction (`cby=self`). */
  codeBy: 'self' | null;
  /** Code view: memory local or remote to the sample's cpu (`cloc=local|remote`), or on one node (`cloc=n1`). */
  codeLoc: CodeLocality | null;
  codeNode: number | null;
  /** Code view: loads, stores or first touches only (`cop=load|store|fault`). */
  codeOp: CodeOp | null;
  /** Code view: one data object, an allocation site as the engine names it (`cobj=main code_sites.c:33`). */
  codeObject: string | null;
  /** Code view: one thread (`cthr=N`, a row of threads). */
  codeThread: number | null;
  /** Code view: the selected function (`cfn=init_beta`). */
  codeFn: string | null;
}

export interface ManualState {
  threads: Array<{ thread: number; node: number }>;
  regions: Array<{ region: number; node: number }>;
}

export const DEFAULT_VIEW_STATE: ViewState = {
  view: 'overview',
  range: null,
  zoom: [],
  region: null,
  thread: null,
  heat: 'node',
  pages: null,
  policy: null,
  cmp: null,
  estimate: false,
  base: null,
  win: null,
  rates: null,
  dpol: null,
  dkind: null,
  dec: null,
  manual: null,
  obj: null,
  codeBy: null,
  codeLoc: null,
  codeNode: null,
  codeOp: null,
  codeObject: null,
  codeThread: null,
  codeFn: null,
};

const MAX_MANUAL_ITEMS = 512;
/** The replay windows a link may ask for, ms (whole milliseconds). */
export const MIN_WINDOW_MS = 1;
export const MAX_WINDOW_MS = 60_000;

/** The version of the view-state parameters this app writes (`v=`). */
export const URL_STATE_VERSION = 1;

/** One upgrade step: rewrites version N's parameters, in place, into version N + 1's. */
export type UrlUpgrader = (params: URLSearchParams) => void;

/** URL_UPGRADERS[N] upgrades version N to N + 1; one step per version, each tested on real old links. */
export const URL_UPGRADERS: Readonly<Record<number, UrlUpgrader>> = {
  // 0 → 1: version 1 added `v` itself; every parameter of an unversioned link means what it meant.
  0: () => {},
};

/** The parameters of the view state, the version parameter included: writeViewState replaces them all. */
const STATE_KEYS = ['view', 'from', 'to', 'zoom', 'region', 'thread', 'heat', 'pages', 'policy', 'cmp', 'est', 'base', 'win', 'rates', 'dpol', 'dkind', 'dec', 'man', 'obj', 'cby', 'cloc', 'cop', 'cobj', 'cthr', 'cfn', 'v'];

const CODE_OPS: readonly CodeOp[] = ['load', 'store', 'fault'];
/** A name from a link (an allocation site, a function): printable, at most 400 characters. */
function linkName(raw: string | null): string | null {
  if (raw === null || raw.length === 0 || raw.length > 400 || /[\u0000-\u001f\u007f]/.test(raw)) return null;
  return raw;
}

/** The version a link says it has: `v=N`, or 0 when it has none (or one that is not a number). */
export function linkVersion(params: URLSearchParams): number {
  const raw = params.get('v');
  return raw !== null && /^\d{1,6}$/.test(raw) ? Number(raw) : 0;
}

/**
 * A link's parameters upgraded to the current version. `from` is the version the link had;
 * `newer` is true when it came from a newer app (its parameters are then read as this version's:
 * the ones it knows are kept, malformed ones fall back to their defaults).
 */
export function upgradeViewParams(
  search: string,
  upgraders: Readonly<Record<number, UrlUpgrader>> = URL_UPGRADERS,
  current: number = URL_STATE_VERSION,
): { params: URLSearchParams; from: number; newer: boolean } {
  const params = new URLSearchParams(search);
  const from = linkVersion(params);
  if (from > current) return { params, from, newer: true };
  for (let v = from; v < current; v++) {
    const step = upgraders[v];
    if (!step) throw new Error(`no upgrade step for view-state links of version ${v} (URL_UPGRADERS needs one per version)`);
    step(params);
  }
  params.set('v', String(current));
  return { params, from, newer: false };
}

/** `t0:1,r3:0` → threads and regions to node ids; later entries for the same item win; malformed entries are dropped. */
export function parseManual(raw: string | null): ManualState | null {
  if (raw === null) return null;
  const threads = new Map<number, number>();
  const regions = new Map<number, number>();
  for (const item of raw.split(',').slice(0, MAX_MANUAL_ITEMS)) {
    const m = /^([tr])(\d{1,7}):(\d{1,4})$/.exec(item);
    if (!m) continue;
    (m[1] === 't' ? threads : regions).set(Number(m[2]), Number(m[3]));
  }
  if (threads.size === 0 && regions.size === 0) return null;
  return {
    threads: [...threads].map(([thread, node]) => ({ thread, node })),
    regions: [...regions].map(([region, node]) => ({ region, node })),
  };
}

export function writeManual(m: ManualState): string {
  return [...m.threads.map((t) => `t${t.thread}:${t.node}`), ...m.regions.map((r) => `r${r.region}:${r.node}`)].join(',');
}

/** The deepest zoom a link may carry (breadcrumbs). */
export const MAX_ZOOM_DEPTH = 8;

/** `0-800000~200000-400000` → ranges, each inside the one before; a malformed or non-nested entry ends the list there. */
export function parseZoom(raw: string | null): TimeRange[] {
  if (!raw) return [];
  const out: TimeRange[] = [];
  for (const item of raw.split('~').slice(0, MAX_ZOOM_DEPTH)) {
    const m = /^(\d{1,15})-(\d{1,15})$/.exec(item);
    if (!m) break;
    const r = { fromUs: Number(m[1]), toUs: Number(m[2]) };
    const outer = out[out.length - 1];
    if (r.toUs <= r.fromUs || (outer && (r.fromUs < outer.fromUs || r.toUs > outer.toUs))) break;
    out.push(r);
  }
  return out;
}

export function writeZoom(zoom: readonly TimeRange[]): string {
  return zoom.map((r) => `${r.fromUs}-${r.toUs}`).join('~');
}

const HEAT_MODES: readonly HeatmapMode[] = ['node', 'samples', 'faults', 'accesses'];

function nonNegativeInt(s: string | null): number | null {
  if (s === null || !/^\d+$/.test(s)) return null;
  const n = Number(s);
  return Number.isSafeInteger(n) ? n : null;
}

/** Reads the view state from a query string of any version; anything malformed falls back to its default. */
export function parseViewState(search: string): ViewState {
  const p = upgradeViewParams(search).params;
  const view = VIEWS.find((v) => v === p.get('view')) ?? 'overview';
  const from = nonNegativeInt(p.get('from'));
  const to = nonNegativeInt(p.get('to'));
  const zoom = parseZoom(p.get('zoom'));
  const inner = zoom[zoom.length - 1];
  const asked = from !== null && to !== null && to > from ? { fromUs: from, toUs: to } : null;
  // Inside a zoom, the selection is within it (the zoomed range itself when none is given).
  const range = inner ? (asked && asked.fromUs >= inner.fromUs && asked.toUs <= inner.toUs ? asked : inner) : asked;
  const heat = HEAT_MODES.find((m) => m === p.get('heat')) ?? 'node';
  const pm = /^(\d+)-(\d+)$/.exec(p.get('pages') ?? '');
  const pages = pm && Number(pm[2]) > Number(pm[1]) ? { lo: Number(pm[1]), hi: Number(pm[2]) } : null;
  const policy = /^[a-z][a-z0-9:,_-]*$/i.test(p.get('policy') ?? '') ? p.get('policy') : null;
  const cmpRaw = p.get('cmp');
  const cmp = cmpRaw ? cmpRaw.split('~').filter((c) => /^[a-z][a-z0-9:,@._-]*$/i.test(c)).slice(0, 5) : null;
  const estimate = p.get('est') === 'uniform';
  const base = BASELINES.find((b) => b === p.get('base')) ?? null;
  const winMs = nonNegativeInt(p.get('win'));
  const win = winMs !== null && winMs >= MIN_WINDOW_MS && winMs <= MAX_WINDOW_MS ? winMs : null;
  const rates = p.get('rates') === 'bandwidth-bound' ? 'bandwidth-bound' : null;
  const dpol = /^[a-z][a-z0-9:,_-]*$/i.test(p.get('dpol') ?? '') ? p.get('dpol') : null;
  const dkind = DECISION_KINDS.find((k) => k === p.get('dkind')) ?? null;
  const dec = /^[a-z][a-z0-9:,_-]*\.\d{1,9}$/i.test(p.get('dec') ?? '') ? p.get('dec') : null;
  const manual = parseManual(p.get('man'));
  const cloc = p.get('cloc') ?? '';
  const codeNodeMatch = /^n(\d{1,4})$/.exec(cloc);
  return {
    view,
    range,
    zoom,
    region: nonNegativeInt(p.get('region')),
    thread: nonNegativeInt(p.get('thread')),
    heat,
    pages,
    policy,
    cmp: cmp && cmp.length > 0 ? cmp : null,
    estimate,
    base,
    win,
    rates,
    dpol,
    dkind,
    dec,
    manual,
    obj: nonNegativeInt(p.get('obj')),
    codeBy: p.get('cby') === 'self' ? 'self' : null,
    codeLoc: CODE_LOCALITIES.find((l) => l === cloc) ?? null,
    codeNode: codeNodeMatch ? Number(codeNodeMatch[1]) : null,
    codeOp: CODE_OPS.find((o) => o === p.get('cop')) ?? null,
    codeObject: linkName(p.get('cobj')),
    codeThread: nonNegativeInt(p.get('cthr')),
    codeFn: linkName(p.get('cfn')),
  };
}

/**
 * Writes the view state into a query string, keeping `trace` (first) and any unknown parameters.
 * The version goes last, whenever any view-state parameter is written (the default screen needs none).
 */
export function writeViewState(search: string, s: ViewState): string {
  const p = new URLSearchParams(search);
  for (const k of STATE_KEYS) p.delete(k);
  const before = p.toString();
  if (s.view !== 'overview') p.set('view', s.view);
  if (s.range) {
    p.set('from', String(s.range.fromUs));
    p.set('to', String(s.range.toUs));
  }
  if (s.zoom.length > 0) p.set('zoom', writeZoom(s.zoom));
  if (s.region !== null) p.set('region', String(s.region));
  if (s.thread !== null) p.set('thread', String(s.thread));
  if (s.heat !== 'node') p.set('heat', s.heat);
  if (s.pages) p.set('pages', `${s.pages.lo}-${s.pages.hi}`);
  if (s.policy) p.set('policy', s.policy);
  if (s.cmp && s.cmp.length > 0) p.set('cmp', s.cmp.join('~'));
  if (s.estimate) p.set('est', 'uniform');
  if (s.base) p.set('base', s.base);
  if (s.win !== null) p.set('win', String(s.win));
  if (s.rates) p.set('rates', s.rates);
  if (s.dpol) p.set('dpol', s.dpol);
  if (s.dkind) p.set('dkind', s.dkind);
  if (s.dec) p.set('dec', s.dec);
  if (s.manual && (s.manual.threads.length > 0 || s.manual.regions.length > 0)) p.set('man', writeManual(s.manual));
  if (s.obj !== null) p.set('obj', String(s.obj));
  if (s.codeBy) p.set('cby', s.codeBy);
  if (s.codeLoc) p.set('cloc', s.codeLoc);
  else if (s.codeNode !== null) p.set('cloc', `n${s.codeNode}`);
  if (s.codeOp) p.set('cop', s.codeOp);
  if (s.codeObject) p.set('cobj', s.codeObject);
  if (s.codeThread !== null) p.set('cthr', String(s.codeThread));
  if (s.codeFn) p.set('cfn', s.codeFn);
  if (p.toString() !== before) p.set('v', String(URL_STATE_VERSION));
  const out = p.toString().replace(/%2F/g, '/').replace(/%3A/g, ':').replace(/%40/g, '@').replace(/%2C/g, ',').replace(/%7E/g, '~');
  return out ? `?${out}` : '';
}

export function sameViewState(a: ViewState, b: ViewState): boolean {
  return writeViewState('', a) === writeViewState('', b);
}
