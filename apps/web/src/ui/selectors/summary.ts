/**
 * View models derived from a TraceSummary: pure functions, memoised by the components that use
 * them. Components render; they do not compute.
 */
import type { ThreadSummary, TraceSummary } from '@numascope/policy-engine';
import type { RangeCounts, RegionMeta, RegionTable } from '@numascope/policy-engine';

export interface NodeRow {
  /** Node id; -1 for the "unknown node" row. */
  id: number;
  cpus: number[];
  memoryBytes: number | null;
  pagesSeen: number;
  residentPages: number;
  samples: number;
  accesses: number;
  /** Page-fault rows (first touches). */
  faults: number;
  /** Fractions of the trace's totals (NaN when the total is zero). */
  shareOfPages: number;
  shareOfAccesses: number;
}

/** One row per machine node, plus an "unknown node" row when some pages or samples have no node. */
export function nodeRows(summary: TraceSummary): NodeRow[] {
  const u = summary.unknownNode;
  const totalPages = summary.nodes.reduce((n, x) => n + x.pagesSeen, 0) + u.pagesSeen;
  const totalAccesses = summary.nodes.reduce((n, x) => n + x.accesses, 0) + u.accesses;
  const share = (v: number, total: number) => (total > 0 ? v / total : NaN);
  const rows: NodeRow[] = summary.nodes.map((n) => ({
    id: n.id,
    cpus: n.cpus,
    memoryBytes: n.memoryBytes,
    pagesSeen: n.pagesSeen,
    residentPages: n.residentPages,
    samples: n.samples,
    accesses: n.accesses,
    faults: n.faults,
    shareOfPages: share(n.pagesSeen, totalPages),
    shareOfAccesses: share(n.accesses, totalAccesses),
  }));
  if (u.pagesSeen > 0 || u.samples > 0 || u.accesses > 0) {
    rows.push({
      id: -1,
      cpus: [],
      memoryBytes: null,
      pagesSeen: u.pagesSeen,
      residentPages: 0,
      samples: u.samples,
      accesses: u.accesses,
      faults: u.faults,
      shareOfPages: share(u.pagesSeen, totalPages),
      shareOfAccesses: share(u.accesses, totalAccesses),
    });
  }
  return rows;
}

/** A thread of the summary as the Threads table shows it: its counts, and where it ran. */
export interface ThreadRow extends Omit<ThreadSummary, 'placements' | 'life'> {
  /** Distinct cpus and nodes the thread was observed on, ascending. */
  cpus: number[];
  nodes: number[];
  /** Rows of thread_placements for this thread. */
  placementObservations: number;
}

export function threadRows(summary: TraceSummary): ThreadRow[] {
  return summary.threads.map(({ placements, life: _life, ...t }) => ({
    ...t,
    cpus: distinct(placements.cpu.filter((c) => c >= 0)),
    nodes: distinct(placements.node.filter((n) => n >= 0)),
    placementObservations: placements.timeUs.length,
  }));
}

function distinct(values: readonly number[]): number[] {
  return [...new Set(values)].sort((a, b) => a - b);
}

/**
 * The header of the per-node pages column: "pages resident" when a placement scan found every
 * resident page (summary.labels), "pages seen" when the trace holds only the pages samples saw.
 */
export function pagesColumnLabel(summary: TraceSummary): string {
  return summary.labels.pagesSource === 'scan' ? 'pages resident (scan, 4 KiB)' : 'pages seen (4 KiB)';
}

/** Total cpus of the machine. */
export function cpuCount(summary: TraceSummary): number {
  return summary.manifest.machine.nodes.reduce((n, node) => n + node.cpus.length, 0);
}

/** The command line the trace is about: the profiled process's argv, else the producer's command. */
export function recordedCommand(summary: TraceSummary): string {
  const argv = summary.manifest.process?.command ?? [];
  if (argv.length > 0) return argv.map(shellQuote).join(' ');
  return summary.manifest.origin.command.map(shellQuote).join(' ');
}

export function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_./:=@%+,-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/**
 * The summary with its per-node and per-thread samples, first touches and accesses replaced by
 * those of a time range (pages, resident pages and the trace totals stay whole-trace).
 */
export function summaryInRange(summary: TraceSummary, counts: RangeCounts): TraceSummary {
  const S = counts.slots;
  const unknown = S - 1;
  return {
    ...summary,
    nodes: summary.nodes.map((n, i) => ({
      ...n,
      samples: counts.nodes.samples[i]!,
      faults: counts.nodes.faults[i]!,
      accesses: counts.nodes.accesses[i]!,
    })),
    unknownNode: {
      ...summary.unknownNode,
      samples: counts.nodes.samples[unknown]!,
      faults: counts.nodes.faults[unknown]!,
      accesses: counts.nodes.accesses[unknown]!,
    },
    threads: summary.threads.map((t) => {
      let samples = 0;
      let faults = 0;
      let accesses = 0;
      for (let s = 0; s < S; s++) {
        const k = t.index * S + s;
        samples += counts.threadNodes.samples[k] ?? 0;
        faults += counts.threadNodes.faults[k] ?? 0;
        accesses += counts.threadNodes.accesses[k] ?? 0;
      }
      return { ...t, samples, faults, accesses };
    }),
  };
}

/** Labels of node slots (the machine's nodes, then "unknown node"). */
export function slotLabels(nodeIds: readonly number[]): string[] {
  return [...nodeIds.map((id) => `node ${id}`), 'unknown'];
}

/** A region (its `RegionMeta`: range, kind, path, policy, allocation site) with its counts. */
export interface RegionRow extends RegionMeta {
  pages: number;
  samples: number;
  faults: number;
  accesses: number;
  /** Per node slot, for the chosen metric. */
  perNode: {
    pages: number[];
    samples: number[];
    faults: number[];
    accesses: number[];
  };
}

/** Region rows from the region table answer, busiest first (samples, then pages, then address). */
export function regionRows(meta: readonly RegionMeta[], table: RegionTable): RegionRow[] {
  const S = table.slots;
  const rows = meta.map((m) => {
    const slice = (a: Float64Array) => Array.from(a.subarray(m.index * S, m.index * S + S));
    const perNode = { pages: slice(table.pages), samples: slice(table.samples), faults: slice(table.faults), accesses: slice(table.accesses) };
    const sum = (a: number[]) => a.reduce((x, y) => x + y, 0);
    return {
      ...m,
      pages: sum(perNode.pages),
      samples: sum(perNode.samples),
      faults: sum(perNode.faults),
      accesses: sum(perNode.accesses),
      perNode,
    };
  });
  return rows.sort((a, b) => b.samples - a.samples || b.pages - a.pages || a.start - b.start);
}

/** A region's short name: its path, or its kind and start address. */
export function regionName(m: Pick<RegionMeta, 'kind' | 'path' | 'start'>): string {
  return m.path ?? `${m.kind} @ 0x${m.start.toString(16)}`;
}
