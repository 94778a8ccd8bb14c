/**
 * Every message the collector serialises for another process, by name: the names of
 * fixtures/rust-messages.json, which a Rust test writes from the collector's own types and
 * functions (native/collector/crates/cli/src/cmd_serve/protocol_fixture.rs) and
 * test/fixtures.test.ts parses with these schemas. A name on one side only fails that test.
 */
import type { z } from 'zod';
import { applyReport, rollbackRecord } from './apply';
import { benchOutcome, benchProgress, benchRun, benchRunList } from './bench';
import { collectorWindow, liveEnd, liveWindow } from './live';
import { recordLimits, recordSummary } from './record';
import { planRun, planRunList, runReport } from './run';
import { apiError, machine, probe, processList, recording, recordingList } from './serve';

export const RUST_MESSAGES = {
  /** GET /api/probe; the binding's probe(). */
  probe,
  /** GET /api/topology; the binding's topology(). */
  machine,
  /** GET /api/processes. */
  processList,
  /** POST /api/recordings, GET /api/recordings/:id, POST …/stop. */
  recording,
  /** GET /api/recordings. */
  recordingList,
  /** WebSocket `window`. */
  liveWindow,
  /** WebSocket `end`. */
  liveEnd,
  /** The binding's onWindow argument (core LiveWindow). */
  collectorWindow,
  /** A finished recording's summary (in recordings and `end`; the binding's record() has the same fields). */
  recordSummary,
  /** POST /api/apply and /api/rollback; the binding's apply(). */
  applyReport,
  /** An apply's `rollback`, sent back to POST /api/rollback. */
  rollbackRecord,
  /** Every API error answer. */
  apiError,
  /** The binding's recordLimits() (core RECORD_LIMITS). */
  recordLimits,
  /** POST /api/bench, GET /api/bench/:id, POST …/stop. */
  benchRun,
  /** GET /api/bench. */
  benchRunList,
  /** The binding's bench() onProgress argument; a run's `progress`. */
  benchProgress,
  /** The binding's bench() result; a finished run's `result`. */
  benchOutcome,
  /** POST /api/runs, GET /api/runs/:id. */
  planRun,
  /** GET /api/runs. */
  planRunList,
  /** `numascope run --report`; a run's `report`; the binding's runPlan(). */
  runReport,
} as const satisfies Record<string, z.ZodType>;

export type RustMessageName = keyof typeof RUST_MESSAGES;
