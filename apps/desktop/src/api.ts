/**
 * The typed API the preload exposes to the renderer as `window.numascopeDesktop` (and the shapes
 * it exchanges). Shared by src/preload.ts, the main-process handlers and the web app's desktop
 * adapter. Every request and response crosses IPC and is validated by src/ipc-schema.ts.
 * Types only (no runtime code): the renderer bundles it as types.
 *
 * The live-protocol shapes (live windows, end messages, recordings, processes, probe, apply
 * reports) have one source of truth: the web app's `numascope serve` protocol,
 * apps/web/src/live/protocol.ts and apply.ts. The desktop API sends the same messages; the types
 * below only narrow what the napi binding always fills in.
 */
import type {
  ApiErrorBody,
  LiveEnd as ProtocolLiveEnd,
  LiveWindow,
  Probe as ProtocolProbe,
  ProcessInfo,
  Recording as ProtocolRecording,
  RecordSummary as ProtocolRecordSummary,
} from '../../web/src/live/protocol';
import type { ApplyReport, RollbackRecord } from '../../web/src/live/apply';

export type { LiveThread, LiveWindow, NodeCount, ProcessInfo, RecordingStatus } from '../../web/src/live/protocol';

export type ErrorBody = ApiErrorBody;

/** The napi `record()` summary: serve's RecordSummary with every field present, plus `damon`. */
export type RecordSummary = Required<Omit<ProtocolRecordSummary, 'exitCode'>> & Pick<ProtocolRecordSummary, 'exitCode'> & { damon: string };

/** The last message of a recording's live stream (serve's, with the napi summary). */
export interface LiveEnd extends Omit<ProtocolLiveEnd, 'summary'> {
  summary: RecordSummary | null;
}

export type LiveMessage = LiveWindow | LiveEnd;

export interface StartRecordingOptions {
  /** Attach to this running process … */
  pid?: number;
  /** … or launch this argv (exactly one of the two). */
  command?: string[];
  /** Stop after this many seconds (default: when the process exits or stopRecording()). */
  durationS?: number;
  /** /proc polling interval of the collector, ms. */
  intervalMs?: number;
}

/** A recording as serve reports it, without serve's URLs, with the napi summary. */
export interface Recording extends Omit<ProtocolRecording, 'urls' | 'summary'> {
  summary: RecordSummary | null;
}

/** The napi probe: serve's Probe with the fields the binding always fills in. */
export interface Probe extends ProtocolProbe {
  privileges: Record<string, unknown>;
  pmus: string[];
  nodes: number;
  sources: { id: string; available: boolean; implemented: boolean; reason: string }[];
}

/** The trace manifest's `machine` object. */
export type Topology = { nodes: { id: number; cpus: number[] }[]; [k: string]: unknown };

/**
 * The napi apply report is `numascope apply --json`'s, the same as serve's (`rollback` after a real
 * apply); RollbackRecord is opaque, sent back to rollback() as it came.
 */
export type { ApplyReport, RollbackRecord } from '../../web/src/live/apply';

export interface ApplyOptions {
  pid: number;
  dryRun?: boolean;
  budgetMs?: number;
}

/** A trace file read from disk. */
export interface OpenedTrace {
  name: string;
  path: string;
  bytes: Uint8Array;
}

export interface RecentFile {
  path: string;
  name: string;
  openedAtUnixMs: number;
}

export interface NumascopeDesktopApi {
  /** Always true: lets the renderer tell the desktop API from anything else on window. */
  readonly isDesktop: true;
  probe(): Promise<Probe>;
  topology(): Promise<Topology>;
  listProcesses(): Promise<ProcessInfo[]>;
  /** Starts a recording; its windows and its end arrive through onLiveWindow(id). */
  startRecording(opts: StartRecordingOptions): Promise<Recording>;
  recordingStatus(id: string): Promise<Recording>;
  /** Asks the recording to stop early; the trace is still written (status follows through onLiveWindow). */
  stopRecording(id: string): Promise<Recording>;
  /** The finished recording's trace file. */
  recordingTrace(id: string): Promise<Uint8Array>;
  /** Subscribes to a recording's live windows and its end message; returns the unsubscribe function. */
  onLiveWindow(id: string, cb: (msg: LiveMessage) => void): () => void;
  apply(plan: unknown, opts: ApplyOptions): Promise<ApplyReport>;
  rollback(record: RollbackRecord): Promise<ApplyReport>;
  /** Native open dialog; null when cancelled. Adds the file to the recent files. */
  openTrace(): Promise<OpenedTrace | null>;
  /**
   * Opens a file from recentFiles(), or one the main process was handed (command line, desktop
   * file association, macOS open-file) and announced with an `open-path` command; any other path
   * is refused.
   */
  openRecent(path: string): Promise<OpenedTrace>;
  /** Native save dialog; the saved path, or null when cancelled. */
  saveTrace(bytes: Uint8Array, suggestedName: string): Promise<string | null>;
  recentFiles(): Promise<RecentFile[]>;
  /** Opens an http(s) URL in the system browser. */
  openExternal(url: string): Promise<void>;
  /**
   * Subscribes to the main process's commands (menus, shortcuts, files handed to the app); returns
   * the unsubscribe function. Commands sent before the first subscriber are kept and delivered to it.
   */
  onCommand(cb: (cmd: DesktopCommand) => void): () => void;
}

/** Commands without arguments, sent by the application menu and its shortcuts. */
export type DesktopCommandName =
  | 'open'
  | 'save'
  | 'export-png'
  | 'export-svg'
  | 'export-markdown'
  | 'view-overview'
  | 'view-memory'
  | 'view-threads'
  | 'view-traffic'
  | 'view-compare'
  | 'view-decisions'
  | 'view-recommend'
  | 'view-live';

/**
 * main → renderer (COMMAND_CHANNEL). `open-path`: open this file through openRecent(path) (a recent
 * file from the menu, or a file given on the command line or by the desktop).
 */
export type DesktopCommand = { command: DesktopCommandName } | { command: 'open-path'; path: string };

/** The method names of the API that are requests over ipcRenderer.invoke (all but the two subscriptions). */
export type InvokeMethod = Exclude<keyof NumascopeDesktopApi, 'onLiveWindow' | 'onCommand' | 'isDesktop'>;
