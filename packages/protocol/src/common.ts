/** Field schemas shared by the messages. */
import { z } from 'zod';

export const int = z.number().int();
/** A Rust unsigned count (u32/u64/usize): a non-negative integer. */
export const count = int.nonnegative();
/** A process or thread id as the kernel hands them out (PID_MAX_LIMIT is 2^22). */
export const pid = int.min(1).max(4_194_304);
/** A NUMA node id; -1 where a count is of pages or threads whose node is not known. */
export const nodeOrUnknown = int.min(-1);
/** A recording id: serve's 16 hex digits, the desktop app's `r1-…`. */
export const recordingId = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'a recording id (letters, digits, - and _)');
/** A u64 the collector writes as a decimal string (it can exceed 2^53), e.g. a process start time in clock ticks. */
export const decimalString = z.string().regex(/^\d+$/, 'a decimal integer string');
/** A page address as a hexadecimal string, e.g. "0x7f3a2c000000". */
export const hexAddress = z.string().regex(/^0x[0-9a-fA-F]+$/, 'a hexadecimal address string like "0x7f3a2c000000"');
/** Pages (or bytes) per node: node id as a string key → count. */
export const nodePages = z.record(z.string().regex(/^\d+$/, 'a node id key'), count);
export type NodePages = z.infer<typeof nodePages>;

// No code generated from strings: the app runs under Content-Security-Policies without
// 'unsafe-eval' (numascope serve, the desktop app), where zod's compiled fast path (and even its
// probe for it) is refused. Schemas here parse small objects; the interpreted path is fast enough.
z.config({ jitless: true });

/** `{ code, message }`: every API error and a failed recording's error. */
export const errorBody = z.strictObject({ code: z.string(), message: z.string() });

/**
 * The codes `POST /api/apply` and `/api/rollback` refuse with (docs/live-api.md); other endpoints
 * have their own (`unauthorized`, `bad-duration`, …), so `errorBody.code` stays a string.
 * `kernel-unsupported` (422): the kernel lacks a feature the plan needs (the message names the
 * Linux version, e.g. weighted-interleave system weights need 6.9).
 */
export const APPLY_ERROR_CODES = [
  'wrong-machine',
  'no-process',
  'pid-reused',
  'thread-not-in-process',
  'foreign-thread',
  'range-not-mapped',
  'permission',
  'kernel-unsupported',
  'io',
  'invalid-plan',
  'invalid-record',
  'plan-too-large',
  'record-too-large',
] as const;
export const applyErrorCode = z.enum(APPLY_ERROR_CODES);
export type ApplyErrorCode = z.infer<typeof applyErrorCode>;
export type ErrorBody = z.infer<typeof errorBody>;
