/**
 * The first-view summary of a trace: per node and per thread totals. A plain, structured-cloneable
 * object so a Worker can post it to the UI.
 */
import { dictionaryColumn, numericColumn, stringColumn, timeColumn } from '../trace/columns.js';
import type { Trace, TraceManifest, Microseconds, NodeId, CpuId } from '../trace/types.js';

/** Page size that pages-table rows and "resident pages" are counted in. */
export const BASE_PAGE_BYTES = 4096;

export interface NodeSummary {
  id: NodeId;
  cpus: CpuId[];
  memoryBytes: number | null;
  /** Rows of the pages table whose last known node is this node. */
  pagesSeen: number;
  /** 4 KiB pages resident on this node at the last numa_maps snapshot (region_placements). */
  residentPages: number;
  /** Sample rows that touched a page on this node (memory-access samples and page faults). */
  samples: number;
  /** Memory accesses the access samples (op load/store/unknown) stand for: sum of their `weight`. Page faults are not accesses. */
  accesses: number;
  /** Page-fault rows (op `fault`): first touches of pages on this node. */
  faults: number;
}

export interface ThreadSummary {
  index: number;
  tid: number;
  pid: number;
  name: string;
  samples: number;
  accesses: number;
  faults: number;
  /** cpu migrations during the capture, -1 unknown. */
  migrations: number;
  placements: { timeUs: Microseconds[]; cpu: CpuId[]; node: NodeId[] };
  /** Its start and end inside the capture (the first `thread-start` and `thread-exit` events), µs; null: not seen to start (before the capture) or to end. */
  life: { startUs: Microseconds | null; exitUs: Microseconds | null };
}

export interface TraceSummary {
  manifest: TraceManifest;
  totals: {
    samples: number;
    /** Rows that are memory-access samples (not page faults). 0 means access counts are unavailable. */
    accessSamples: number;
    accesses: number;
    /** Page-fault rows (first touches). */
    faults: number;
    /** First touches the page-fault rows stand for: the sum of their weights (the sampling period in force). */
    faultWeight: number;
    pages: number;
    threads: number;
    regions: number;
    durationUs: Microseconds;
    lostSamples: number;
  };
  nodes: NodeSummary[];
  /** Pages and samples whose node is unknown (-1). */
  unknownNode: { pagesSeen: number; samples: number; accesses: number; faults: number };
  threads: ThreadSummary[];
  /** Time of the numa_maps snapshot `residentPages` comes from; null when there is none. */
  residentSnapshotUs: Microseconds | null;
  /** What the page and first-touch counts are (countLabels): every view labels them the same way. */
  labels: CountLabels;
}

/**
 * Names for the page and first-touch counts that say what kind of number each is:
 * - pages: with a completed placement scan (manifest capture.pageScan), the pages table holds every
 *   resident page (plus pages fault samples saw that were freed since): "pages resident (exhaustive
 *   scan)". Without one (older traces, imported or synthetic ones), only the pages the samples saw:
 *   "pages seen in samples", never called exhaustive.
 * - first touches: page-fault rows are first touches seen; when they weigh more than one fault each
 *   (adaptive or fixed-period sampling thinned them) they are "sampled", and the sum of their
 *   weights estimates how many first touches there were.
 */
export interface CountLabels {
  pagesSource: 'scan' | 'samples';
  pages: string;
  pagesHint: string;
  /** True when page-fault rows stand for more faults than there are rows. */
  faultsSampled: boolean;
  faults: string;
  faultsHint: string;
}

export function countLabels(manifest: TraceManifest, faults: number, faultWeight: number, pages: number): CountLabels {
  const scan = manifest.capture.pageScan;
  const scanned = scan !== undefined && scan.scans > 0;
  const sampled = faultWeight > faults;
  const n = (x: number) => Math.round(x).toLocaleString('en-US');
  return {
    pagesSource: scanned ? 'scan' : 'samples',
    pages: scanned ? (scan.limitHit ? `pages resident (scan capped at ${n(scan.pageLimit)})` : 'pages resident (exhaustive scan)') : 'pages seen in samples',
    pagesHint: scanned
      ? `Every resident 4 KiB page of the process at the last placement scan (${scan.lastScanAtStop ? 'at the stop' : 'before the process exited'}: ${n(scan.residentPages)} pages)` +
        `${pages > scan.residentPages ? `, plus ${n(pages - scan.residentPages)} pages fault samples saw that were no longer resident` : ''}` +
        `${scan.limitHit ? `; the scan stopped at ${n(scan.pageLimit)} pages, so pages beyond have no row (numa_maps counts them per region)` : ''}.`
      : 'Only the pages that samples (page faults, memory accesses) saw: this trace has no placement scan of every resident page, so the count is not exhaustive.',
    faultsSampled: sampled,
    faults: sampled ? `first touches seen (sampled, weight-estimated ${n(faultWeight)})` : 'first touches (page faults)',
    faultsHint: sampled
      ? `${n(faults)} page-fault samples; page-fault sampling thinned the faults, so they stand for about ${n(faultWeight)} first touches by their weights. A page's first-touching thread is known only when its fault was sampled.`
      : 'Page-fault samples, one per fault: the first touch of each page the recording saw being faulted in.',
  };
}

export function summarizeTrace(trace: Trace): TraceSummary {
  const { manifest, tables } = trace;
  const nodeIds = manifest.machine.nodes.map((n) => n.id);
  const maxNode = Math.max(...nodeIds, 0);
  const nodeSlot = new Int32Array(maxNode + 1).fill(-1);
  nodeIds.forEach((id, i) => (nodeSlot[id] = i));
  const slotOf = (node: number): number => (node >= 0 && node <= maxNode ? nodeSlot[node]! : -1);

  const nodes: NodeSummary[] = manifest.machine.nodes.map((n) => ({
    id: n.id,
    cpus: n.cpus,
    memoryBytes: n.memoryBytes,
    pagesSeen: 0,
    residentPages: 0,
    samples: 0,
    accesses: 0,
    faults: 0,
  }));
  const unknownNode = { pagesSeen: 0, samples: 0, accesses: 0, faults: 0 };

  // Pages per node (last known node).
  const pageNode = numericColumn<Int8Array>(tables.pages, 'node');
  for (let i = 0; i < pageNode.length; i++) {
    const s = slotOf(pageNode[i]!);
    if (s >= 0) nodes[s]!.pagesSeen++;
    else unknownNode.pagesSeen++;
  }

  // Samples, accesses and faults per node and per thread. The sample's own node wins over the
  // page's last node. Page-fault rows mark first touches: they are counted, never as accesses.
  const threadCount = tables.threads.numRows;
  const threadSamples = new Float64Array(threadCount);
  const threadAccesses = new Float64Array(threadCount);
  const threadFaults = new Float64Array(threadCount);
  const sPage = numericColumn<Int32Array>(tables.samples, 'page');
  const sNode = numericColumn<Int8Array>(tables.samples, 'node');
  const sWeight = numericColumn<Uint32Array>(tables.samples, 'weight');
  const sThread = numericColumn<Uint32Array>(tables.samples, 'thread');
  const op = dictionaryColumn(tables.samples, 'op');
  const faultCode = op.values.indexOf('fault');
  let totalAccesses = 0;
  let totalFaults = 0;
  let totalFaultWeight = 0;
  for (let i = 0; i < sPage.length; i++) {
    let node = sNode[i]!;
    const page = sPage[i]!;
    if (node < 0 && page >= 0 && page < pageNode.length) node = pageNode[page]!;
    const isFault = op.codes[i] === faultCode;
    const w = isFault ? 0 : sWeight[i]!;
    const f = isFault ? 1 : 0;
    totalAccesses += w;
    totalFaults += f;
    if (isFault) totalFaultWeight += sWeight[i]! || 1;
    const s = slotOf(node);
    const bucket = s >= 0 ? nodes[s]! : unknownNode;
    bucket.samples++;
    bucket.accesses += w;
    bucket.faults += f;
    const t = sThread[i]!;
    if (t < threadCount) {
      threadSamples[t]!++;
      threadAccesses[t]! += w;
      threadFaults[t]! += f;
    }
  }

  // Resident pages at the last numa_maps snapshot.
  const rpTime = timeColumn(tables.region_placements, 'time_us');
  const rpNode = numericColumn<Int8Array>(tables.region_placements, 'node');
  const rpPages = numericColumn<Uint32Array>(tables.region_placements, 'pages');
  const rpSize = numericColumn<Uint32Array>(tables.region_placements, 'page_size');
  let last = -1;
  for (let i = 0; i < rpTime.length; i++) if (rpTime[i]! > last) last = rpTime[i]!;
  if (last >= 0) {
    for (let i = 0; i < rpTime.length; i++) {
      if (rpTime[i] !== last) continue;
      const s = slotOf(rpNode[i]!);
      if (s >= 0) nodes[s]!.residentPages += (rpPages[i]! * (rpSize[i]! || BASE_PAGE_BYTES)) / BASE_PAGE_BYTES;
    }
  }

  // Threads with their placements over time.
  const tid = numericColumn<Int32Array>(tables.threads, 'tid');
  const pid = numericColumn<Int32Array>(tables.threads, 'pid');
  const names = stringColumn(tables.threads, 'name');
  const migrations = numericColumn<BigInt64Array>(tables.threads, 'migrations');
  const threads: ThreadSummary[] = [];
  for (let i = 0; i < threadCount; i++) {
    threads.push({
      index: i,
      tid: tid[i]!,
      pid: pid[i]!,
      name: names[i] ?? '',
      samples: threadSamples[i]!,
      accesses: threadAccesses[i]!,
      faults: threadFaults[i]!,
      migrations: Number(migrations[i]!),
      placements: { timeUs: [], cpu: [], node: [] },
      life: { startUs: null, exitUs: null },
    });
  }
  // Starts and ends: exact where the recorder had the kernel's task records, else the poll that
  // first found the thread or first missed it.
  const ev = tables.events;
  const evKind = dictionaryColumn(ev, 'kind');
  const startCode = evKind.values.indexOf('thread-start');
  const exitCode = evKind.values.indexOf('thread-exit');
  if (startCode >= 0 || exitCode >= 0) {
    const evTime = timeColumn(ev, 'time_us');
    const evThread = numericColumn<Int32Array>(ev, 'thread');
    for (let i = 0; i < ev.numRows; i++) {
      const t = threads[evThread[i]!];
      if (!t) continue;
      const at = evTime[i]!;
      if (evKind.codes[i] === startCode && (t.life.startUs === null || at < t.life.startUs)) t.life.startUs = at;
      if (evKind.codes[i] === exitCode && (t.life.exitUs === null || at < t.life.exitUs)) t.life.exitUs = at;
    }
  }
  const tpTime = timeColumn(tables.thread_placements, 'time_us');
  const tpThread = numericColumn<Uint32Array>(tables.thread_placements, 'thread');
  const tpCpu = numericColumn<Int16Array>(tables.thread_placements, 'cpu');
  const tpNode = numericColumn<Int8Array>(tables.thread_placements, 'node');
  for (let i = 0; i < tpTime.length; i++) {
    const t = threads[tpThread[i]!];
    if (!t) continue;
    t.placements.timeUs.push(tpTime[i]!);
    t.placements.cpu.push(tpCpu[i]!);
    t.placements.node.push(tpNode[i]!);
  }

  return {
    manifest,
    totals: {
      samples: sPage.length,
      accessSamples: sPage.length - totalFaults,
      accesses: totalAccesses,
      faults: totalFaults,
      faultWeight: totalFaultWeight,
      pages: pageNode.length,
      threads: threadCount,
      regions: tables.regions.numRows,
      durationUs: manifest.capture.durationUs,
      lostSamples: manifest.capture.lostSamples,
    },
    nodes,
    unknownNode,
    threads,
    residentSnapshotUs: last >= 0 ? last : null,
    labels: countLabels(manifest, totalFaults, totalFaultWeight, pageNode.length),
  };
}
