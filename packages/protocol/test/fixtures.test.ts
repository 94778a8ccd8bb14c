// The collector's serde output (fixtures/rust-messages.json, written by the Rust test
// native/collector/crates/cli/src/cmd_serve/protocol_fixture.rs) against the schemas: every
// message the collector writes has a schema here and parses with it, strictly (an added or renamed
// Rust field is an unexpected field here), and every schema has collector output to check.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { describeIssue, RUST_MESSAGES } from '../src/index';
import type { RustMessageName } from '../src/index';

const fixture = JSON.parse(readFileSync(fileURLToPath(new URL('../fixtures/rust-messages.json', import.meta.url)), 'utf8')) as Record<string, unknown[]>;

describe('the collector’s messages (fixtures/rust-messages.json)', () => {
  it('name the same messages as RUST_MESSAGES, each with examples', () => {
    expect(Object.keys(fixture).sort()).toEqual(Object.keys(RUST_MESSAGES).sort());
    for (const [name, examples] of Object.entries(fixture)) {
      expect(Array.isArray(examples) && examples.length > 0, name).toBe(true);
    }
  });

  for (const name of Object.keys(RUST_MESSAGES) as RustMessageName[]) {
    it(`${name}: every example parses with the strict schema, unchanged`, () => {
      for (const [i, example] of (fixture[name] ?? []).entries()) {
        const r = RUST_MESSAGES[name].safeParse(example);
        expect(r.success ? 'ok' : describeIssue(`${name}[${i}]`, r.error.issues[0]!)).toBe('ok');
        // Nothing dropped or defaulted on the way.
        expect(r.data, `${name}[${i}]`).toEqual(example);
      }
    });
  }

  it('holds the weighted-interleave and tier messages (issue 17), checked by the schemas above', () => {
    const reports = fixture.applyReport as Array<{ ranges: Array<Record<string, unknown>>; systemWeights?: { operation: string } }>;
    const weighted = reports.find((r) => r.ranges.some((g) => g['action'] === 'weighted-interleave'));
    expect(weighted?.ranges[0]).toMatchObject({ weights: [4, 1], weightCheck: { ok: true, cycles: 410 } });
    expect(weighted?.systemWeights?.operation).toBe('apply');
    expect(reports.some((r) => r.systemWeights?.operation === 'restore')).toBe(true);
    expect((fixture.rollbackRecord as Array<Record<string, unknown>>).some((r) => 'systemWeights' in r)).toBe(true);
    const probes = fixture.probe as Array<{ placement?: Array<{ id: string }> }>;
    expect(probes[0]!.placement?.map((f) => f.id)).toContain('weighted-interleave');
    const machines = fixture.machine as Array<{ nodes: Array<Record<string, unknown>> }>;
    expect(machines.some((m) => m.nodes.some((n) => n['cpus'] instanceof Array && (n['cpus'] as unknown[]).length === 0 && 'hmat' in n && 'memoryTier' in n))).toBe(true);
    expect((fixture.apiError as Array<{ error: { code: string } }>).map((e) => e.error.code)).toContain('kernel-unsupported');
    // a weight outside the kernel's 1-255 is refused
    const bad = { ...weighted!, ranges: [{ ...weighted!.ranges[0], weights: [0, 1] }] };
    expect(RUST_MESSAGES.applyReport.safeParse(bad).success).toBe(false);
  });

  it('a field the collector adds, renames or retypes is refused', () => {
    const window = fixture.liveWindow![0] as Record<string, unknown>;
    expect(RUST_MESSAGES.liveWindow.safeParse({ ...window, cpuTime: 1 }).success).toBe(false);
    const { threadsSeen, ...renamed } = window;
    expect(RUST_MESSAGES.liveWindow.safeParse({ ...renamed, threadsSeenCount: threadsSeen }).success).toBe(false);
    expect(RUST_MESSAGES.liveWindow.safeParse({ ...window, seq: '3' }).success).toBe(false);
    const report = fixture.applyReport![1] as { pages: Record<string, unknown> };
    const r = RUST_MESSAGES.applyReport.safeParse({ ...report, pages: { ...report.pages, skipped: 0 } });
    expect(r.success ? 'ok' : describeIssue('applyReport', r.error.issues[0]!)).toBe('applyReport.pages: unexpected field(s) "skipped"');
  });

  it('the examples cover each optional field present and absent (or null and not null)', () => {
    const summaries = fixture.recordSummary as Array<{ exitCode: number | null; leftRunning: boolean }>;
    expect(summaries.some((s) => s.exitCode === null) && summaries.some((s) => s.exitCode !== null)).toBe(true);
    expect(summaries.some((s) => s.leftRunning) && summaries.some((s) => !s.leftRunning)).toBe(true);
    const recordings = fixture.recording as Array<Record<string, unknown>>;
    for (const k of ['summary', 'error', 'latest', 'durationS']) {
      expect(recordings.some((r) => r[k] === null) && recordings.some((r) => r[k] !== null), k).toBe(true);
    }
    const reports = fixture.applyReport as Array<Record<string, unknown>>;
    expect(reports.some((r) => 'rollback' in r) && reports.some((r) => !('rollback' in r))).toBe(true);
    const threads = (fixture.rollbackRecord as Array<{ threads: Array<Record<string, unknown>> }>).flatMap((r) => r.threads);
    expect(threads.some((t) => 'startTimeTicks' in t) && threads.some((t) => !('startTimeTicks' in t))).toBe(true);
  });
});
