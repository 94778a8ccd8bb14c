// The record-option limits are the collector's: read from its Rust sources, as
// packages/policy-engine/test/plan.test.ts reads PLAN_LIMITS from apply/plan.rs.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { RECORD_LIMITS, startRecordingRequest } from '../src/index';

const rust = (p: string) => readFileSync(fileURLToPath(new URL(`../../../native/collector/crates/${p}`, import.meta.url)), 'utf8');

describe('RECORD_LIMITS', () => {
  it('are the collector’s: MAX_CAPTURE (core record.rs) and the ranges `numascope record` accepts (cli main.rs)', () => {
    const record = rust('core/src/record.rs');
    const capture = /pub const MAX_CAPTURE: Duration = Duration::from_secs\(([\d_]+)\);/.exec(record);
    expect(capture, 'MAX_CAPTURE in record.rs').not.toBeNull();
    const main = rust('cli/src/main.rs');
    /** The `range(A..=B)` of the clap argument `--NAME`. */
    const range = (name: string) => {
      const m = new RegExp(`long = "${name}"[^\\]]*?range\\(([\\d_]+)\\.\\.=([\\d_]+)\\)`).exec(main);
      if (!m) throw new Error(`--${name} with a value range not found in main.rs`);
      return { min: Number(m[1]!.replace(/_/g, '')), max: Number(m[2]!.replace(/_/g, '')) };
    };
    expect(RECORD_LIMITS).toEqual({
      maxDurationS: Number(capture![1]!.replace(/_/g, '')),
      intervalMs: range('interval-ms'),
      faultPeriod: range('fault-period'),
      faultRateHz: range('fault-rate'),
    });
  });

  it('bound the start request, naming the field', () => {
    const ok = { command: ['./app'] };
    expect(startRecordingRequest.safeParse({ ...ok, durationS: RECORD_LIMITS.maxDurationS }).success).toBe(true);
    expect(startRecordingRequest.safeParse({ ...ok, durationS: RECORD_LIMITS.maxDurationS + 1 }).error?.issues[0]?.path).toEqual(['durationS']);
    expect(startRecordingRequest.safeParse({ ...ok, durationS: 0 }).success).toBe(false);
    expect(startRecordingRequest.safeParse({ ...ok, intervalMs: RECORD_LIMITS.intervalMs.min }).success).toBe(true);
    expect(startRecordingRequest.safeParse({ ...ok, intervalMs: RECORD_LIMITS.intervalMs.max + 1 }).error?.issues[0]?.path).toEqual(['intervalMs']);
    expect(startRecordingRequest.safeParse({ ...ok, faultRateHz: RECORD_LIMITS.faultRateHz.min - 1 }).success).toBe(false);
    expect(startRecordingRequest.safeParse({ ...ok, faultPeriod: 1, faultRateHz: 1000 }).error?.issues[0]?.message).toBe('give faultPeriod or faultRateHz, not both');
    expect(startRecordingRequest.safeParse({ pid: 1, command: ['x'] }).error?.issues[0]?.message).toBe('give exactly one of pid and command');
    expect(startRecordingRequest.safeParse({ ...ok, faultEvent: 'hardware' }).success).toBe(false);
  });
});
