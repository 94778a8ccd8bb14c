/**
 * A Markdown summary of a trace for a pull request or an issue: where it came from (synthetic
 * traces say so), the machine, the per-node table, the top regions and the capability badges.
 * Pure: everything it prints is passed in.
 */
import { formatBytes, formatCount, formatCpuList, formatDurationUs, formatPercent, formatUtc } from '@numascope/viz';
import { formatLatencyNs, formatPct, formatShare, formatSpeedup, formatTimeUs, policyLabel } from '@numascope/policy-engine';
import type { TraceSummary } from '@numascope/policy-engine';
import type { AnalysisView } from '../worker/analysis';
import type { TimeRange } from '@numascope/policy-engine';
import { nodeRows, pagesColumnLabel, recordedCommand } from './selectors/summary';
import type { RegionRow } from './selectors/summary';
import { weightGains, weightsSentence } from './selectors/weights';
import { accessRateSource } from './selectors/policy';

export interface MarkdownInput {
  source: string;
  /** Whole-trace summary. */
  summary: TraceSummary;
  /** The summary restricted to `range` (same as `summary` when range is null). */
  inRange: TraceSummary;
  range: TimeRange | null;
  /** Busiest regions in the range, first `topRegions` are printed. */
  regions: readonly RegionRow[];
  topRegions?: number;
  /** The link that opens this screen, when the trace came from a URL. */
  link?: string | null;
  /** The view the summary is exported from (its numbers come first). */
  view?: string;
  /** The engine's analysis behind the view (Traffic, Compare, Decisions, Recommendations). */
  analysis?: AnalysisView | { error: string } | null;
  /** The view's tables as exported in its PNG/SVG (Compare's aligned table): printed first, cell for cell. */
  tables?: ReadonlyArray<{ title: string | null; rows: readonly string[][] }>;
}

/** A table of cell texts (first row the header) as Markdown; the first column left, the others right-aligned. */
function markdownTable(rows: readonly string[][]): string[] {
  const width = Math.max(...rows.map((r) => r.length));
  const line = (r: readonly string[]) => `| ${Array.from({ length: width }, (_, i) => esc(r[i] ?? '')).join(' | ')} |`;
  return [line(rows[0]!), `| --- |${' ---: |'.repeat(width - 1)}`, ...rows.slice(1).map(line)];
}

const VIEW_TITLES: Record<string, string> = {
  overview: 'Overview',
  memory: 'Memory',
  threads: 'Threads',
  traffic: 'Traffic',
  compare: 'Compare policies',
  decisions: 'Decisions',
  recommend: 'Recommendations',
};

/** The engine's numbers as shown in the views: one row per policy, then the recommendations. */
function predictions(a: AnalysisView, view: string): string[] {
  const out: string[] = [];
  const basis = a.headline === 'steady-state' ? 'steady state (each policy’s converged placement held over the recording)' : 'window-by-window replay';
  out.push(`### Predicted by the policy engine (${basis})`, '');
  if (a.estimate) out.push('> **ESTIMATED** from page placement only: this recording has no memory-access samples (accesses assumed uniform).', '');
  if (a.synthetic) out.push('> Predictions on a **synthetic** trace: a demonstration, not a measurement.', '');
  if (a.accessRates === 'bandwidth-bound') out.push('> Access rates **assumed bandwidth-bound**: your statement, not a measurement (NUMA hinting faults give no rate).', '');
  out.push(`Speedup = ${policyLabel(a.baseline)}’s predicted time / the policy’s; recorded duration ${formatTimeUs(a.recordedUs)}.`, '');
  out.push('| policy | predicted time | speedup | local accesses | memory latency | MC imbalance | link usage | pages to move |');
  out.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  const rows = [...a.policies].sort((x, y) => y.predictedSpeedup - x.predictedSpeedup);
  for (const p of rows) {
    out.push(
      `| ${esc(policyLabel(p.policy))}${p.policy === a.baseline ? ' (baseline)' : ''} | ${formatTimeUs(p.predictedUs)} | ${formatSpeedup(p.predictedSpeedup)} | ${formatShare(p.localAccessRatio)} | ` +
        `${formatLatencyNs(p.memoryLatencyNs)} | ${formatPct(p.mcImbalancePct)} | ${formatPct(p.interconnectUsagePct)} | ${formatCount(p.pagesToMove)} |`,
    );
  }
  for (const u of a.unavailable) out.push('', `- ${esc(policyLabel(u.policy))} not predicted: ${esc(u.reason)}`);
  out.push('');
  if (view === 'recommend' || view === 'traffic' || view === 'compare') {
    out.push('### Recommendations', '');
    if (a.recommendations.length === 0) out.push(`No action is predicted to be at least 2 % faster than ${policyLabel(a.baseline)}.`);
    for (const r of a.recommendations) {
      out.push(`- **${formatSpeedup(r.gain.speedup)}** ${esc(r.title)} — cost ${r.cost.pages > 0 ? `${formatCount(r.cost.pages, 'page')} (${formatBytes(r.cost.bytes)})` : 'no pages'}${r.cost.threads > 0 ? `, ${formatCount(r.cost.threads, 'thread')} pinned` : ''}; confidence ${r.confidence.level} (${r.confidence.reasons.join('; ') || 'measured inputs'})${r.command ? `; \`${esc(r.command)}\`` : ''}`);
    }
    out.push('');
  }
  const weighted = a.policies.filter((p) => p.weights !== null);
  if (weighted.length > 0 && view !== 'diagnose') {
    out.push('### Weighted interleave', '');
    for (const p of weighted) {
      const w = p.weights!;
      const r = w.recommendation;
      const g = weightGains(w);
      out.push(`- **${esc(policyLabel(p.policy))}** on ${esc(a.machine.name)}: ${esc(weightsSentence(w))}.`);
      if (r) {
        out.push(
          `  Predicted ${g.vsDramOnly !== null ? formatSpeedup(g.vsDramOnly) : '–'} vs DRAM only, ${g.vsEqual !== null ? formatSpeedup(g.vsEqual) : '–'} vs equal weights (1:1); ` +
            `optimum at ${formatPercent(r.optimum.dramShare)} on DRAM, within ${formatPercent(r.flat.band, 0)} of it from ${formatPercent(r.flat.fromShare)} to ${formatPercent(r.flat.toShare)}.`,
        );
      }
      for (const o of w.objects) out.push(`  - ${esc(o.site)}: ${o.nodes.map((n, k) => `node ${n} ×${o.weights[k]}`).join(', ')} (${formatPercent(o.dramShare)} on DRAM)`);
      out.push(`  \`${esc(w.numactl)}\` (the weights are the system-wide sysfs ones: ${Object.entries(w.sysfs).map(([f, v]) => `${f} = ${v}`).join(', ')}).`);
      out.push(`  Access rates: ${esc(accessRateSource(a))}.`);
    }
    out.push('');
  }
  if (view === 'diagnose') {
    out.push('### Diagnostics', '');
    if (!a.diagnosis) out.push(a.diagnosisNote ?? 'No diagnosis.');
    else if (a.diagnosis.issues.length === 0) out.push('No issue above its threshold.');
    for (const i of a.diagnosis?.issues ?? []) {
      out.push(`${i.rank}. **${i.kind}** score ${i.score} ${esc(i.scoreUnit)} (threshold ${i.threshold}): ${esc(i.text)}; fix: ${esc(i.fix.text)}${i.fix.predictedSpeedup !== null ? ` (predicted ${formatSpeedup(i.fix.predictedSpeedup)})` : ''}`);
    }
    out.push('');
  }
  return out;
}

const esc = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function markdownSummary(input: MarkdownInput): string {
  const { summary, inRange, range, source } = input;
  const m = summary.manifest;
  const noAccess = summary.totals.accessSamples === 0;
  const out: string[] = [];
  out.push(`## numascope trace: \`${esc(source)}\``, '');
  const o = m.origin;
  if (o.kind === 'synthetic') {
    out.push(`> **Synthetic trace — not a measurement.** Generated by \`${o.generator}\`, seed ${o.seed ?? 'none'}, model ${o.model ?? 'none'}.`);
  } else if (o.kind === 'recorded') {
    out.push(`> **Recorded** \`${esc(recordedCommand(summary))}\` on ${m.machine.name}${m.machine.kernel ? ` (Linux ${m.machine.kernel})` : ''}, started ${formatUtc(m.capture.startUnixMs)}.`);
  } else {
    out.push(`> **${o.kind[0]!.toUpperCase()}${o.kind.slice(1)}** by \`${o.generator}\`${o.from ? ` from ${[o.from].flat().join(', ')}` : ''}.`);
  }
  if (o.description) out.push(`> ${esc(o.description)}`);
  out.push('');
  const cpus = m.machine.nodes.reduce((n, x) => n + x.cpus.length, 0);
  out.push(
    `- **Machine:** ${m.machine.name} (${m.machine.source}), ${formatCount(m.machine.nodes.length, 'NUMA node')}, ${formatCount(cpus, 'cpu')}${m.machine.cpuModel ? `, ${m.machine.cpuModel}` : ''}`,
  );
  out.push(
    `- **Capture:** ${formatDurationUs(summary.totals.durationUs)}, ${formatCount(summary.totals.samples, 'sample')}, ` +
      `${formatCount(summary.totals.faults, 'first touch', 'first touches')} (page faults${summary.labels.faultsSampled ? `, sampled: about ${formatCount(summary.totals.faultWeight)} by their weights` : ''}), ` +
      `${formatCount(summary.totals.pages, 'page')} (${summary.labels.pages}), ` +
      `accesses ${noAccess ? '**not sampled** (no IBS/PEBS access sampling in this trace)' : formatCount(summary.totals.accesses)}, ` +
      `${formatCount(summary.totals.lostSamples, 'lost sample')}`,
  );
  out.push(`- **Time range:** ${range ? `${formatDurationUs(range.fromUs)} – ${formatDurationUs(range.toUs)}` : 'whole trace'}`);
  if (input.view) out.push(`- **View:** ${VIEW_TITLES[input.view] ?? input.view}`);
  if (input.link) out.push(`- **Open this view:** ${input.link}`);
  out.push('');
  for (const t of input.tables ?? []) {
    if (t.rows.length < 2) continue;
    out.push(`### ${esc(t.title ?? 'Table')}`, '', ...markdownTable(t.rows), '');
  }
  if (input.analysis && 'error' in input.analysis) out.push(`> The policy engine refused this analysis: ${esc(input.analysis.error)}`, '');
  else if (input.analysis) out.push(...predictions(input.analysis, input.view ?? ''));

  out.push(`### Memory per node${range ? ' (samples, first touches and accesses in the time range)' : ''}`, '');
  out.push(`| node | cpus | ${pagesColumnLabel(summary)} | samples | first touches | accesses | share of sampled accesses (cache hits included) |`);
  out.push('| --- | --- | ---: | ---: | ---: | ---: | ---: |');
  for (const r of nodeRows(inRange)) {
    out.push(
      `| ${r.id < 0 ? 'unknown' : r.id} | ${r.id < 0 ? '–' : formatCpuList(r.cpus)} | ${formatCount(r.pagesSeen)} | ${formatCount(r.samples)} | ${formatCount(r.faults)} | ` +
        `${noAccess ? 'not sampled' : formatCount(r.accesses)} | ${noAccess ? '–' : formatPercent(r.shareOfAccesses)} |`,
    );
  }
  out.push('');

  const top = input.regions.slice(0, input.topRegions ?? 10);
  out.push(`### Top regions by samples`, '');
  if (top.length === 0) out.push('No regions in this trace.');
  else {
    out.push('| region | kind | path | size | pages seen | samples | first touches | accesses |');
    out.push('| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: |');
    for (const r of top) {
      out.push(
        `| ${r.index} | ${r.kind} | ${esc(r.path ?? '(anonymous)')} | ${formatBytes(r.end - r.start)} | ${formatCount(r.pages)} | ${formatCount(r.samples)} | ` +
          `${formatCount(r.faults)} | ${noAccess ? 'not sampled' : formatCount(r.accesses)} |`,
      );
    }
  }
  out.push('');

  out.push('### Capabilities', '');
  if (m.capture.capabilities.length === 0) out.push('The trace lists no capabilities.');
  else {
    out.push('| metric | status | how / why |', '| --- | --- | --- |');
    for (const c of m.capture.capabilities) out.push(`| ${c.metric} | **${c.status}** | ${esc(c.reason)} |`);
  }
  out.push('', `_Made with numascope from \`${esc(source)}\`._`, '');
  return out.join('\n');
}
