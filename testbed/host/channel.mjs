#!/usr/bin/env node
// Host side of the testbed's host↔guest channel (testbed/README.md, "Channel"). QEMU connects the
// guest's second serial port (ttyS1) to the unix socket this script listens on. Line protocol, one
// request at a time, every reply ends with a line `END`:
//   PUT NAME            + base64 lines + END   store a file from the guest   → OK NAME BYTES
//   ANALYZE NAME                                numascope-analyze analyze --json (with the uniform
//                                               access estimate when the trace has no samples)
//                                               → ANALYSIS hot=N|none share=a,b,… estimate=… access=… policies=…
//   PLAN NAME POLICY ADDR LEN [WINDOW_MS]       numascope-analyze plan (--window-ms WINDOW_MS when given)
//                                               → PLAN POLICY BYTES, SUMMARY, SOURCE (access samples: the engine's
//                                               accessSource, hinting-fault rows, their threads and loads/stores),
//                                               EXPECT (numa_maps N<node>=<pages> the plan implies for the mapping
//                                               ADDR..+LEN), RANGEAFTER <json per-node pages of the plan's ranges>,
//                                               DECISION lines (the policy's decisions), PIN TID NODE lines, OBJECT
//                                               lines (the plan's object entries: size, policy, nodes, frames, site),
//                                               then the plan as base64 lines; or NOPLAN POLICY <why>
//   AUDIT NAME                                  the trace's manifest.appliedPlans and plan-applied events
//                                               → AUDIT plans=N events=N statuses=… summary=…
//   DAMON NAME ADDR LEN                         the trace's DAMON regions (counters scope damon-region)
//                                               → DAMON snapshots=N rows=N source=STATUS overlap=N hot=N maxacc=N max=N
//                                               (overlap: region rows overlapping ADDR..+LEN; hot: those with
//                                               damon_nr_accesses > 0; max: damon_max_nr_accesses)
//   PLACED NAME PLAN ADDR LEN                   the page placement of trace NAME (pages.node: the last complete
//                                               placement scan) in ADDR..+LEN against what plan file PLAN (a name
//                                               the channel stored: NAME.POLICY.plan.json from PLAN) places there
//                                               → PLACED pages=N onPlan=N got=N<node>=<pages>… planned=… scans=N
//                                               process=N<node>=<pages>… processPlanned=… (the whole trace vs the
//                                               plan's expected.pagesPerNodeAfter)
//   MACHINE NAME                                load file NAME with the engine's machine loader (machineFromText,
//                                               machineModel, as --machine FILE does)
//                                               → MACHINE nodes=N cpus=N bandwidth=… provenance=… tool=… partial=…
//                                               vm=yes|no pairs=N boundMin=X notes=N   or MACHINE error <why>
//   WEIGHTS NAME SYSDUMP [POLICY [RATES]]       scenario t-engine-weights: numascope-analyze plan --policy POLICY
//                                               (default weighted-interleave; e.g. weighted-interleave:0,2) with
//                                               --access-rates RATES (default typical) --system-weights on trace
//                                               NAME (the recorded model), analyze --policy POLICY --json on the same
//                                               trace as recorded and with --machine from SYSDUMP (a stored dump of
//                                               the guest's /sys: lines `F PATH` then the file's text), loaded by
//                                               machineFromSysfs
//                                               → WEIGHTS system=N<id>=<w>,… ranges=<each range's N<id>:<w>/…> recorded=… sysfs=…
//                                               RECORDED cpuless=… tiers=… bw=… hmat=<provenance kind> (the trace's machine)
//                                               SYSFS bw=… tiers=…, SUMMARY <the plan's>, SOURCE <hinting-faults|samples|
//                                               estimate-uniform>, then the plan as base64 lines; or NOPLAN <why>
//   DIAGNOSE NAME                               numascope-analyze diagnose --json (scenario j)
//                                               → ISSUE kind=K id=ID site=<function_file:line>|- score=S threshold=T
//                                               fix=FIX_ID fixkind=K planable=yes|no tids=TID,… size=BYTES
//                                               per issue (ranked; tids: the issue's threads as kernel tids), NOPLAN
//                                               FIX_ID <why> for fixes no plan carries, NOTE lines
//   CODE NAME                                   numascope-analyze code --json (scenario j: the code of the accesses)
//                                               → CODE available=yes|no accesses=N remote=N, then per function with
//                                               accesses (most remote first) FUNCTION name=F location=<file:line>
//                                               accesses=N remote=N lines=<file:line:accesses>,… (base names)
//   PLANFIX NAME FIX_ID                         numascope-analyze plan --fix FIX_ID (scenario j)
//                                               → PLANFIX FIX_ID BYTES ranges=N threads=N, SUMMARY, RANGE START END
//                                               ACTION NODES per page range, PIN TID NODE per thread, the plan as
//                                               base64 lines; or NOPLAN FIX_ID <why>
//   BYE                                         close
// Usage: channel.mjs SOCKET DIR   (files go to DIR; a log to DIR/channel.log)
import { createServer } from 'node:net';
import { appendFileSync, mkdirSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';

register();
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const { main } = await import(join(ROOT, 'packages/policy-engine/cli/main.ts'));
const { readTrace } = await import(join(ROOT, 'packages/policy-engine/src/trace/reader.ts'));
const { numericColumn, dictionaryColumn } = await import(join(ROOT, 'packages/policy-engine/src/trace/columns.ts'));
const { machineFromText, machineFromSysfs } = await import(join(ROOT, 'packages/policy-engine/src/machine/loaders.ts'));
const { machineModel } = await import(join(ROOT, 'packages/policy-engine/src/machine/model.ts'));

const [sock, dir] = process.argv.slice(2);
mkdirSync(dir, { recursive: true });
const LOG = join(dir, 'channel.log');
const log = (s) => appendFileSync(LOG, `${new Date().toISOString()} ${s}\n`);
const safe = (name) => name.replace(/[^A-Za-z0-9._-]/g, '_');

async function cli(argv) {
  const out = [];
  const err = [];
  const rc = await main(argv, (s) => out.push(s), (s) => err.push(s));
  return { rc, out: out.join('\n'), err: err.join('\n') };
}

function b64lines(buf) {
  const s = buf.toString('base64');
  const lines = [];
  for (let i = 0; i < s.length; i += 76) lines.push(s.slice(i, i + 76));
  return lines;
}

async function analyzeReply(name) {
  const path = join(dir, safe(name));
  let r = await cli(['analyze', path, '--json']);
  if (r.rc !== 0 && /no memory-access samples/.test(r.err)) r = await cli(['analyze', path, '--json', '--access-estimate', 'uniform']);
  if (r.rc !== 0) return [`ANALYSIS error ${r.err.replace(/\s+/g, ' ')}`];
  writeFileSync(path + '.analysis.json', r.out + '\n');
  const j = JSON.parse(r.out);
  const n = j.nodes;
  return [
    `ANALYSIS hot=${n?.hotSpot ?? 'none'} share=${n ? n.share.map((x) => x.toFixed(3)).join(',') : '-'} estimate=${j.estimate ?? 'none'} access=${j.accessSource ?? 'samples'} ` +
      `policies=${j.policies.map((p) => `${p.policy}:${(p.localAccessRatio * 100).toFixed(0)}%local:mcimb${p.mcImbalancePct.toFixed(0)}`).join(',')}`,
    ...j.notes.map((x) => `NOTE ${x}`),
  ];
}

async function planReply(name, policy, addr, len, windowMs) {
  const path = join(dir, safe(name));
  const out = join(dir, `${safe(name)}.${safe(policy)}.plan.json`);
  rmSync(out, { force: true });
  const win = windowMs ? ['--window-ms', windowMs] : [];
  let r = await cli(['plan', path, '--policy', policy, ...win, '-o', out]);
  if (r.rc !== 0 && /no memory-access samples/.test(r.err)) r = await cli(['plan', path, '--policy', policy, ...win, '--access-estimate', 'uniform', '-o', out]);
  if (r.rc !== 0) return [`NOPLAN ${policy} ${r.err.replace(/\s+/g, ' ')}`];
  const text = readFileSync(out);
  const plan = JSON.parse(text.toString());
  // What apply must give: every trace page inside a range goes to its target (move: toNodes[0],
  // interleave: toNodes[i % n], i = page index from the range start); other pages stay.
  const trace = readTrace(new Uint8Array(readFileSync(path)));
  const address = numericColumn(trace.tables.pages, 'address');
  const node = numericColumn(trace.tables.pages, 'node');
  const ranges = plan.pageRanges.map((g) => ({ ...g, s: BigInt(g.start), e: BigInt(g.end) }));
  const lo = BigInt(addr);
  const hi = lo + BigInt(len);
  const shared = new Map();
  const inRanges = new Map();
  for (let p = 0; p < address.length; p++) {
    const a = address[p];
    let to = node[p];
    const g = ranges.find((x) => a >= x.s && a < x.e);
    if (g) {
      to = g.action === 'move' ? g.toNodes[0] : g.toNodes[Number((a - g.s) / 4096n) % g.toNodes.length];
      inRanges.set(to, (inRanges.get(to) ?? 0) + 1);
    }
    if (a >= lo && a < hi) shared.set(to, (shared.get(to) ?? 0) + 1);
  }
  const fmt = (m) => [...m.entries()].sort((x, y) => x[0] - y[0]).filter(([, c]) => c > 0).map(([k, c]) => `N${k}=${c}`).join(' ');
  // The access samples the plan came from: hinting-fault rows (event access-fault), by thread and op.
  const ev = dictionaryColumn(trace.tables.samples, 'event');
  const op = dictionaryColumn(trace.tables.samples, 'op');
  const sThread = numericColumn(trace.tables.samples, 'thread');
  const HINT = ev.values.indexOf('access-fault');
  const STORE = op.values.indexOf('store');
  let hint = 0;
  let hintStores = 0;
  const hintThreads = new Set();
  for (let i = 0; i < ev.codes.length; i++) {
    if (ev.codes[i] !== HINT) continue;
    hint++;
    if (op.codes[i] === STORE) hintStores++;
    hintThreads.add(sThread[i]);
  }
  const analysis = await cli(['analyze', path, '--policy', policy, ...win, '--json']);
  const aj = analysis.rc === 0 ? JSON.parse(analysis.out) : null;
  const decisions = aj ? aj.policies[0].decisions.slice(0, 12).map((d) => `DECISION w${d.window} ${d.kind} ${d.explanation}`) : [];
  return [
    `PLAN ${policy} ${text.length} ranges=${plan.pageRanges.length} toMove=${plan.expected?.pagesToMove} threads=${plan.threads.length} after=${JSON.stringify(plan.expected?.pagesPerNodeAfter)}`,
    `SUMMARY ${plan.source.summary}`,
    `SOURCE access=${aj?.accessSource ?? 'unknown'} hintRows=${hint} hintStores=${hintStores} hintThreads=${hintThreads.size}`,
    ...decisions,
    `EXPECT ${fmt(shared)}`,
    `RANGEAFTER ${JSON.stringify(Object.fromEntries([...inRanges.entries()].sort((x, y) => x[0] - y[0]).map(([k, c]) => [String(k), c])))}`,
    ...plan.threads.map((t) => `PIN ${t.tid} ${t.toNodes.join(',')}`),
    ...(plan.objects ?? []).map((o) => `OBJECT size=${o.size.min}-${o.size.max} policy=${o.policy} nodes=${o.nodes.join(',')} frames=${o.frames.length} site=${String(o.site ?? '-').replace(/\s+/g, '_')}`),
    ...b64lines(text).map((l) => `B ${l}`),
  ];
}

function auditReply(name) {
  const trace = readTrace(new Uint8Array(readFileSync(join(dir, safe(name)))));
  const plans = trace.manifest.appliedPlans ?? [];
  const kind = dictionaryColumn(trace.tables.events, 'kind');
  let events = 0;
  for (let i = 0; i < trace.tables.events.numRows; i++) if (kind.values[kind.codes[i]] === 'plan-applied') events++;
  const statuses = plans.map((p) => p?.report?.status ?? '?').join(',');
  const moved = plans.map((p) => p?.report?.pages?.moved ?? '?').join(',');
  return [`AUDIT plans=${plans.length} events=${events} statuses=${statuses || '-'} moved=${moved || '-'} policy=${plans.map((p) => p?.plan?.source?.policy ?? '?').join(',') || '-'}`];
}

function damonReply(name, addr, len) {
  const trace = readTrace(new Uint8Array(readFileSync(join(dir, safe(name)))));
  const t = trace.tables.counters;
  const counter = dictionaryColumn(t, 'counter');
  const scope = dictionaryColumn(t, 'scope');
  const id = numericColumn(t, 'scope_id');
  const time = numericColumn(t, 'time_us');
  const value = numericColumn(t, 'value');
  const regions = new Map(); // "time/index" → { start, end, acc }
  let max = -1;
  for (let i = 0; i < t.numRows; i++) {
    const c = counter.values[counter.codes[i]];
    if (c === 'damon_max_nr_accesses') max = value[i];
    if (scope.values[scope.codes[i]] !== 'damon-region') continue;
    const key = `${time[i]}/${id[i]}`;
    const r = regions.get(key) ?? {};
    if (c === 'damon_region_start') r.start = value[i];
    else if (c === 'damon_region_end') r.end = value[i];
    else if (c === 'damon_nr_accesses') r.acc = value[i];
    regions.set(key, r);
  }
  const lo = Number(BigInt(addr));
  const hi = lo + Number(len);
  const snapshots = new Set([...regions.keys()].map((k) => k.split('/')[0])).size;
  let overlap = 0;
  let hot = 0;
  let maxacc = 0;
  for (const r of regions.values()) {
    if (!(r.start < hi && r.end > lo)) continue;
    overlap++;
    if (r.acc > 0) hot++;
    maxacc = Math.max(maxacc, r.acc ?? 0);
  }
  const src = trace.manifest.capture.sources.find((s) => s.id === 'damon');
  return [`DAMON snapshots=${snapshots} rows=${regions.size} source=${src?.status ?? 'missing'} overlap=${overlap} hot=${hot} maxacc=${maxacc} max=${max}`];
}

// Scenario k-loop: does the second recording show the plan's placement? For every page of trace
// NAME in ADDR..+LEN the plan's target (move: toNodes[0]; interleave: toNodes[i % n], i = page
// index from the range start; a page in no range keeps its node) against the node it was on.
function placedReply(name, planName, addr, len) {
  const trace = readTrace(new Uint8Array(readFileSync(join(dir, safe(name)))));
  const plan = JSON.parse(readFileSync(join(dir, safe(planName))).toString());
  const address = numericColumn(trace.tables.pages, 'address');
  const node = numericColumn(trace.tables.pages, 'node');
  const ranges = plan.pageRanges.map((g) => ({ ...g, s: BigInt(g.start), e: BigInt(g.end) })).sort((x, y) => (x.s < y.s ? -1 : 1));
  const lo = BigInt(addr);
  const hi = lo + BigInt(len);
  const got = new Map();
  const planned = new Map();
  const all = new Map();
  const inc = (m, k) => m.set(k, (m.get(k) ?? 0) + 1);
  let pages = 0;
  let onPlan = 0;
  for (let p = 0; p < address.length; p++) {
    const a = address[p];
    if (node[p] < 0) continue;
    inc(all, node[p]);
    if (a < lo || a >= hi) continue;
    const g = ranges.find((x) => a >= x.s && a < x.e);
    const to = g ? (g.action === 'move' ? g.toNodes[0] : g.toNodes[Number((a - g.s) / 4096n) % g.toNodes.length]) : node[p];
    pages++;
    inc(got, node[p]);
    inc(planned, to);
    if (to === node[p]) onPlan++;
  }
  const fmt = (m) => [...m.entries()].sort((x, y) => x[0] - y[0]).filter(([, c]) => c > 0).map(([k, c]) => `N${k}=${c}`).join(',') || '-';
  const after = plan.expected?.pagesPerNodeAfter ?? {};
  const processPlanned = Object.entries(after).map(([k, c]) => `N${k}=${c}`).join(',') || '-';
  return [
    `PLACED pages=${pages} onPlan=${onPlan} got=${fmt(got)} planned=${fmt(planned)} scans=${trace.manifest.capture.pageScan?.scans ?? 0} process=${fmt(all)} processPlanned=${processPlanned}`,
  ];
}

// Scenario l-bench: the guest's `numascope bench --quick` model, loaded as `--machine FILE` loads it.
function machineReply(name) {
  let m;
  try {
    m = machineFromText(readFileSync(join(dir, safe(name))).toString(), safe(name));
    machineModel(m);
  } catch (e) {
    return [`MACHINE error ${String(e.message ?? e).replace(/\s+/g, ' ')}`];
  }
  const cal = m.calibration ?? {};
  const bound = (cal.boundShare ?? []).flat();
  const pairs = bound.filter((x) => typeof x === 'number').length;
  const boundMin = pairs > 0 ? Math.min(...bound.filter((x) => typeof x === 'number')) : -1;
  const bw = m.nodes.map((n) => (n.memoryBandwidthGBps === null ? 'null' : n.memoryBandwidthGBps.toFixed(2))).join(',');
  const prov = String(m.provenance?.memoryBandwidthGBps ?? 'none');
  return [
    `MACHINE nodes=${m.nodes.length} cpus=${m.nodes.reduce((s, n) => s + n.cpus.length, 0)} bandwidth=${bw} tool=${cal.tool ?? 'none'} partial=${cal.partial ?? 'none'} ` +
      `vm=${cal.virtualMachine ? 'yes' : 'no'} pairs=${pairs} boundMin=${boundMin} latencies=${(m.latenciesNs ?? []).flat().filter((x) => x > 0).length} notes=${(cal.notes ?? []).length}`,
    `PROVENANCE ${prov.replace(/\s+/g, ' ')}`,
    ...(cal.notes ?? []).map((x) => `NOTE ${String(x).replace(/\s+/g, ' ')}`),
  ];
}

// Scenario t-engine-weights: the engine's weights for a recording on the tiers guest, from the
// recorded machine and from the guest's /sys loaded by machineFromSysfs (they must agree).
async function weightsReply(name, sysName, policy = 'weighted-interleave', rates = 'typical') {
  if (!/^weighted-interleave(:\d+(,\d+)*)?$/.test(policy)) return [`NOPLAN policy ${policy}: expected weighted-interleave or weighted-interleave:N,M`];
  if (rates !== 'typical' && rates !== 'bandwidth-bound') return [`NOPLAN access rates ${rates}: expected typical or bandwidth-bound`];
  const path = join(dir, safe(name));
  const out = join(dir, `${safe(name)}.weighted.plan.json`);
  rmSync(out, { force: true });
  const withEstimate = async (argv) => {
    const r = await cli(argv);
    return r.rc !== 0 && /no memory-access samples/.test(r.err) ? cli([...argv, '--access-estimate', 'uniform']) : r;
  };
  const p = await withEstimate(['plan', path, '--policy', policy, '--access-rates', rates, '--system-weights', '-o', out]);
  if (p.rc !== 0) return [`NOPLAN ${p.err.replace(/\s+/g, ' ')}`];
  const files = {};
  let cur = null;
  for (const line of readFileSync(join(dir, safe(sysName))).toString().split('\n')) {
    if (line.startsWith('F ')) files[(cur = line.slice(2).trim())] = '';
    else if (cur) files[cur] += line + '\n';
  }
  const sysMachine = machineFromSysfs(files, 'guest-sysfs');
  const sysJson = join(dir, `${safe(sysName)}.machine.json`);
  writeFileSync(sysJson, JSON.stringify(sysMachine));
  let source = 'unknown';
  const weightsOf = async (extra) => {
    const r = await withEstimate(['analyze', path, '--policy', policy, '--access-rates', rates, ...extra, '--json']);
    if (r.rc !== 0) return `error:${r.err.replace(/\s+/g, '_').slice(0, 200)}`;
    const j = JSON.parse(r.out);
    source = j.estimate ? `estimate-${j.estimate}` : (j.accessSource ?? 'samples');
    const w = j.policies[0].weights;
    return w ? w.nodes.map((id, k) => `N${id}=${w.weights[k]}`).join(',') : 'none';
  };
  const recorded = await weightsOf([]);
  const sysfs = await weightsOf(['--machine', sysJson]);
  const text = readFileSync(out);
  const plan = JSON.parse(text.toString());
  const system = Object.entries(plan.systemWeights?.weights ?? {}).map(([k, v]) => `N${k}=${v}`).join(',') || 'none';
  const ranges = [...new Set(plan.pageRanges.map((g) => (g.weights ? g.toNodes.map((id, k) => `N${id}:${g.weights[k]}`).join('/') : g.action)))].join(';');
  const m = readTrace(new Uint8Array(readFileSync(path))).manifest.machine;
  const list = (xs) => xs.map((x) => (x === undefined || x === null ? 'null' : x)).join(',');
  return [
    `WEIGHTS system=${system} ranges=${ranges} recorded=${recorded} sysfs=${sysfs} count=${plan.pageRanges.length}`,
    `RECORDED cpuless=${m.nodes.filter((x) => x.cpus.length === 0).map((x) => x.id).join(',') || '-'} tiers=${list(m.nodes.map((x) => x.memoryTier))} ` +
      `bw=${list(m.nodes.map((x) => x.memoryBandwidthGBps))} hmat=${String(m.provenance?.hmat ?? 'none').split(':')[0]} bwprov=${String(m.provenance?.memoryBandwidthGBps ?? 'none').split(':')[0]}`,
    `SYSFS bw=${list(sysMachine.nodes.map((x) => x.memoryBandwidthGBps))} tiers=${list(sysMachine.nodes.map((x) => x.memoryTier))}`,
    `SUMMARY ${plan.source.summary}`,
    `SOURCE ${source}`,
    ...b64lines(text).map((l) => `B ${l}`),
  ];
}

// Scenario j-diagnose: the engine's issues for a trace, one line each.
async function diagnoseReply(name) {
  const path = join(dir, safe(name));
  const r = await cli(['diagnose', path, '--json']);
  if (r.rc !== 0) return [`DIAGNOSIS error ${r.err.replace(/\s+/g, ' ')}`];
  writeFileSync(path + '.diagnosis.json', r.out + '\n');
  const j = JSON.parse(r.out);
  const trace = readTrace(new Uint8Array(readFileSync(path)));
  const tid = numericColumn(trace.tables.threads, 'tid');
  return [
    `DIAGNOSIS issues=${j.issues.length} durationMs=${Math.round(j.durationMs)} cacheLine=${j.cacheLine.available ? 'available' : 'unavailable'}`,
    ...j.issues.map(
      (i) =>
        `ISSUE kind=${i.kind} id=${i.id} site=${String(i.site ?? '-').replace(/\s+/g, '_')} score=${i.score} threshold=${i.threshold} fix=${i.fix.id} ` +
        `fixkind=${i.fix.kind} planable=${i.fix.planable ? 'yes' : 'no'} tids=${i.threads.map((t) => tid[t] ?? -1).join(',') || '-'} size=${i.object?.size ?? 0}`,
    ),
    ...j.issues.filter((i) => i.fix.noPlan).map((i) => `NOPLAN ${i.fix.id} ${i.fix.noPlan.replace(/\s+/g, ' ')}`),
    ...j.notes.map((x) => `NOTE ${x.replace(/\s+/g, ' ')}`),
  ];
}

async function codeReply(name) {
  const path = join(dir, safe(name));
  const r = await cli(['code', path, '--json', '--limit', '1000000']);
  if (r.rc !== 0) return [`CODE error ${r.err.replace(/\s+/g, ' ')}`];
  writeFileSync(path + '.code.json', r.out + '\n');
  const j = JSON.parse(r.out);
  const base = (f) => String(f ?? '-').split('/').pop();
  const fns = (j.functions ?? []).filter((f) => f.accesses > 0).sort((a, b) => b.remote - a.remote);
  const remote = fns.reduce((s, f) => s + f.remote, 0);
  return [
    `CODE available=${j.available ? 'yes' : 'no'} accesses=${j.totals?.accesses ?? 0} remote=${remote}`,
    ...fns.slice(0, 20).map(
      (f) =>
        `FUNCTION name=${String(f.function).replace(/\s+/g, '_')} location=${String(f.location ?? '-').replace(/\s+/g, '_')} accesses=${f.accesses} remote=${f.remote} ` +
        `lines=${f.lines.filter((l) => l.accesses > 0).map((l) => `${base(l.file)}:${l.line}:${l.accesses}`).join(',') || '-'}`,
    ),
    ...(j.available ? [] : [`NOTE ${String(j.reason).replace(/\s+/g, ' ')}`]),
  ];
}

async function planFixReply(name, fixId) {
  const path = join(dir, safe(name));
  const out = join(dir, `${safe(name)}.fix.plan.json`);
  rmSync(out, { force: true });
  const r = await cli(['plan', path, '--fix', fixId, '-o', out]);
  if (r.rc !== 0) return [`NOPLAN ${fixId} ${r.err.replace(/\s+/g, ' ')}`];
  const text = readFileSync(out);
  const plan = JSON.parse(text.toString());
  return [
    `PLANFIX ${fixId} ${text.length} ranges=${plan.pageRanges.length} threads=${plan.threads.length}`,
    `SUMMARY ${plan.source.summary}`,
    ...plan.pageRanges.map((g) => `RANGE ${g.start} ${g.end} ${g.action} ${g.toNodes.join(',')}`),
    ...plan.threads.map((t) => `PIN ${t.tid} ${t.toNodes.join(',')}`),
    ...b64lines(text).map((l) => `B ${l}`),
  ];
}

const server = createServer((conn) => {
  log('guest connected');
  let buf = '';
  let put = null;
  let chain = Promise.resolve();
  const send = (lines) => conn.write([...lines, 'END'].join('\n') + '\n');
  const handle = async (line) => {
    if (put) {
      if (line === 'END') {
        const data = Buffer.from(put.b64.join(''), 'base64');
        writeFileSync(join(dir, safe(put.name)), data);
        log(`PUT ${put.name} ${data.length} bytes`);
        send([`OK ${put.name} ${data.length}`]);
        put = null;
      } else put.b64.push(line.trim());
      return;
    }
    const [cmd, ...a] = line.trim().split(/\s+/);
    if (!cmd) return;
    log(`request: ${line.trim()}`);
    try {
      if (cmd === 'PUT') put = { name: a[0], b64: [] };
      else if (cmd === 'ANALYZE') send(await analyzeReply(a[0]));
      else if (cmd === 'PLAN') send(await planReply(a[0], a[1], a[2], a[3], a[4]));
      else if (cmd === 'AUDIT') send(auditReply(a[0]));
      else if (cmd === 'DAMON') send(damonReply(a[0], a[1], a[2]));
      else if (cmd === 'PLACED') send(placedReply(a[0], a[1], a[2], a[3]));
      else if (cmd === 'MACHINE') send(machineReply(a[0]));
      else if (cmd === 'WEIGHTS') send(await weightsReply(a[0], a[1], a[2], a[3]));
      else if (cmd === 'DIAGNOSE') send(await diagnoseReply(a[0]));
      else if (cmd === 'PLANFIX') send(await planFixReply(a[0], a[1]));
      else if (cmd === 'CODE') send(await codeReply(a[0]));
      else if (cmd === 'BYE') {
        send(['BYE']);
        conn.end();
        server.close();
      } else send([`ERROR unknown request ${cmd}`]);
    } catch (e) {
      log(`error: ${e.stack ?? e}`);
      send([`ERROR ${String(e.message ?? e).replace(/\s+/g, ' ')}`]);
    }
  };
  conn.on('data', (d) => {
    buf += d.toString('latin1');
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i).replace(/\r$/, '');
      buf = buf.slice(i + 1);
      chain = chain.then(() => handle(line));
    }
  });
  conn.on('close', () => {
    log('guest disconnected');
    server.close();
  });
  conn.on('error', (e) => log(`socket error: ${e.message}`));
});
rmSync(sock, { force: true });
server.listen(sock, () => log(`listening on ${sock}`));
