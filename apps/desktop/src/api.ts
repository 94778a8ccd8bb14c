/**
 * The typed API the preload exposes to the renderer as `window.numascopeDesktop` (and the shapes
 * it exchanges). Shared by src/preload.ts, the main-process handlers and the web app's desktop
 * adapter. Every request and response crosses IPC and is validated by src/ipc-schema.ts.
 * No runtime code and no imports: the renderer bundles it as types only.
 */

export interface NodeCount {
  node: number;
  count: number;
}

export interface LiveThread {
  tid: number;
  name: string;
  cpu: number;
  node: number;
  faults: number;
  alive: boolean;
}

/** One per-window aggregate (same shape as `numascope serve`'s live `window` message, docs/live-api.md). */
export interface LiveWindow {
  type: 'window';
  recording: string;
  seq: number;
  startUs: number;
  endUs: number;
  elapsedUs: number;
  final: boolean;
  pid: number | null;
  faults: number;
  faultsByNode: NodeCount[];
  totals: { faults: number; faultsByNode: NodeCount[]; pages: number; pagesByNode: NodeCount[] };
  threads: LiveThread[];
  threadsSeen: number;
  lostSamples: number;
}

export type RecordingStatus = 'running' | 'finished' | 'failed';

export interface ErrorBody {
  code: string;
  message: string;
}

/** The napi `record()` summary. */
export interface RecordSummary {
  output: string;
  sizeBytes: number;
  durationUs: number;
  stopReason: string;
  pid: number;
  exitCode?: number | null;
  threads: number;
  pages: number;
  samples: number;
  lostSamples: number;
  pageFaults: string;
  damon: string;
  warnings: string[];
}

/** The last message of a recording's live stream. */
export interface LiveEnd {
  type: 'end';
  recording: string;
  status: RecordingStatus;
  summary: RecordSummary | null;
  error: ErrorBody | null;
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

export interface Recording {
  id: string;
  status: RecordingStatus;
  target: { pid?: number; command?: string[] };
  durationS: number | null;
  startedAtUnixMs: number;
  stopRequested: boolean;
  summary: RecordSummary | null;
  error: ErrorBody | null;
}

export interface ProcessInfo {
  pid: number;
  name: string;
  command: string[];
  threads: number;
  rssBytes: number | null;
  uid: number;
  own: boolean;
}

export interface Probe {
  privileges: Record<string, unknown>;
  pmus: string[];
  nodes: number;
  sources: { id: string; available: boolean; implemented: boolean; reason: string }[];
  capabilities: { metric: string; status: string; reason: string }[];
}

/** The trace manifest's `machine` object. */
export type Topology = { nodes: { id: number; cpus: number[] }[]; [k: string]: unknown };

/** The napi apply report (`numascope apply --json`); `rollback` after a real apply. */
export type ApplyReport = { operation: string; pid: number; dryRun: boolean; status: string; rollback?: RollbackRecord; [k: string]: unknown };

/** Opaque: sent back to rollback() as it came. */
export type RollbackRecord = { format?: string; pid?: number; [k: string]: unknown };

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
  /** Opens a file from recentFiles() (any other path is refused). */
  openRecent(path: string): Promise<OpenedTrace>;
  /** Native save dialog; the saved path, or null when cancelled. */
  saveTrace(bytes: Uint8Array, suggestedName: string): Promise<string | null>;
  recentFiles(): Promise<RecentFile[]>;
  /** Opens an http(s) URL in the system browser. */
  openExternal(url: string): Promise<void>;
}

/** The method names of the API that are requests over ipcRenderer.invoke (all but onLiveWindow). */
export type InvokeMethod = Exclude<keyof NumascopeDesktopApi, 'onLiveWindow' | 'isDesktop'>;
