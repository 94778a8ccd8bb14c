/**
 * A recording attached to a program that had faulted its memory in before: no memory-access
 * samples, no page-fault samples, but every resident page with its node (the recorder's placement
 * scan, manifest capture.pageScan) and the threads with their placements. The engine must analyse
 * it with the placement-only estimate up front, labelled ESTIMATED, not refuse it; and the trace
 * summary must call its pages what they are.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { main } from '../cli/main.js';
import { analyze } from '../src/analyze/analyze.js';
import { buildReplayInput } from '../src/analyze/replay-input.js';
import { accessSampleRows } from '../src/engine/windows.js';
import { isEngineError } from '../src/model/errors.js';
import { readTrace } from '../src/trace/reader.js';
import { summarizeTrace } from '../src/query/summary.js';
import type { PageScan, TraceManifest } from '../src/trace/types.js';
import { emptyColumns, writeTrace } from '../src/trace/writer.js';
import { minimalManifest } from './helpers/minimal-trace.js';

const SCAN: PageScan = {
  scans: 3,
  incompleteScans: 0,
  lastScanUs: 3_000_000,
  lastScanAtStop: true,
  residentPages: 96,
  residentPagesByNode: [
    { node: 0, pages: 64 },
    { node: 1, pages: 32 },
  ],
  swappedPages: 0,
  unplacedPages: 0,
  pageLimit: 4_194_304,
  limitHit: false,
  totalScanMs: 3.5,
  maxScanMs: 1.5,
  error: null,
};

/**
 * 96 resident pages (64 on node 0, 32 on node 1) with no first touch, three threads on node 0
 * (cpus 0-1), no sample at all. `pageScan` false: the same trace as an older recorder wrote it.
 */
function attachedBytes(opts: { pageScan?: boolean; faults?: Array<{ page: number; weight: number }> } = {}): Uint8Array {
  const manifest: TraceManifest = minimalManifest();
  manifest.origin = { kind: 'recorded', generator: 'numascope record', seed: null, model: null, description: 'Attached to ./app', command: [], from: null };
  manifest.capture.durationUs = 3_000_000;
  manifest.capture.stopReason = 'duration';
  manifest.capture.sources = [{ id: 'page-faults', status: 'used', reason: 'software page-fault event', samplePeriod: null, intervalMs: null }];
  if (opts.pageScan !== false) manifest.capture.pageScan = SCAN;
  manifest.process = { pid: 4242, startTimeTicks: '172045', command: ['./app'], attached: true, exitCode: null };
  const c = emptyColumns();
  const n = 96;
  c.pages = {
    address: BigUint64Array.from({ length: n }, (_, i) => 0x7f0000000000n + BigInt(i) * 4096n),
    region: new Int32Array(n).fill(-1),
    node: Int8Array.from({ length: n }, (_, i) => (i < 64 ? 0 : 1)),
    page_size: new Uint32Array(n).fill(4096),
    first_touch_us: new BigInt64Array(n).fill(-1n),
    first_touch_thread: new Int32Array(n).fill(-1),
    first_touch_cpu: new Int16Array(n).fill(-1),
  };
  c.threads = {
    tid: Int32Array.from([4242, 4243, 4244]),
    pid: new Int32Array(3).fill(4242),
    name: ['app', 'worker', 'worker'],
    first_seen_us: new Uint32Array(3),
    last_seen_us: new Uint32Array(3).fill(3_000_000),
    migrations: new BigInt64Array(3),
  };
  c.thread_placements = {
    time_us: new Uint32Array(3),
    thread: Uint32Array.from([0, 1, 2]),
    cpu: Int16Array.from([0, 1, 0]),
    node: new Int8Array(3),
  };
  const faults = opts.faults ?? [];
  if (faults.length > 0) {
    const k = faults.length;
    c.samples = {
      ...c.samples,
      time_us: Uint32Array.from(faults, (_, i) => i),
      thread: new Uint32Array(k),
      cpu: new Int16Array(k),
      page: Int32Array.from(faults, (f) => f.page),
      offset: new Uint16Array(k),
      op: { values: ['fault'], indices: new Int8Array(k) },
      event: { values: ['page-fault'], indices: new Int8Array(k) },
      data_source: { values: ['unknown'], indices: new Int8Array(k) },
      hops: new Int8Array(k).fill(-1),
      node: Int8Array.from(faults, (f) => (f.page < 64 ? 0 : 1)),
      latency_cycles: new Uint32Array(k),
      stack: new Int32Array(k).fill(-1),
      hitm: new Int8Array(k).fill(-1),
      weight: Uint32Array.from(faults, (f) => f.weight),
    } as typeof c.samples;
  }
  return writeTrace(manifest, c);
}

describe('an attached, placement-only recording', () => {
  const bytes = attachedBytes();
  const trace = readTrace(bytes);

  it('reads back with its capture.pageScan', () => {
    expect(trace.manifest.capture.pageScan).toEqual(SCAN);
    expect(accessSampleRows(trace)).toBe(0);
  });

  it('the library still refuses it unless an estimate is asked for (auto or uniform)', () => {
    let code: string | null = null;
    try {
      buildReplayInput(trace, { windowMs: 100 });
    } catch (e) {
      code = isEngineError(e) ? e.code : String(e);
    }
    expect(code).toBe('no-access-data');
    const input = buildReplayInput(trace, { windowMs: 100, accessEstimate: 'auto' });
    expect(input.estimate).toBe('uniform');
    expect(input.notes!.join('\n')).toMatch(/ESTIMATED \(chosen automatically: access estimate "auto"\)/);
  });

  it('auto on a trace with access samples is the measured replay, with no note', () => {
    const measured = readTrace(new Uint8Array(readFileSync(fileURLToPath(new URL('../../../sample-traces/streamcluster-hotspot.numascope', import.meta.url)))));
    expect(accessSampleRows(measured)).toBeGreaterThan(0);
    const result = analyze(measured, { accessEstimate: 'auto', policies: ['first-touch', 'interleave'] });
    expect(result.estimate).toBeNull();
    expect(result.notes.join('\n')).not.toMatch(/ESTIMATED|access estimate/);
  });

  it('CLI analyze: the estimate by default, labelled ESTIMATED, traffic split as the scanned pages are', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'placement-only-'));
    const file = join(dir, 'attached.numascope');
    writeFileSync(file, bytes);
    const out: string[] = [];
    const err: string[] = [];
    expect(await main(['analyze', file], (s) => out.push(s), (s) => err.push(s))).toBe(0);
    expect(err).toEqual([]);
    const text = out.join('\n');
    expect(text).toMatch(/^ {2}ESTIMATED: this trace has no memory-access samples.*--access-estimate off refuses/m);
    expect(text).toMatch(/memory traffic by node \(observed, ESTIMATED\): node 0 67%, node 1 33%/);
    out.length = 0;
    expect(await main(['analyze', file, '--json'], (s) => out.push(s), (s) => err.push(s))).toBe(0);
    const json = JSON.parse(out.join('\n'));
    expect(json.estimate).toBe('uniform');
    expect(json.nodes.share[0]).toBeCloseTo(64 / 96, 9);
    expect(json.notes[0]).toMatch(/^ESTIMATED \(chosen automatically/);
    expect(json.policies.map((p: { policy: string }) => p.policy)).toEqual(['observed', 'first-touch', 'interleave']);
    // --access-estimate off: the old refusal, exit 1, one line saying how to get the estimate.
    expect(await main(['analyze', file, '--access-estimate', 'off'], (s) => out.push(s), (s) => err.push(s))).toBe(1);
    expect(err).toHaveLength(1);
    expect(err[0]).toMatch(/no memory-access samples.*--access-estimate uniform or auto/);
    expect(await main(['analyze', file, '--access-estimate', 'guess'], (s) => out.push(s), (s) => err.push(s))).toBe(2);
    expect(err[1]).toMatch(/--access-estimate must be "auto", "uniform" or "off", got "guess"/);
  });

  it('a trace with no pages at all (an attach before the scan existed) is refused, saying why', async () => {
    const old = attachedBytes({ pageScan: false });
    const t = readTrace(old);
    const empty = { ...t, tables: { ...t.tables, pages: t.tables.pages.slice(0, 0) } };
    let message = '';
    try {
      analyze(empty, { accessEstimate: 'auto' });
    } catch (e) {
      message = isEngineError(e) ? `${e.code}: ${e.message}` : String(e);
    }
    expect(message).toMatch(/^empty-trace: .*without the placement scan of resident pages/);
  });
});

describe('summary labels: which count is which', () => {
  it('pages from a placement scan are "pages resident (exhaustive scan)"', () => {
    const s = summarizeTrace(readTrace(attachedBytes()));
    expect(s.labels.pagesSource).toBe('scan');
    expect(s.labels.pages).toBe('pages resident (exhaustive scan)');
    expect(s.labels.pagesHint).toMatch(/at the stop: 96 pages/);
    expect(s.labels.faults).toBe('first touches (page faults)');
  });

  it('a trace without pageScan never claims exhaustive', () => {
    const s = summarizeTrace(readTrace(attachedBytes({ pageScan: false })));
    expect(s.labels.pagesSource).toBe('samples');
    expect(s.labels.pages).toBe('pages seen in samples');
    expect(`${s.labels.pages} ${s.labels.pagesHint}`).not.toMatch(/exhaustive scan\)|every resident page of the process/);
  });

  it('sampled first touches say so, with the estimate their weights give', () => {
    const s = summarizeTrace(readTrace(attachedBytes({ faults: [{ page: 0, weight: 1 }, { page: 70, weight: 400 }, { page: 80, weight: 1200 }] })));
    expect(s.totals.faults).toBe(3);
    expect(s.totals.faultWeight).toBe(1601);
    expect(s.labels.faultsSampled).toBe(true);
    expect(s.labels.faults).toBe('first touches seen (sampled, weight-estimated 1,601)');
    const every = summarizeTrace(readTrace(attachedBytes({ faults: [{ page: 0, weight: 1 }, { page: 1, weight: 1 }] })));
    expect(every.labels.faultsSampled).toBe(false);
  });

  it('a pageScan that breaks the format is refused, naming the field', () => {
    const m = minimalManifest();
    m.capture.pageScan = { ...SCAN, residentPages: -1 };
    expect(() => readTrace(writeTrace(m, emptyColumns()))).toThrow(/capture\.pageScan\.residentPages/);
  });
});
