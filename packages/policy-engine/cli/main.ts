/**
 * numascope-analyze: scripted analysis of traces (JSON and Markdown out). A Node front end of the
 * engine: it uses the package's public API (src/index.ts) and is the only part of the package
 * that uses Node APIs. docs/engine.md ("CLI") documents every command and JSON key.
 */
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parseArgs as parseNodeArgs } from 'node:util';
import {
  analysisReport,
  c2cTable,
  functionTable,
  type C2cTable,
  CODE_ATTRIBUTIONS,
  type CodeAttribution,
  type CodeOp,
  type FunctionTable,
  policyPlan,
  fixPlan,
  diagnoseReport,
  compareRecordings,
  speedupPerWork,
  type AnalysisReport,
  type AnalysisRequest,
  DIAGNOSE_DEFAULTS,
  type DiagnoseOptions,
  type DiagnosisJson,
  issueCodeLines,
  formatSpeedup,
  getPolicy,
  getPreset,
  isEngineError,
  isTraceError,
  listPresets,
  machineFromSysfs,
  machineFromText,
  needsPlacement,
  PlanBuildError,
  POLICY_DESCRIPTORS,
  POLICY_IDS,
  policyForms,
  PRESET_IDS,
  readTrace,
  zstdReady,
  RETARGET_RULES,
  type AnalysisResult,
  type AnalyzeOptions,
  type OfferedMachine,
  type ManualPlacement,
  type Policy,
  type RetargetRule,
  type Trace,
} from '../src/index.js';

/** `a, b, c and d`. */
function inWords(items: readonly string[]): string {
  return items.length <= 1 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

export const USAGE = `numascope-analyze: replay a numascope trace through placement policies

usage:
  numascope-analyze analyze TRACE [options]         metrics per policy
  numascope-analyze compare TRACE_A TRACE_B [options]  the same for two traces, with B − A
  numascope-analyze plan TRACE --policy NAME -o plan.json   a placement plan (docs/plan-format.md)
  numascope-analyze plan TRACE --fix FIX_ID -o plan.json    the plan of one diagnosed fix (ids: diagnose
                                                    --json, issues[].fix.id; --threshold as for diagnose)
  numascope-analyze diagnose TRACE [options]        NumaPerf-style issues ranked by score, with
                                                    allocation site, fix and the fix's predicted gain
  numascope-analyze code TRACE [--by site|self] [--limit N] [--json]
                                                    the functions that made the sampled accesses and
                                                    first touches (needs call stacks: format v3)
  numascope-analyze presets [--json]                machine presets

options (--opt VALUE or --opt=VALUE; -- ends the options; COMMAND --help: a command's own):
  --machine PRESET|FILE|DIR
                          the recorded machine's model: a calibration file (numascope bench -o),
                          hwloc XML, JSON, a preset or a sysfs directory (/sys or a copy: nodes,
                          HMAT access0 figures, memory tiers). Used when the trace embeds no
                          calibration (an embedded calibration comes first); one with other nodes
                          or cpus than the recording's re-targets, as --target-machine does
  --target-machine PRESET|FILE|DIR
                          re-target: replay the recording on this machine model, whatever the
                          trace embeds (what-if on another machine). The output says which model
                          was used and why (docs/engine.md, "Which machine model")
  --retarget-rule RULE    ${RETARGET_RULES.join(' | ')} (default modulo)
  --policy NAME           repeatable; default all: ${POLICY_IDS.join(', ')}; also ${inWords(policyForms().slice(POLICY_IDS.length))}
  --manual FILE           placement for the manual policy (JSON: {"threads":[{"thread":0,"node":1}],"pages":[{"firstPage":0,"lastPage":9,"node":2}]})
  --window-ms N           replay window, ms (default 100; for NUMA hinting-fault recordings about
                          four of the kernel's scan passes, from the trace)
  --from-ms N, --to-ms N  replay only the windows overlapping [N, M) ms since the capture start
                          (either may be left out: from the start / to the end); code: only the
                          samples in [N, M)
  --seed N                seed for randomised policies (default 1)
  --no-steady-state       make the window-by-window replay the headline instead of the steady
                          state (each policy's converged placement held over the whole recording,
                          the default; docs/engine.md, "Steady state"); --steady-state is the default
  --baseline NAME         policy the speedup is measured against (default observed: what actually
                          ran; first-touch when the trace records no page placement)
  --access-estimate auto|uniform|off
                          traces without access samples (page faults, the placement scan and
                          /proc only): ESTIMATE traffic from page placement, assuming every
                          thread reads every page equally; only ${inWords(POLICY_DESCRIPTORS.filter((d) => !d.needsMeasuredAccesses).map((d) => d.id))}
                          can run. auto (the default): the estimate exactly when the trace has no
                          access samples, said in the output (ESTIMATED) and the JSON
                          (estimate: "uniform"); uniform: the same; off: refuse such a trace
  --access-rates typical|bandwidth-bound
                          NUMA hinting-fault recordings (no PMU: which thread touched which page,
                          not how often): the access rate to assume. typical (the default): a
                          memory-bound code, stalled half of the time; bandwidth-bound: a
                          streaming code (STREAM, large copies or scans) that keeps each core's
                          outstanding-miss limit in flight, which you know and say (it decides
                          whether slower memory, e.g. a CXL node, is worth adding bandwidth:
                          weighted-interleave). Ignored when the trace has measured rates
  --threshold NAME=N      diagnose: change a threshold (repeatable): ${Object.keys(DIAGNOSE_DEFAULTS).join(', ')}
  --by site|self          code: attribute each sample to its code site (default: the innermost
                          frame outside allocators and language runtimes, so a libc memset counts
                          for its caller) or to its own frame (the sampled instruction's function)
  --limit N               code: functions listed, busiest first (default 20)
  --thread TID            code: only the samples of this thread (kernel tid)
  --op load|store|fault   code: only these samples (fault: first touches)
  --node N                code: only the samples of memory on node N (samples.node)
  --json | --markdown     output format (default: a text table)
  -o, --output FILE       output file (plan; for the others: instead of stdout)
  --system-weights        plan, weighted-interleave: also write the weights as the plan's
                          systemWeights (sysfs, system-wide: numascope apply writes them only
                          with its own explicit flag)

weighted interleave and tiering: on a machine with memory-only (cpu-less) nodes or several memory
tiers, analyze also replays weighted-interleave (with the weights the engine recommends, and the
curve of predicted time against the DRAM share) and tiering; weighted-interleave:N=W,M=W,… (node
indices, weights 1–255) replays given weights.
`;

class UsageError extends Error {}

interface Args {
  command: string;
  files: string[];
  machine?: string;
  targetMachine?: string;
  retargetRule?: RetargetRule;
  policies: string[];
  manual?: string;
  windowMs?: number;
  fromMs?: number;
  toMs?: number;
  seed?: number;
  baseline?: string;
  accessEstimate: 'uniform' | 'auto' | 'off';
  accessRates?: 'typical' | 'bandwidth-bound';
  steadyState?: boolean;
  format: 'text' | 'json' | 'markdown';
  out?: string;
  thresholds: DiagnoseOptions;
  systemWeights?: boolean;
  fix?: string;
  by?: CodeAttribution;
  limit?: number;
  tid?: number;
  op?: CodeOp;
  node?: number;
  help: boolean;
}

type Command = 'analyze' | 'compare' | 'plan' | 'diagnose' | 'code' | 'c2c' | 'presets';
const COMMANDS: readonly Command[] = ['analyze', 'compare', 'plan', 'diagnose', 'code', 'c2c', 'presets'];
const TRACE_COMMANDS: readonly Command[] = ['analyze', 'compare', 'plan', 'diagnose'];

/** Each command's usage lines: the overview's, and the first lines of `COMMAND --help`. */
const COMMAND_USAGE: Record<Command, string> = {
  analyze: 'numascope-analyze analyze TRACE [options]         metrics per policy',
  compare: 'numascope-analyze compare TRACE_A TRACE_B [options]  the same for two traces, with B − A',
  plan: `numascope-analyze plan TRACE --policy NAME -o plan.json   a placement plan (docs/plan-format.md)
  numascope-analyze plan TRACE --fix FIX_ID -o plan.json    the plan of one diagnosed fix (ids: diagnose
                                                    --json, issues[].fix.id; --threshold as for diagnose)`,
  diagnose: `numascope-analyze diagnose TRACE [options]        NumaPerf-style issues ranked by score, with
                                                    allocation site, fix and the fix's predicted gain`,
  code: `numascope-analyze code TRACE [--by site|self] [--limit N] [--json]
                                                    the functions that made the sampled accesses and
                                                    first touches (needs call stacks: format v3)`,
  c2c: `numascope-analyze c2c TRACE [--limit N] [--json]   perf c2c's Shared Data Cache Line Table: the
                                                    cache lines with HITM loads (IBS/PEBS imports)`,
  presets: 'numascope-analyze presets [--json]                machine presets',
};

/**
 * The options (node:util parseArgs: `--opt value`, `--opt=value`, `--` ends the options) and the
 * commands that use each; an option given to a command that does not use it is a usage error.
 */
const OPTION_SPECS = {
  machine: { type: 'string', for: TRACE_COMMANDS },
  'target-machine': { type: 'string', for: TRACE_COMMANDS },
  'retarget-rule': { type: 'string', for: TRACE_COMMANDS },
  policy: { type: 'string', multiple: true, for: ['analyze', 'compare', 'plan'] },
  manual: { type: 'string', for: ['analyze', 'compare', 'plan'] },
  fix: { type: 'string', for: ['plan'] },
  'window-ms': { type: 'string', for: TRACE_COMMANDS },
  'from-ms': { type: 'string', for: [...TRACE_COMMANDS, 'code'] },
  'to-ms': { type: 'string', for: [...TRACE_COMMANDS, 'code'] },
  seed: { type: 'string', for: TRACE_COMMANDS },
  baseline: { type: 'string', for: TRACE_COMMANDS },
  'access-rates': { type: 'string', for: TRACE_COMMANDS },
  'access-estimate': { type: 'string', for: TRACE_COMMANDS },
  'steady-state': { type: 'boolean', for: TRACE_COMMANDS },
  'no-steady-state': { type: 'boolean', for: TRACE_COMMANDS },
  threshold: { type: 'string', multiple: true, for: ['diagnose', 'plan'] },
  'system-weights': { type: 'boolean', for: ['plan'] },
  by: { type: 'string', for: ['code'] },
  limit: { type: 'string', for: ['code', 'c2c'] },
  thread: { type: 'string', for: ['code'] },
  op: { type: 'string', for: ['code'] },
  node: { type: 'string', for: ['code'] },
  json: { type: 'boolean', for: COMMANDS },
  markdown: { type: 'boolean', for: ['analyze', 'compare', 'diagnose'] },
  output: { type: 'string', short: 'o', for: COMMANDS },
  help: { type: 'boolean', short: 'h', for: COMMANDS },
} as const satisfies Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string; for: readonly Command[] }>;
type OptionName = keyof typeof OPTION_SPECS;

/**
 * `COMMAND --help`: its usage lines and the paragraphs of USAGE's option list for the options
 * it takes (one text for both, so the two never disagree).
 */
export function commandHelp(command: Command): string {
  const lines = USAGE.split('\n');
  const start = lines.findIndex((l) => l.startsWith('options')) + 1;
  const end = lines.findIndex((l, k) => k > start && l !== '' && !l.startsWith(' '));
  const paragraphs: string[][] = [];
  for (const l of lines.slice(start, end < 0 ? undefined : end)) {
    if (/^  -/.test(l)) paragraphs.push([l]);
    else if (l.trim() !== '' && paragraphs.length > 0) paragraphs[paragraphs.length - 1]!.push(l);
  }
  const takes = (p: string[]) =>
    [...p[0]!.matchAll(/--([a-z-]+)|(?:^|\s)-([a-z])\b/g)].some((m) => {
      const name = (m[1] ?? Object.entries(OPTION_SPECS).find(([, v]) => 'short' in v && v.short === m[2])?.[0]) as OptionName | undefined;
      return name !== undefined && name in OPTION_SPECS && (OPTION_SPECS[name].for as readonly Command[]).includes(command);
    });
  const options = paragraphs.filter(takes).map((p) => p.join('\n'));
  return `usage:\n  ${COMMAND_USAGE[command]}\n\noptions:\n${options.join('\n')}\n  -h, --help              this help\n\n(numascope-analyze --help: every command)`;
}

function parseArgs(argv: string[]): Args {
  const command = argv[0] ?? '';
  if (!(COMMANDS as readonly string[]).includes(command)) {
    throw new UsageError(`unknown command "${command}"; commands: ${COMMANDS.join(', ')} (--help for usage)`);
  }
  const cmd = command as Command;
  const options = Object.fromEntries(Object.entries(OPTION_SPECS).map(([k, v]) => [k, { type: v.type, ...('multiple' in v ? { multiple: v.multiple } : {}), ...('short' in v ? { short: v.short } : {}) }]));
  let parsed: { values: Record<string, string | boolean | string[] | undefined>; positionals: string[] };
  try {
    // A negative number after an option that takes a value is that value (`--from-ms -3`), for the
    // range checks below to name it; node:util would call it an ambiguous option.
    const given = argv.slice(1);
    for (let k = 0; k + 1 < given.length; k++) {
      const name = /^--([a-z-]+)$/.exec(given[k]!)?.[1] as OptionName | undefined;
      if (name && name in OPTION_SPECS && OPTION_SPECS[name].type === 'string' && /^-[0-9.]/.test(given[k + 1]!)) given.splice(k, 2, `--${name}=${given[k + 1]}`);
    }
    parsed = parseNodeArgs({ args: given, options: options as Parameters<typeof parseNodeArgs>[0] extends infer O ? O extends { options?: infer T } ? T : never : never, allowPositionals: true, strict: true }) as typeof parsed;
  } catch (e) {
    const err = e as Error & { code?: string };
    // node:util's messages name the option; a value that looks like an option is "ambiguous" there.
    const m = /'(-[^' ]+)/.exec(err.message);
    if (err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') throw new UsageError(`unknown option ${m?.[1] ?? err.message} (numascope-analyze ${cmd} --help lists its options)`);
    if (err.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') throw new UsageError(`${m?.[1] ?? 'an option'} needs a value${/ambiguous/.test(err.message) ? ' (the next argument looks like an option: write --opt=VALUE to pass it)' : ''}`);
    throw new UsageError(err.message);
  }
  const v = parsed.values;
  for (const name of Object.keys(v) as OptionName[]) {
    if (v[name] !== undefined && !(OPTION_SPECS[name].for as readonly Command[]).includes(cmd)) {
      throw new UsageError(`option --${name} is not used by ${cmd} (numascope-analyze ${cmd} --help lists its options)`);
    }
  }
  const args: Args = { command, files: parsed.positionals, policies: (v.policy as string[] | undefined) ?? [], format: 'text', accessEstimate: 'auto', thresholds: {}, help: v.help === true };
  const str = (name: OptionName): string | undefined => v[name] as string | undefined;
  const number = (name: OptionName, integer: boolean): number | undefined => {
    const raw = str(name);
    if (raw === undefined) return undefined;
    const n = Number(raw);
    if (raw.trim() === '' || !Number.isFinite(n) || (integer && !Number.isInteger(n)) || (!integer && n <= 0)) {
      throw new UsageError(`--${name} must be ${integer ? 'an integer' : 'a positive number'}, got "${raw}"`);
    }
    return n;
  };
  args.machine = str('machine');
  args.targetMachine = str('target-machine');
  const rule = str('retarget-rule');
  if (rule !== undefined) {
    if (!RETARGET_RULES.includes(rule as RetargetRule)) throw new UsageError(`--retarget-rule must be one of ${RETARGET_RULES.join(', ')}, got "${rule}"`);
    args.retargetRule = rule as RetargetRule;
  }
  args.manual = str('manual');
  args.fix = str('fix');
  args.windowMs = number('window-ms', false);
  for (const name of ['from-ms', 'to-ms'] as const) {
    const raw = str(name);
    if (raw === undefined) continue;
    const n = Number(raw);
    if (!/^\s*[0-9.e+]+\s*$/i.test(raw) || !Number.isFinite(n) || n < 0) throw new UsageError(`--${name} must be a number of milliseconds ≥ 0, got "${raw}"`);
    if (name === 'from-ms') args.fromMs = n;
    else args.toMs = n;
  }
  args.seed = number('seed', true);
  args.baseline = str('baseline');
  const rates = str('access-rates');
  if (rates !== undefined) {
    if (rates !== 'typical' && rates !== 'bandwidth-bound') throw new UsageError(`--access-rates must be "typical" or "bandwidth-bound", got "${rates}"`);
    args.accessRates = rates;
  }
  const estimate = str('access-estimate');
  if (estimate !== undefined) {
    if (estimate !== 'uniform' && estimate !== 'auto' && estimate !== 'off') throw new UsageError(`--access-estimate must be "auto", "uniform" or "off", got "${estimate}"`);
    args.accessEstimate = estimate;
  }
  // The last of --steady-state / --no-steady-state wins, as the flags were given.
  const steady = argv.filter((a) => a === '--steady-state' || a === '--no-steady-state').pop();
  if (steady) args.steadyState = steady === '--steady-state';
  for (const raw of (v.threshold as string[] | undefined) ?? []) {
    const m = /^([A-Za-z]+)=(.+)$/.exec(raw);
    const n = m ? Number(m[2]) : Number.NaN;
    if (!m || !(m[1]! in DIAGNOSE_DEFAULTS)) throw new UsageError(`--threshold must be NAME=N with NAME one of ${Object.keys(DIAGNOSE_DEFAULTS).join(', ')}; got "${raw}"`);
    if (!Number.isFinite(n) || n < 0) throw new UsageError(`--threshold ${m[1]} must be a number ≥ 0, got "${m[2]}"`);
    (args.thresholds as Record<string, number>)[m[1]!] = n;
  }
  if (v['system-weights'] === true) args.systemWeights = true;
  const by = str('by');
  if (by !== undefined) {
    if (!(CODE_ATTRIBUTIONS as readonly string[]).includes(by)) throw new UsageError(`--by must be ${CODE_ATTRIBUTIONS.join(' or ')}, got "${by}"`);
    args.by = by as CodeAttribution;
  }
  const limit = number('limit', true);
  if (limit !== undefined && limit < 1) throw new UsageError(`--limit must be at least 1, got "${str('limit')}"`);
  args.limit = limit;
  args.tid = number('thread', true);
  const op = str('op');
  if (op !== undefined) {
    if (op !== 'load' && op !== 'store' && op !== 'fault') throw new UsageError(`--op must be load, store or fault, got "${op}"`);
    args.op = op;
  }
  args.node = number('node', true);
  if (v.json === true && v.markdown === true) throw new UsageError('--json and --markdown: pick one output format');
  if (v.json === true) args.format = 'json';
  if (v.markdown === true) args.format = 'markdown';
  args.out = str('output');
  return args;
}

function readFile(path: string, what: string): Uint8Array {
  try {
    return new Uint8Array(readFileSync(path));
  } catch (e) {
    throw new UsageError(`cannot read ${what} ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}

function loadTrace(path: string): Trace {
  return readTrace(readFile(path, 'trace'));
}

/**
 * The files machineFromSysfs reads, from a directory that is /sys or a copy of it (with
 * devices/system/node and devices/virtual/memory_tiering under it).
 */
function readSysfs(root: string): Map<string, string> {
  const files = new Map<string, string>();
  const nodeDir = join(root, 'devices/system/node');
  if (!existsSync(nodeDir)) throw new UsageError(`--machine ${root}: a directory, but not a sysfs copy (no devices/system/node under it)`);
  const read = (rel: string) => {
    try {
      files.set(rel, readFileSync(join(root, rel), 'utf8'));
    } catch {
      // absent on this kernel or firmware: the loader says what it lacks
    }
  };
  for (const entry of readdirSync(nodeDir)) {
    if (!/^node\d+$/.test(entry)) continue;
    for (const f of ['cpulist', 'meminfo', 'distance', ...['read_bandwidth', 'write_bandwidth', 'read_latency', 'write_latency'].map((x) => `access0/initiators/${x}`)]) read(`devices/system/node/${entry}/${f}`);
  }
  const tierDir = join(root, 'devices/virtual/memory_tiering');
  if (existsSync(tierDir)) for (const entry of readdirSync(tierDir)) if (/^memory_tier\d+$/.test(entry)) read(`devices/virtual/memory_tiering/${entry}/nodelist`);
  return files;
}

function loadMachine(spec: string, flag: string): OfferedMachine {
  if (PRESET_IDS.includes(spec)) return { machine: getPreset(spec), name: spec };
  if (!/[./]/.test(spec)) throw new UsageError(`${flag} "${spec}" is neither a preset (${PRESET_IDS.join(', ')}) nor a file path`);
  if (existsSync(spec) && statSync(spec).isDirectory()) return { machine: machineFromSysfs(readSysfs(spec), basename(spec) || 'sysfs'), name: basename(spec) || 'sysfs' };
  const text = new TextDecoder().decode(readFile(spec, 'machine file'));
  return { machine: machineFromText(text, basename(spec)), name: basename(spec) };
}

/** The model to replay `trace` on (machine/choice.ts): the embedded calibration, --machine, --target-machine or the recorded machine. */
function policiesOf(args: Args): Policy[] | undefined {
  if (args.policies.length === 0) return undefined;
  return args.policies.map((id) => {
    if (!needsPlacement(id)) return getPolicy(id);
    if (!args.manual) throw new UsageError(`--policy ${id} needs --manual FILE.json with the placement`);
    let spec: ManualPlacement;
    try {
      spec = JSON.parse(new TextDecoder().decode(readFile(args.manual, 'manual placement')));
    } catch (e) {
      if (e instanceof UsageError) throw e;
      throw new UsageError(`--manual ${args.manual} is not valid JSON: ${(e as Error).message}`);
    }
    return getPolicy(id, { placement: spec });
  });
}

function timeRangeOf(args: Args): AnalyzeOptions['timeRangeUs'] {
  if (args.fromMs === undefined && args.toMs === undefined) return undefined;
  const startUs = (args.fromMs ?? 0) * 1000;
  const endUs = args.toMs === undefined ? Number.MAX_SAFE_INTEGER : args.toMs * 1000;
  if (endUs <= startUs) throw new UsageError(`--to-ms (${args.toMs}) must be greater than --from-ms (${args.fromMs ?? 0})`);
  return { startUs, endUs };
}

function rangeOf(args: Args): AnalysisRequest['range'] {
  const t = timeRangeOf(args);
  return t ? { fromUs: t.startUs, toUs: t.endUs } : null;
}

function optionsOf(args: Args): AnalyzeOptions {
  return {
    timeRangeUs: timeRangeOf(args),
    retargetRule: args.retargetRule,
    windowMs: args.windowMs,
    policies: policiesOf(args),
    seed: args.seed,
    baseline: args.baseline,
    accessEstimate: args.accessEstimate === 'off' ? undefined : args.accessEstimate,
    ...(args.accessRates ? { accessRates: args.accessRates } : {}),
    steadyState: args.steadyState,
  };
}

const fmt = (v: number | null, digits: number) => (v === null ? '–' : v.toFixed(digits));
type PolicyJson = AnalysisOut['policies'][number];
type Column = [string, (p: PolicyJson) => string];
const HEAD_COLUMNS: Column[] = [
  ['policy', (p) => p.policy],
  ['local %', (p) => fmt(p.localAccessRatio * 100, 1)],
  ['latency ns', (p) => fmt(p.memoryLatencyNs, 0)],
  ['MC imbalance %', (p) => fmt(p.mcImbalancePct, 1)],
  ['link usage %', (p) => fmt(p.interconnectUsagePct, 1)],
  ['link imbalance %', (p) => fmt(p.interconnectImbalancePct, 1)],
  ['predicted s', (p) => fmt(p.predictedUs / 1e6, 3)],
  ['speedup', (p) => formatSpeedup(p.predictedSpeedup)],
];
const TAIL_COLUMNS: Column[] = [['placements', (p) => (p.placementsTotal === null ? '–' : `${p.placementsEvaluated}/${p.placementsTotal}`)]];
/** --no-steady-state: the replay is the headline. */
const REPLAY_COLUMNS: Column[] = [...HEAD_COLUMNS, ['migrated MiB', (p) => fmt(p.replay.migratedBytes / 1048576, 1)], ...TAIL_COLUMNS];
/** The default: the steady state is the headline (docs/engine.md, "Steady state"), then the replay as the transient. */
const STEADY_COLUMNS: Column[] = [
  ...HEAD_COLUMNS,
  ['pages to move', (p) => String(p.pagesToMove)],
  ['replay s', (p) => fmt(p.replay.predictedUs / 1e6, 3)],
  ['replay speedup', (p) => formatSpeedup(p.replay.predictedSpeedup)],
  ['converged at', (p) => (p.replay.convergedAtWindow === null ? `+${p.steadyState!.continuationRounds} rounds` : `window ${p.replay.convergedAtWindow}`)],
  ['moved on the way MiB', (p) => fmt(p.replay.migratedBytes / 1048576, 1)],
  ...TAIL_COLUMNS,
];

function table(json: AnalysisOut, markdown: boolean): string {
  const COLUMNS = json.headline === 'steady-state' ? STEADY_COLUMNS : REPLAY_COLUMNS;
  const rows = json.policies.map((p) => COLUMNS.map(([, f]) => f(p)));
  const head = COLUMNS.map(([h]) => h);
  if (markdown) {
    return [`| ${head.join(' | ')} |`, `| ${head.map((_, i) => (i === 0 ? '---' : '---:')).join(' | ')} |`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
  }
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(head), ...rows.map(line)].join('\n');
}

function report(json: AnalysisOut, markdown: boolean): string {
  const out: string[] = [];
  const t = json.trace;
  out.push(markdown ? `## ${t?.file ?? 'trace'}` : `${t?.file ?? 'trace'}`);
  out.push(`${t ? `origin ${t.origin}; ` : ''}machine ${json.machine.name} (${json.machine.nodeCount} nodes, ${json.machine.source}); ${json.windowCount} windows of ${json.windowMs} ms${json.range ? ` (${json.range.fromUs / 1000}–${json.range.toUs / 1000} ms only: windows ${json.range.firstWindow}–${json.range.firstWindow + json.windowCount - 1} of ${json.range.totalWindows})` : ''}; recorded ${(json.recordedUs / 1e6).toFixed(3)} s; speedup = ${json.baseline}'s predicted time / the policy's`);
  const mc = json.machine.choice;
  out.push(`${markdown ? '- ' : '  '}machine model: ${mc.used} (${mc.reason})`);
  for (const n of mc.notes) out.push(`${markdown ? '- ' : '  note: '}${n}`);
  if (json.estimate) {
    out.push(
      `${markdown ? '**' : '  '}ESTIMATED${markdown ? '**' : ''}: this trace has no memory-access samples, so traffic is estimated from page placement alone ` +
        '(every thread reads every page equally): which node is the hot spot and what spreading pages would even out are meaningful, rates and latencies are not' +
        (json.notes.some((n) => n.includes('access estimate "auto"')) ? ' (--access-estimate off refuses such a trace instead)' : ''),
    );
  }
  for (const note of json.notes) out.push(`${markdown ? '- ' : '  note: '}${note}`);
  for (const u of json.unavailable) out.push(`${markdown ? '- ' : '  '}not run: ${u.reason}`);
  if (json.nodes) {
    const loads = json.nodes.nodeIds.map((id, i) => `node ${id} ${(json.nodes!.share[i]! * 100).toFixed(0)}%`).join(', ');
    out.push(`${markdown ? '- ' : '  '}memory traffic by node (${json.nodes.policy}${json.estimate ? ', ESTIMATED' : ''}): ${loads}; hot spot: ${json.nodes.hotSpot === null ? 'none' : `node ${json.nodes.hotSpot}`}`);
  }
  out.push('');
  if (json.headline === 'steady-state') {
    out.push(
      `${markdown ? '' : '  '}headline: steady state (each policy's converged placement held over the whole recording: metric columns, predicted s, speedup, pages to move from the recorded placement); ` +
        `replay: the window-by-window replay (the transient) with its moves and their migration cost`,
    );
    out.push('');
  }
  out.push(table(json, markdown));
  out.push('');
  // Why each prediction is what it is (docs/engine.md, "Decomposition").
  out.push(markdown ? '### Why' : 'why (headline: compute + waiting for memory; the latency by part; the busiest resource):');
  for (const p of json.policies) out.push(`${markdown ? '- ' : '  '}${p.policy}: ${p.why.text}`);
  out.push('');
  for (const p of json.policies) out.push(...weightsReport(p, markdown));
  for (const p of json.policies) {
    if (p.decisions.length === 0) continue;
    out.push(markdown ? `### ${p.policy}: ${p.decisionCount} decisions` : `${p.policy}: ${p.decisionCount} decisions`);
    for (const d of p.decisions.slice(0, 5)) out.push(`${markdown ? '- ' : '  '}window ${d.window} ${d.kind}: ${d.explanation}`);
    if (p.decisionCount > 5) out.push(`${markdown ? '- ' : '  '}… ${p.decisionCount - 5} more (--json lists the first 50)`);
  }
  return out.join('\n');
}

/** The weights of a weighted-interleave policy and its recommendation's curve, in words and a table. */
function weightsReport(p: PolicyJson, markdown: boolean): string[] {
  const w = p.weights;
  if (!w) return [];
  const out: string[] = [];
  const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
  const rel = (x: number | null) => (x === null ? '–' : x.toFixed(3));
  out.push(markdown ? `### ${p.policy}: weights` : `${p.policy}: weights`);
  const li = markdown ? '- ' : '  ';
  out.push(`${li}weights: ${w.nodes.map((n, k) => `node ${n} × ${w.weights[k]}`).join(', ')} (${w.weights.join(':')})`);
  out.push(`${li}${w.numactl}; ${Object.entries(w.sysfs).map(([f, v]) => `echo ${v} > ${f}`).join('; ')}`);
  out.push(`${li}${w.note}`);
  for (const o of w.objects) out.push(`${li}site ${o.site}: ${o.nodes.map((n, k) => `node ${n} × ${o.weights[k]}`).join(', ')} (DRAM share ${pct(o.dramShare)})`);
  const r = w.recommendation;
  if (r) {
    out.push(
      `${li}recommended: DRAM share ${pct(r.dramShare)} (${r.sides}); curve optimum ${pct(r.optimum.dramShare)}; within ${r.flat.band * 100} % of the optimum from ${pct(r.flat.fromShare)} to ${pct(r.flat.toShare)}; ` +
        `time vs DRAM alone: recommended ${rel(r.timeVsDramOnly)}, bandwidth ratio ${r.bandwidthRatio.weights.join(':')} ${rel(r.bandwidthRatio.timeVsDramOnly)}, equal weights ${rel(r.equalWeightsTimeVsDramOnly)}`,
    );
    out.push('');
    // The grid (every 5 %), the bandwidth-ratio start and the optimum; --json has every point of the refinement too.
    const onGrid = (x: number) => Math.abs(x * 20 - Math.round(x * 20)) < 1e-6;
    const shown = r.curve.filter((c) => onGrid(c.dramShare) || c.dramShare === r.optimum.dramShare || Math.abs(c.dramShare - r.bandwidthRatio.dramShare) < 1e-6);
    if (markdown) {
      out.push('| DRAM share | time vs DRAM alone | |', '| ---: | ---: | --- |');
      for (const c of shown) out.push(`| ${pct(c.dramShare)} | ${rel(c.timeVsDramOnly)} | ${c.dramShare === r.optimum.dramShare ? 'optimum' : ''} |`);
    } else {
      out.push('  DRAM share  time vs DRAM alone');
      for (const c of shown) out.push(`  ${pct(c.dramShare).padStart(10)}  ${rel(c.timeVsDramOnly).padStart(18)}${c.dramShare === r.optimum.dramShare ? '  optimum' : ''}`);
    }
    out.push('');
  }
  return out;
}

function diagnosisReport(json: DiagnosisJson & { trace: { file: string }; baseline: string }, markdown: boolean): string {
  const out: string[] = [];
  const gain = (f: DiagnosisJson['issues'][number]['fix']) => (f.predictedSpeedup !== null ? `predicted ${formatSpeedup(f.predictedSpeedup)} vs ${json.baseline}` : `no prediction: ${f.noPrediction}`);
  out.push(markdown ? `## Diagnosis of ${json.trace.file}` : `diagnosis of ${json.trace.file} (${json.durationMs.toFixed(1)} ms)`);
  if (json.unavailable) out.push(markdown ? `**Not diagnosed:** ${json.unavailable}` : `not diagnosed: ${json.unavailable}`);
  else if (json.issues.length === 0) out.push('no issue above its threshold');
  if (markdown && json.issues.length > 0) {
    out.push('', '| # | issue | score (threshold) | site | fix | planable | gain |', '| --- | --- | --- | --- | --- | --- | --- |');
    for (const i of json.issues) out.push(`| ${i.rank} | ${i.kind} | ${i.score} ${i.scoreUnit} (${i.threshold}) | ${i.site ?? '–'} | ${i.fix.kind}: ${i.fix.text} | ${i.fix.planable ? `yes (\`--fix ${i.fix.id}\`)` : `no: ${i.fix.noPlan}`} | ${gain(i.fix)} |`);
    out.push('');
  }
  for (const i of json.issues) {
    if (markdown) {
      out.push(`### ${i.rank}. ${i.kind}`, `- ${i.text}`, ...(i.stack.length > 0 ? [`- stack: ${i.stack.join(' ← ')}`] : []), ...(i.code ? issueCodeLines(i.code).map((l) => `- ${l}`) : []));
      continue;
    }
    out.push(`${i.rank}. ${i.kind} score ${i.score} ${i.scoreUnit} (threshold ${i.threshold})`, `   ${i.text}`);
    if (i.site) out.push(`   site: ${i.site}${i.stack.length > 1 ? ` (stack: ${i.stack.join(' ← ')})` : ''}`);
    // The code behind the object (the functions that first-touched it and access it), or why none.
    if (i.code) out.push(...issueCodeLines(i.code).map((l) => `   ${l}`));
    out.push(`   fix ${i.fix.id}: ${i.fix.text}${i.fix.planable ? ' [planable: numascope-analyze plan TRACE --fix ID -o plan.json]' : ` [no plan: ${i.fix.noPlan}]`}`, `   ${gain(i.fix)}`);
  }
  for (const n of json.notes) out.push(markdown ? `- note: ${n}` : `note: ${n}`);
  return out.join('\n');
}

/** The options of `code` as the engine's (the thread by its tid, the node checked against the machine). */
function codeOptionsOf(args: Args, trace: Trace): Parameters<typeof functionTable>[1] {
  const t = timeRangeOf(args);
  let threads: number[] | null = null;
  if (args.tid !== undefined) {
    const tids = trace.tables.threads.getChild('tid')!.toArray() as Int32Array;
    threads = [];
    tids.forEach((tid, row) => tid === args.tid && threads!.push(row));
    if (threads.length === 0) throw new UsageError(`--thread ${args.tid}: no thread of the trace has that tid (${tids.length} threads)`);
  }
  if (args.node !== undefined && !trace.manifest.machine.nodes.some((n) => n.id === args.node)) {
    throw new UsageError(`--node ${args.node}: not a node of machine "${trace.manifest.machine.name}" (${trace.manifest.machine.nodes.map((n) => n.id).join(', ')})`);
  }
  return {
    by: args.by ?? 'site',
    limit: args.limit ?? 20,
    range: t ? { fromUs: t.startUs, toUs: t.endUs } : null,
    threads,
    op: args.op ?? null,
    node: args.node ?? null,
  };
}

/** First touches are the weighted estimate (sum of the fault rows' weight) by node; pages sampled the distinct pages those rows saw. */
const CODE_COLUMNS = ['function', 'file:line', 'accesses', 'remote %', 'latency ns', 'first touches (est.) by node', 'pages sampled', 'objects'];

/** `code` as text: what was attributed how, then a table of the busiest functions. */
function codeReport(table: FunctionTable, file: string): string {
  const out: string[] = [];
  if (!table.available) {
    out.push(`code of ${file}: no code locations in this trace: ${table.reason}`);
    out.push(CODE_COLUMNS.join('  '));
    return out.join('\n');
  }
  const t = table.totals;
  out.push(
    `code of ${file}, by ${table.by === 'site' ? 'code site (the innermost frame outside allocators and language runtimes)' : 'self frame (the sampled instruction)'}: ` +
      `${t.withStack} of ${t.samples} samples have a call stack; ${t.accesses} accesses and ${t.firstTouches} first touches` +
      (t.withoutStack.accesses + t.withoutStack.firstTouches > 0 ? ` (without a stack, attributed to no function: ${t.withoutStack.accesses} accesses, ${t.withoutStack.firstTouches} first touches)` : ''),
  );
  out.push(`  code locations: ${table.reason}`);
  if (t.siteFallbacks > 0) out.push(`  note: ${t.siteFallbacks} samples have a stack wholly inside runtimes: attributed to their own frame`);
  if (table.rows.some((r) => r.latencySamples > 0)) out.push(`  latency: PMU cycles / ${table.clock.ghz === null ? 'an unknown clock (no ns)' : `${table.clock.ghz} GHz`} (${table.clock.source})`);
  const rows = table.rows.map((r) => [
    r.function,
    r.location ?? '–',
    String(r.accesses),
    r.remoteShare === null ? '–' : (r.remoteShare * 100).toFixed(1),
    r.meanLatencyNs === null ? '–' : r.meanLatencyNs.toFixed(0),
    r.firstTouchesByNode.length === 0 ? '–' : r.firstTouchesByNode.map((p) => `${p.node < 0 ? '?' : p.node}:${p.firstTouches}`).join(' '),
    r.firstTouchesByNode.length === 0 ? '–' : String(r.pagesSampled),
    r.objects.length === 0 ? '–' : r.objects.slice(0, 3).map((o) => o.site).join('; '),
  ]);
  const widths = CODE_COLUMNS.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const right = new Set([2, 3, 4, 6]);
  const line = (r: string[]) => r.map((c, i) => (i === r.length - 1 ? c : right.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ');
  out.push('', line(CODE_COLUMNS), ...rows.map(line));
  if (table.functionCount > table.rows.length) out.push(`… ${table.functionCount - table.rows.length} more functions (--limit N)`);
  return out.join('\n');
}

type AnalysisOut = AnalysisReport;

/** The request the flags make (the one engine request API: analysisReport). */
function requestOf(args: Args, diagnose: boolean): AnalysisRequest {
  return {
    policies: args.policies.length === 0 ? null : policiesOf(args),
    baseline: args.baseline ?? null,
    machine: {
      machine: args.machine ? loadMachine(args.machine, '--machine') : undefined,
      target: args.targetMachine ? loadMachine(args.targetMachine, '--target-machine') : undefined,
    },
    retargetRule: args.retargetRule,
    estimate: args.accessEstimate,
    windowMs: args.windowMs ?? null,
    range: rangeOf(args),
    accessRates: args.accessRates ?? null,
    ...(args.seed !== undefined ? { seed: args.seed } : {}),
    ...(args.steadyState !== undefined ? { steadyState: args.steadyState } : {}),
    diagnose,
  };
}

function analyzeFile(path: string, args: Args, diagnose = true): { result: AnalysisResult; json: AnalysisOut } {
  const trace = loadTrace(path);
  const { result, report } = analysisReport(trace, requestOf(args, diagnose), { traceFile: basename(path) });
  return { result, json: report };
}

const DELTA_KEYS = ['localAccessRatio', 'memoryLatencyNs', 'mcImbalancePct', 'interconnectUsagePct', 'interconnectImbalancePct', 'predictedUs', 'pagesToMove'] as const;

async function run(argv: string[], print: (s: string) => void): Promise<number> {
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
    print(USAGE);
    return argv.length === 0 ? 1 : 0;
  }
  const args = parseArgs(argv);
  if (args.help) {
    print(commandHelp(args.command as Command));
    return 0;
  }
  const emit = (text: string) => {
    if (args.out) writeFileSync(args.out, text + '\n');
    else print(text);
  };
  switch (args.command) {
    case 'presets': {
      const presets = listPresets().map((p) => ({
        id: p.id,
        description: p.description,
        nodes: p.machine.nodes.length,
        cpus: p.machine.nodes.reduce((s, n) => s + n.cpus.length, 0),
        links: p.machine.links.length,
        memoryBandwidthGBps: p.machine.nodes.map((n) => n.memoryBandwidthGBps),
        memoryBytes: p.machine.nodes.map((n) => n.memoryBytes),
        provenance: p.machine.provenance,
        figures: p.figures,
      }));
      if (args.format === 'json') emit(JSON.stringify(presets, null, 2));
      else emit(presets.map((p) => `${p.id.padEnd(26)} ${String(p.nodes).padStart(2)} nodes ${String(p.cpus).padStart(4)} cpus  ${p.description}`).join('\n'));
      return 0;
    }
    case 'analyze': {
      if (args.files.length !== 1) throw new UsageError(`analyze takes one TRACE, got ${args.files.length}`);
      const { json } = analyzeFile(args.files[0]!, args);
      emit(args.format === 'json' ? JSON.stringify(json, null, 2) : report(json, args.format === 'markdown'));
      return 0;
    }
    case 'compare': {
      if (args.files.length !== 2) throw new UsageError(`compare takes two traces, TRACE_A TRACE_B; got ${args.files.length}`);
      const a = analyzeFile(args.files[0]!, args, false).json;
      const b = analyzeFile(args.files[1]!, args, false).json;
      // Compared by work, not by duration (the two may be of different lengths).
      const work = compareRecordings(a, b);
      const deltas = a.policies
        .filter((pa) => b.policies.some((pb) => pb.policy === pa.policy))
        .map((pa) => {
          const pb = b.policies.find((p) => p.policy === pa.policy)!;
          // Ratios of predicted times (never a difference of speedups): > 1 when B is faster;
          // per unit of work: the same work done faster.
          return {
            policy: pa.policy,
            ...Object.fromEntries(DELTA_KEYS.map((k) => [k, pb[k] - pa[k]])),
            speedupBOverA: pb.predictedUs > 0 ? pa.predictedUs / pb.predictedUs : null,
            speedupBOverAPerWork: speedupPerWork(work, pa.predictedUs, pb.predictedUs),
          };
        });
      if (args.format === 'json') emit(JSON.stringify({ a, b, work, deltas }, null, 2));
      else {
        const md = args.format === 'markdown';
        const head = ['policy', ...DELTA_KEYS, 'B speedup over A', `per ${work.unit === null ? 'unit of work (unavailable)' : work.unit.replace(/s$/, '')}`];
        const rows = deltas.map((d) => [
          d.policy,
          ...DELTA_KEYS.map((k) => (d as unknown as Record<string, number>)[k]!.toFixed(3)),
          d.speedupBOverA === null ? '–' : formatSpeedup(d.speedupBOverA),
          work.unit === null || d.speedupBOverAPerWork === null ? '–' : formatSpeedup(d.speedupBOverAPerWork),
        ]);
        const deltaTable = md
          ? [`| ${head.join(' | ')} |`, `| ${head.map(() => '---').join(' | ')} |`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n')
          : [head.join('  '), ...rows.map((r) => r.join('  '))].join('\n');
        const workLine =
          work.unit === null
            ? 'work: no measure on both sides; the speedups are ratios of predicted times'
            : `work: A ${work.aWork!.toExponential(3)} ${work.unit}, B ${work.bWork!.toExponential(3)}; per-${work.unit.replace(/s$/, '')} speedup = (A's time / A's work) / (B's time / B's work)`;
        emit([report(a, md), '', report(b, md), '', md ? '## B − A' : 'B − A', `${md ? '- ' : ''}${workLine}`, ...work.warnings.map((w) => `${md ? '- ' : ''}WARNING: ${w}`), deltaTable].join('\n'));
      }
      return 0;
    }
    case 'plan': {
      if (args.files.length !== 1) throw new UsageError(`plan takes one TRACE, got ${args.files.length}`);
      if (args.fix !== undefined && args.policies.length > 0) throw new UsageError('plan takes either --policy NAME or --fix FIX_ID, not both');
      if (args.fix !== undefined) {
        if (!args.out) throw new UsageError('plan needs -o plan.json');
        if (args.machine) throw new UsageError('plan replays the trace on its own machine: drop --machine (a plan targets the recorded process)');
        const path = args.files[0]!;
        const plan = fixPlan(loadTrace(path), args.fix, args.thresholds, { createdAt: new Date().toISOString(), traceName: basename(path) });
        writeFileSync(args.out, JSON.stringify(plan, null, 2) + '\n');
        print(`wrote ${args.out}: ${plan.source.summary}`);
        return 0;
      }
      if (args.policies.length !== 1) throw new UsageError('plan needs exactly one --policy NAME (or --fix FIX_ID)');
      if (!args.out) throw new UsageError('plan needs -o plan.json');
      if (args.machine || args.targetMachine) throw new UsageError('plan replays the trace on its own machine: drop --machine / --target-machine (a plan targets the recorded process)');
      const path = args.files[0]!;
      const { plan, weights } = policyPlan(loadTrace(path), optionsOf(args), { createdAt: new Date().toISOString(), traceName: basename(path), systemWeights: args.systemWeights });
      writeFileSync(args.out, JSON.stringify(plan, null, 2) + '\n');
      print(`wrote ${args.out}${plan.objects ? ` (${plan.objects.length} allocation sites for numascope run --plan)` : ''}`);
      if (weights) {
        print(`equivalent for new allocations of the whole process: ${weights.numactl}`);
        print(`  with the system-wide weights ${Object.entries(weights.sysfs).map(([f, v]) => `${f} = ${v}`).join(', ')}`);
        print(`  ${weights.note}`);
      }
      return 0;
    }
    case 'code': {
      if (args.files.length !== 1) throw new UsageError(`code takes one TRACE, got ${args.files.length}`);
      const path = args.files[0]!;
      const trace = loadTrace(path);
      const table = functionTable(trace, codeOptionsOf(args, trace));
      if (args.format === 'json') {
        emit(
          JSON.stringify(
            table.available
              ? { trace: { file: basename(path) }, available: true, reason: table.reason, by: table.by, filters: table.filters, clock: table.clock, totals: table.totals, functionCount: table.functionCount, functions: table.rows }
              : { available: false, reason: table.reason },
            null,
            2,
          ),
        );
      } else emit(codeReport(table, basename(path)));
      return 0;
    }
    case 'c2c': {
      if (args.files.length !== 1) throw new UsageError(`c2c takes one TRACE, got ${args.files.length}`);
      const path = args.files[0]!;
      const table = c2cTable(loadTrace(path));
      const limit = args.limit ?? 20;
      if (args.format === 'json') emit(JSON.stringify({ trace: { file: basename(path) }, ...table, lines: table.lines.slice(0, limit), lineCount: table.lines.length }, null, 2));
      else emit(c2cReport(table, basename(path), limit));
      return 0;
    }
    case 'diagnose': {
      if (args.files.length !== 1) throw new UsageError(`diagnose takes one TRACE, got ${args.files.length}`);
      if (args.machine || args.targetMachine) throw new UsageError('diagnose reads the trace on its own machine: drop --machine / --target-machine (the fixes name the recorded nodes)');
      const path = args.files[0]!;
      const trace = loadTrace(path);
      const json = diagnoseReport(trace, optionsOf(args), args.thresholds, basename(path));
      emit(args.format === 'json' ? JSON.stringify(json, null, 2) : diagnosisReport(json, args.format === 'markdown'));
      return 0;
    }
    default:
      throw new UsageError(`unknown command "${args.command}"; commands: ${COMMANDS.join(', ')} (--help for usage)`);
  }
}

/** perf c2c's shared-line table as text: one row per line, then its offsets with their code. */
function c2cReport(t: C2cTable, file: string, limit: number): string {
  if (!t.available) return `cache-line contention of ${file}: not available: ${t.reason}`;
  const x = t.totals;
  const out = [
    `cache-line contention of ${file} (perf c2c's Shared Data Cache Line Table, counted in records as perf c2c counts them)`,
    `  ${x.records} load/store samples (${x.loads} loads, ${x.stores} stores), ${x.localHitm} local HITM, ${x.remoteHitm} remote HITM; ${x.sharedLines} shared cache lines (with a HITM)`,
  ];
  if (t.lines.length === 0) return out.join('\n');
  const head = ['#', 'address', 'node', 'Hitm', 'LclHitm', 'RmtHitm', 'records', 'loads', 'stores', 'St L1Hit', 'St L1Miss', 'St N/A', 'FB', 'L1', 'L2', 'LclHit', 'RmtHit', 'LclDram', 'RmtDram', 'threads'];
  const rows = t.lines.slice(0, limit).map((l, i) => [
    String(i), l.addressHex, String(l.node), String(l.totalHitm), String(l.localHitm), String(l.remoteHitm), String(l.records), String(l.loads), String(l.stores),
    String(l.storeL1Hit), String(l.storeL1Miss), String(l.storeNA), String(l.loadFB), String(l.loadL1), String(l.loadL2), String(l.llcHit), String(l.remoteHit),
    String(l.localDram), String(l.remoteDram), String(l.threads.length),
  ]);
  const width = head.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c]!.length)));
  const line = (r: string[]) => '  ' + r.map((v, c) => (c === 1 ? v.padEnd(width[c]!) : v.padStart(width[c]!))).join('  ');
  out.push('', line(head), ...rows.map(line));
  for (const [i, l] of t.lines.slice(0, limit).entries()) {
    out.push('', `  line ${i} ${l.addressHex}: offsets`);
    for (const o of l.offsets) {
      const code = o.code.length > 0 ? o.code.slice(0, 3).map((c) => `${c.code} (${c.records})`).join(', ') : t.code ? '–' : 'no code locations in this trace';
      out.push(`    +0x${o.offset.toString(16).padStart(2, '0')}  records ${o.records} (loads ${o.loads}, stores ${o.stores}), HITM local ${o.localHitm} remote ${o.remoteHitm}, threads ${o.threads.length}: ${code}`);
    }
  }
  if (t.lines.length > limit) out.push('', `… ${t.lines.length - limit} more lines (--limit N)`);
  return out.join('\n');
}

/** Runs the CLI; returns the exit status. Errors are printed as one line naming the problem. */
export async function main(argv: string[], out: (s: string) => void = (s) => process.stdout.write(s + '\n'), err: (s: string) => void = (s) => process.stderr.write(s + '\n')): Promise<number> {
  try {
    await zstdReady(); // the WebAssembly decoder of compressed traces (fzstd if it cannot start)
    return await run(argv, out);
  } catch (e) {
    if (e instanceof UsageError) err(`numascope-analyze: ${e.message}`);
    else if (isTraceError(e) || isEngineError(e) || e instanceof PlanBuildError) err(`numascope-analyze: ${e.message}`);
    else if (e instanceof Error && /Machine(Model|Load)Error/.test(e.name)) err(`numascope-analyze: ${e.message}`);
    else throw e;
    // A bad option or policy name is a usage error (2), like an unknown flag; a bad trace or a
    // refused analysis is a failure (1).
    const usage = e instanceof UsageError || (isEngineError(e) && (e.code === 'bad-option' || e.code === 'unknown-policy'));
    return usage ? 2 : 1;
  }
}
