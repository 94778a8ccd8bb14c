/**
 * perf c2c's Shared Data Cache Line Table from a trace's PMU samples (IBS, PEBS): per 64-byte
 * cache line, the loads that hit a line another core held modified (HITM, `samples.hitm`: local,
 * remote), the stores, the loads by where they were served, the offsets within the line, the
 * threads and nodes, and the code of the loads and stores. Counted as `perf c2c report` counts
 * them: records, not weights; a line is *shared* (listed) when it has at least one HITM, sorted
 * on total HITMs (perf's default `--display tot`). The per-line columns follow its table:
 * stores L1 hit / L1 miss / N/A, loads FB / L1 / L2, LLC hit / local HITM, remote hit / remote
 * HITM, local / remote DRAM; a line's records are the sum of those columns, as perf's are (a load
 * in none of them, such as a remote-cache load whose snoop result was neither HIT nor HITM,
 * counts nowhere: `totals.uncounted`).
 *
 * The sharing diagnostics (diagnose/) take their lines from here: a trace with HITM classes
 * (`samples.hitm` >= 0 on its PMU samples, e.g. `numascope import` of a perf c2c or perf mem file)
 * counts false and true sharing on the listed lines only. Pure, no DOM or Node.
 */
import { codeFrames, type CodeFrames } from './frames.js';
import { dictionaryColumn, numericColumn } from '../trace/columns.js';
import type { Trace } from '../trace/types.js';

/** Cache-line size: perf c2c groups by 64-byte lines (its default). */
const CACHE_LINE_BYTES = 64;
/** Sample events of PMU memory samples (byte-exact addresses, a data source). */
export const PMU_EVENTS: readonly string[] = ['ibs-op', 'pebs-load', 'pebs-store'];

/** One offset within a line. */
export interface C2cOffset {
  offset: number;
  records: number;
  loads: number;
  stores: number;
  localHitm: number;
  remoteHitm: number;
  /** Thread rows that touched it. */
  threads: number[];
  /** The code of its loads and stores (the sample's own instruction: self frame), most records first. */
  code: Array<{ code: string; records: number }>;
}

export interface C2cLine {
  /** Line address (decimal string: addresses exceed 2^53) and as hex. */
  address: string;
  addressHex: string;
  /** Node of the line's page (pages.node), -1 unknown. */
  node: number;
  totalHitm: number;
  localHitm: number;
  remoteHitm: number;
  records: number;
  loads: number;
  stores: number;
  storeL1Hit: number;
  storeL1Miss: number;
  storeNA: number;
  loadFB: number;
  loadL1: number;
  loadL2: number;
  llcHit: number;
  remoteHit: number;
  localDram: number;
  remoteDram: number;
  threads: number[];
  /** Nodes of the cpus that touched the line (from the machine's cpus), sorted. */
  cpuNodes: number[];
  offsets: C2cOffset[];
}

export interface C2cTable {
  /** The trace has PMU samples with HITM classes. */
  available: boolean;
  reason: string | null;
  /** perf c2c's "Trace Event Information" totals over the PMU load/store samples kept in the trace. */
  totals: {
    records: number;
    loads: number;
    stores: number;
    localHitm: number;
    remoteHitm: number;
    sharedLines: number;
    /** Loads in none of perf's columns (e.g. a remote-cache load whose snoop result is neither HIT nor HITM): in no line's records. */
    uncounted: number;
  };
  /** Lines with at least one HITM, most HITMs first (perf c2c's Shared Data Cache Line Table). */
  lines: C2cLine[];
  /** IBS/PEBS sample rows in the trace (0: nothing for perf c2c to count). */
  pmuSamples: number;
  /** Whether the samples carry code (stacks); otherwise the code columns are empty. */
  code: boolean;
}

type Acc = Omit<C2cLine, 'address' | 'addressHex' | 'threads' | 'cpuNodes' | 'offsets' | 'node'> & {
  page: number;
  lineInPage: number;
  threads: Set<number>;
  cpus: Set<number>;
  offsets: Map<number, { records: number; loads: number; stores: number; localHitm: number; remoteHitm: number; threads: Set<number>; code: Map<string, number> }>;
};

function frameLabel(code: CodeFrames, f: number): string {
  const fn = code.frames.function[f];
  const file = code.frames.file[f];
  const line = code.frames.line[f]!;
  const where = file ? ` ${file.split('/').pop()}${line >= 0 ? `:${line}` : ''}` : '';
  return fn ? `${fn}${where}` : code.functions[code.frames.functionOf[f]!]?.name ?? '?';
}

/** perf c2c's shared-line table of `trace` (see the module comment). */
export function c2cTable(trace: Trace): C2cTable {
  const s = trace.tables.samples;
  const n = s.numRows;
  const page = numericColumn<Int32Array>(s, 'page');
  const offset = numericColumn<Uint16Array>(s, 'offset');
  const thread = numericColumn<Uint32Array>(s, 'thread');
  const cpu = numericColumn<Int16Array>(s, 'cpu');
  const hitm = numericColumn<Int8Array>(s, 'hitm');
  const op = dictionaryColumn(s, 'op');
  const ev = dictionaryColumn(s, 'event');
  const ds = dictionaryColumn(s, 'data_source');
  const pageAddress = numericColumn<BigUint64Array>(trace.tables.pages, 'address');
  const pageNode = numericColumn<Int8Array>(trace.tables.pages, 'node');
  const pmu = ev.values.map((e: string) => PMU_EVENTS.includes(e));
  const load = op.values.indexOf('load');
  const store = op.values.indexOf('store');
  const dsName = ds.values;
  const cpuNode = new Map<number, number>();
  for (const node of trace.manifest.machine.nodes) for (const c of node.cpus) cpuNode.set(c, node.id);

  const totals = { records: 0, loads: 0, stores: 0, localHitm: 0, remoteHitm: 0, sharedLines: 0, uncounted: 0 };
  let pmuRows = 0;
  let known = 0;
  for (let i = 0; i < n; i++) {
    if (!pmu[ev.codes[i]!]) continue;
    pmuRows++;
    if (hitm[i]! >= 0) known++;
  }
  if (known === 0) {
    const reason =
      pmuRows === 0
        ? 'the trace has no IBS or PEBS samples: cache-line contention needs load and store samples with addresses and their data source'
        : 'its IBS/PEBS samples carry no HITM class (samples.hitm is -1: a v2 file, or the recorder decoded no snoop result); import the perf.data of perf c2c record or perf mem record for it';
    return { available: false, reason, pmuSamples: pmuRows, totals, lines: [], code: false };
  }
  const code = codeFrames(trace);
  const lines = new Map<number, Acc>();
  for (let i = 0; i < n; i++) {
    if (!pmu[ev.codes[i]!] || page[i]! < 0) continue;
    const o = op.codes[i]!;
    const isLoad = o === load;
    if (!isLoad && o !== store) continue;
    totals.records++;
    const h = hitm[i]!;
    if (isLoad) totals.loads++;
    else totals.stores++;
    if (h === 1) totals.localHitm++;
    if (h === 2) totals.remoteHitm++;
    const src = dsName[ds.codes[i]!] ?? 'unknown';
    const cat = isLoad ? loadColumn(h, src) : null;
    // A load in none of perf's columns (a remote-cache load whose snoop result is neither HIT nor
    // HITM, a load of unknown level) is in none of a line's counts: perf's records are the sum
    // of its columns.
    if (isLoad && cat === null) {
      totals.uncounted++;
      continue;
    }
    const lineInPage = Math.floor(offset[i]! / CACHE_LINE_BYTES);
    const key = page[i]! * 64 + lineInPage;
    let a = lines.get(key);
    if (!a) {
      a = {
        page: page[i]!,
        lineInPage,
        totalHitm: 0,
        localHitm: 0,
        remoteHitm: 0,
        records: 0,
        loads: 0,
        stores: 0,
        storeL1Hit: 0,
        storeL1Miss: 0,
        storeNA: 0,
        loadFB: 0,
        loadL1: 0,
        loadL2: 0,
        llcHit: 0,
        remoteHit: 0,
        localDram: 0,
        remoteDram: 0,
        threads: new Set(),
        cpus: new Set(),
        offsets: new Map(),
      };
      lines.set(key, a);
    }
    a.records++;
    if (isLoad) {
      a.loads++;
      a[cat!]++;
    } else {
      a.stores++;
      if (src === 'l1') a.storeL1Hit++;
      else if (src === 'unknown') a.storeNA++;
      else a.storeL1Miss++;
    }
    a.threads.add(thread[i]!);
    if (cpu[i]! >= 0) a.cpus.add(cpu[i]!);
    const off = offset[i]!;
    let b = a.offsets.get(off);
    if (!b) {
      b = { records: 0, loads: 0, stores: 0, localHitm: 0, remoteHitm: 0, threads: new Set(), code: new Map() };
      a.offsets.set(off, b);
    }
    b.records++;
    if (isLoad) b.loads++;
    else b.stores++;
    if (h === 1) b.localHitm++;
    if (h === 2) b.remoteHitm++;
    b.threads.add(thread[i]!);
    const f = code.available ? code.selfFrame(i) : -1;
    if (f >= 0) {
      const label = frameLabel(code, f);
      b.code.set(label, (b.code.get(label) ?? 0) + 1);
    }
  }
  const out: C2cLine[] = [];
  for (const a of lines.values()) {
    a.totalHitm = a.localHitm + a.remoteHitm;
    if (a.totalHitm === 0) continue;
    const addr = pageAddress[a.page]! + BigInt(a.lineInPage * CACHE_LINE_BYTES);
    const nodes = new Set<number>();
    for (const c of a.cpus) {
      const nd = cpuNode.get(c);
      if (nd !== undefined) nodes.add(nd);
    }
    out.push({
      address: addr.toString(),
      addressHex: `0x${addr.toString(16)}`,
      node: pageNode[a.page]!,
      totalHitm: a.totalHitm,
      localHitm: a.localHitm,
      remoteHitm: a.remoteHitm,
      records: a.records,
      loads: a.loads,
      stores: a.stores,
      storeL1Hit: a.storeL1Hit,
      storeL1Miss: a.storeL1Miss,
      storeNA: a.storeNA,
      loadFB: a.loadFB,
      loadL1: a.loadL1,
      loadL2: a.loadL2,
      llcHit: a.llcHit,
      remoteHit: a.remoteHit,
      localDram: a.localDram,
      remoteDram: a.remoteDram,
      threads: [...a.threads].sort((x, y) => x - y),
      cpuNodes: [...nodes].sort((x, y) => x - y),
      offsets: [...a.offsets.entries()]
        .sort(([x], [y]) => x - y)
        .map(([off, b]) => ({
          offset: off % CACHE_LINE_BYTES,
          records: b.records,
          loads: b.loads,
          stores: b.stores,
          localHitm: b.localHitm,
          remoteHitm: b.remoteHitm,
          threads: [...b.threads].sort((x, y) => x - y),
          code: [...b.code.entries()].sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1)).map(([c, r]) => ({ code: c, records: r })),
        })),
    });
  }
  out.sort((x, y) => y.totalHitm - x.totalHitm || y.records - x.records || (x.address < y.address ? -1 : 1));
  totals.sharedLines = out.length;
  return { available: true, reason: null, pmuSamples: pmuRows, totals, lines: out, code: code.available };
}

/**
 * The column of perf c2c's table a load counts in (`h`: its samples.hitm class, `src`: its data
 * source), null for none: 1 local HITM, 2 remote HITM, 3 remote HIT (a clean line in a remote
 * cache); a remote-cache load of class 0 had a snoop result perf counts nowhere; one of unknown
 * class (-1, a source without snoop results) counts as a remote hit.
 */
function loadColumn(h: number, src: string): LoadColumn | null {
  if (h === 1) return 'localHitm';
  if (h === 2) return 'remoteHitm';
  switch (src) {
    case 'lfb':
      return 'loadFB';
    case 'l1':
      return 'loadL1';
    case 'l2':
      return 'loadL2';
    case 'l3':
      return 'llcHit';
    case 'remote-cache':
      return h === 3 || h === -1 ? 'remoteHit' : null;
    case 'local-dram':
      return 'localDram';
    case 'remote-dram':
      return 'remoteDram';
    default:
      return null;
  }
}

type LoadColumn = 'localHitm' | 'remoteHitm' | 'loadFB' | 'loadL1' | 'loadL2' | 'llcHit' | 'remoteHit' | 'localDram' | 'remoteDram';

/**
 * The keys (`page * 64 + line in page`) of the lines with at least one HITM, for the sharing
 * diagnostics; null when the trace has no HITM classes (the diagnostics then use every line).
 */
export function hitmLineKeys(trace: Trace): Set<number> | null {
  const t = c2cTable(trace);
  if (!t.available) return null;
  const pageAddress = numericColumn<BigUint64Array>(trace.tables.pages, 'address');
  const byAddress = new Map<bigint, number>();
  for (let p = 0; p < pageAddress.length; p++) byAddress.set(pageAddress[p]!, p);
  const keys = new Set<number>();
  for (const l of t.lines) {
    const a = BigInt(l.address);
    const p = byAddress.get(a & ~4095n);
    if (p !== undefined) keys.add(p * 64 + Number((a & 4095n) / BigInt(CACHE_LINE_BYTES)));
  }
  return keys;
}
