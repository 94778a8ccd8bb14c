// The record-option limits are the collector's: compared with the serde output of its
// RECORD_LIMITS (crates/core/src/recorder/options.rs), which the Rust fixture test writes.
import { describe, expect, it } from 'vitest';
import { rustExample } from '../fixtures/index';
import { FAULT_EVENTS, RECORD_LIMITS, recordLimits, startRecordingRequest } from '../src/index';

describe('RECORD_LIMITS', () => {
  it('are the collector’s RECORD_LIMITS (recorder/options.rs, as serialised for the binding’s recordLimits())', () => {
    const rust = recordLimits.parse(rustExample('recordLimits'));
    const range = (l: { min: number; max: number }) => ({ min: l.min, max: l.max });
    expect(RECORD_LIMITS).toEqual({
      maxDurationS: rust.durationMaxS,
      intervalMs: range(rust.intervalMs),
      faultPeriod: range(rust.faultPeriod),
      faultRateHz: range(rust.faultRateHz),
      callStackDepth: range(rust.callStackDepth),
    });
    expect([...FAULT_EVENTS]).toEqual(rust.faultEvents);
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
    // killOnStop: a boolean (serve answers bad-kill-on-stop otherwise); numaBalancing: leave or on.
    expect(startRecordingRequest.safeParse({ ...ok, killOnStop: true }).success).toBe(true);
    expect(startRecordingRequest.safeParse({ ...ok, killOnStop: 'yes' }).error?.issues[0]?.path).toEqual(['killOnStop']);
    expect(startRecordingRequest.safeParse({ ...ok, numaBalancing: 'on' }).success).toBe(true);
    // allocSites: a boolean (serve answers bad-alloc-sites otherwise).
    expect(startRecordingRequest.safeParse({ ...ok, allocSites: false }).success).toBe(true);
    expect(startRecordingRequest.safeParse({ ...ok, allocSites: 'no' }).error?.issues[0]?.path).toEqual(['allocSites']);
    expect(startRecordingRequest.safeParse({ ...ok, numaBalancing: 'off' }).success).toBe(false);
    // callStackDepth: 0 (no code locations) to 127 (serve answers bad-call-stack-depth otherwise).
    expect(startRecordingRequest.safeParse({ ...ok, callStackDepth: 0 }).success).toBe(true);
    expect(startRecordingRequest.safeParse({ ...ok, callStackDepth: 128 }).error?.issues[0]?.path).toEqual(['callStackDepth']);
  });
});
