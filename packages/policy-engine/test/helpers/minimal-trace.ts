/** A small valid trace (the current format version) built in the test, so each bad-file test can break exactly one thing. */
import { unzipSync, zipSync, strToU8, strFromU8, type Zippable } from 'fflate';
import { emptyColumns, writeTrace } from '../../src/trace/writer.js';
import { CURRENT_TRACE_VERSION, type TraceManifest } from '../../src/trace/types.js';

export function minimalManifest(): TraceManifest {
  return {
    format: 'numascope-trace',
    version: CURRENT_TRACE_VERSION,
    producer: { name: 'numascope-test', version: '0.0.0' },
    createdAt: '2026-11-21T00:00:00Z',
    origin: {
      kind: 'synthetic',
      generator: 'reader-errors.test.ts',
      seed: 1,
      model: 'empty',
      description: 'an empty trace for reader tests',
      command: [],
      from: null,
    },
    machine: {
      name: 'test-2node',
      source: 'json:test',
      kernel: null,
      cpuModel: null,
      pageSizeBytes: 4096,
      nodes: [
        { id: 0, cpus: [0, 1], memoryBytes: 1 << 30, memoryBandwidthGBps: null },
        { id: 1, cpus: [2, 3], memoryBytes: 1 << 30, memoryBandwidthGBps: null },
      ],
      distances: [
        [10, 20],
        [20, 10],
      ],
      latenciesNs: null,
      links: [],
      routes: null,
      provenance: {},
    },
    capture: {
      startMonotonicNs: '123456789012345678',
      startUnixMs: 0,
      durationUs: 1000,
      stopReason: 'generated',
      sources: [],
      capabilities: [],
      lostSamples: 0,
      sampleCount: 0,
      notes: [],
    },
    process: null,
    appliedPlans: [],
    tables: [],
  };
}

export function minimalTraceBytes(): Uint8Array {
  return writeTrace(minimalManifest(), emptyColumns());
}

/** Re-packs a trace after `edit` changed its entries. */
export function repack(bytes: Uint8Array, edit: (entries: Record<string, Uint8Array>) => void): Uint8Array {
  const entries = unzipSync(bytes);
  edit(entries);
  const z: Zippable = {};
  for (const [k, v] of Object.entries(entries)) z[k] = [v, { level: 0 }];
  return zipSync(z);
}

export function editManifest(bytes: Uint8Array, edit: (m: Record<string, any>) => void): Uint8Array {
  return repack(bytes, (e) => {
    const m = JSON.parse(strFromU8(e['manifest.json']!));
    edit(m);
    e['manifest.json'] = strToU8(JSON.stringify(m));
  });
}
