/**
 * The desktop app's IPC payloads about recordings and plans (apps/desktop: the preload's
 * `window.numascopeDesktop`, validated in the main process), and the parts of that API the web
 * app calls. The desktop app answers the same shapes as `numascope serve`, less serve's URLs.
 */
import { z } from 'zod';
import { benchRun } from './bench';
import type { BenchRequest } from './bench';
import { count, recordingId } from './common';
import { COMMAND_NAMES } from './commands';
import type { DesktopCommand } from './commands';
import { liveMessage } from './live';
import type { LiveMessage } from './live';
import type { ApplyOptions, ApplyReport, RollbackRecord } from './apply';
import type { RunOptions, RunReport } from './run';
import { loopRecord } from './loop';
import type { LoopRecord } from './loop';
import { startRecordingRequest } from './record';
import type { StartRecordingRequest } from './record';
import { recordingFields } from './serve';
import type { Machine, ProcessInfo, Probe } from './serve';

/** `startRecording(opts)`: the same options as `POST /api/recordings`. */
export const startRecordingOptions = startRecordingRequest;
export type StartRecordingOptions = StartRecordingRequest;

/** A recording as the desktop app reports it: serve's, without `latest` and `urls`. */
export const desktopRecording = z.strictObject(recordingFields);
export type DesktopRecording = z.infer<typeof desktopRecording>;

/** A benchmark run as the desktop app reports it: serve's `benchRun`, without `urls`. */
export const desktopBenchRun = benchRun.omit({ urls: true });
export type DesktopBenchRun = z.infer<typeof desktopBenchRun>;

/** main → renderer on `numascope:live`: a live message of recording `id`. */
export const liveEnvelope = z.strictObject({ id: recordingId, message: liveMessage });
export type LiveEnvelope = z.infer<typeof liveEnvelope>;

/** `saveLoop`'s answer: what serve's `PUT /api/recordings/:id/loop` answers. */
export const savedLoop = z.strictObject({ recording: recordingId, bytes: count });
export type SavedLoop = z.infer<typeof savedLoop>;

/** `latestLoop`'s answer: the loop saved last, checked (serve's `GET /api/loop` leaves that to the app). */
export const desktopLatestLoop = z.strictObject({ recording: recordingId, loop: loopRecord });
export type DesktopLatestLoop = z.infer<typeof desktopLatestLoop>;

/** A trace file the desktop app read from disk. */
export const openedTrace = z.strictObject({
  name: z.string(),
  path: z.string(),
  bytes: z.instanceof(Uint8Array, { message: 'expected a Uint8Array' }),
});
export type OpenedTrace = z.infer<typeof openedTrace>;

/** main → renderer on `numascope:command`; `open-path` names an absolute path. */
export const desktopCommand = z.discriminatedUnion('command', [
  z.strictObject({ command: z.enum(COMMAND_NAMES) }),
  z.strictObject({
    command: z.literal('open-path'),
    path: z
      .string()
      .min(1)
      .max(4096)
      .refine((s) => s.startsWith('/') && !s.includes('\0'), 'an absolute path'),
  }),
]);
// The schema and the plain type of ./commands.ts are the same, both ways.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _commandTypesAgree: Same<z.infer<typeof desktopCommand>, DesktopCommand> = true;
void _commandTypesAgree;

/**
 * The part of the desktop API (`window.numascopeDesktop`, apps/desktop/src/api.ts) the Live screen
 * and the apply panel use (apps/web/src/ui/live/desktop.ts).
 */
export interface DesktopLiveBridge {
  /** Always true: lets the renderer tell the desktop API from anything else on window. */
  readonly isDesktop: true;
  probe(): Promise<Probe>;
  topology(): Promise<Machine>;
  listProcesses(): Promise<ProcessInfo[]>;
  /** Starts a recording; its windows and its end arrive through onLiveWindow(id). */
  startRecording(opts: StartRecordingOptions): Promise<DesktopRecording>;
  recordingStatus(id: string): Promise<DesktopRecording>;
  /** Asks the recording to stop early; the trace is still written (status follows through onLiveWindow). */
  stopRecording(id: string): Promise<DesktopRecording>;
  /** The finished recording's trace file. */
  recordingTrace(id: string): Promise<Uint8Array>;
  /** Subscribes to a recording's live windows and its end message; returns the unsubscribe function. */
  onLiveWindow(id: string, cb: (msg: LiveMessage) => void): () => void;
  apply(plan: Record<string, unknown>, opts: ApplyOptions): Promise<ApplyReport>;
  rollback(record: RollbackRecord): Promise<ApplyReport>;
  /**
   * Launches a program with the plan (`numascope run --plan`, the binding's runPlan()): resolves
   * when the program exits, to the report; with `dryRun`, at once to what is planned.
   */
  runPlan(plan: Record<string, unknown>, opts: RunOptions): Promise<RunReport>;
  /**
   * Keeps the live loop's record of `recording` (as serve's `PUT /api/recordings/:id/loop`), as a
   * JSON file under the app's userData: validated with `loopRecord`, at most 4 MiB, the 16 newest kept.
   */
  saveLoop(recording: string, record: LoopRecord): Promise<SavedLoop>;
  /** Recording `recording`'s kept loop, or null when none was kept; a damaged one is refused. */
  loadLoop(recording: string): Promise<LoopRecord | null>;
  /** The loop kept last, or null before any. */
  latestLoop(): Promise<DesktopLatestLoop | null>;
}

/** The part of the desktop API the Machine view uses: `numascope bench` through the napi binding, polled like serve's `/api/bench`. */
export interface DesktopBenchBridge {
  readonly isDesktop: true;
  /** Starts a run (one at a time; a second is refused while one runs). */
  startBench(req: BenchRequest): Promise<DesktopBenchRun>;
  benchStatus(id: string): Promise<DesktopBenchRun>;
  /** Ends the run after its current repetition; it finishes with what was measured (partial). */
  stopBench(id: string): Promise<DesktopBenchRun>;
}

/** The part of the desktop API the web app's shell integration uses (apps/web/src/ui/live/desktop-shell.ts). */
export interface DesktopShellBridge {
  readonly isDesktop: true;
  /** Native open dialog; null when cancelled. Adds the file to the recent files. */
  openTrace(): Promise<OpenedTrace | null>;
  /**
   * Opens a recent file, or one the main process was handed (command line, desktop file
   * association, macOS open-file) and announced with an `open-path` command; any other path is
   * refused.
   */
  openRecent(path: string): Promise<OpenedTrace>;
  /** Native save dialog; the saved path, or null when cancelled. */
  saveTrace(bytes: Uint8Array, suggestedName: string): Promise<string | null>;
  /** Subscribes to the main process's commands; returns the unsubscribe function. */
  onCommand(cb: (cmd: DesktopCommand) => void): () => void;
}
