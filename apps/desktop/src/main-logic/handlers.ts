/**
 * The main process's IPC handlers as plain functions over injected dependencies, and `dispatch`,
 * which every ipcMain.handle goes through: validate the request → run the handler → validate the
 * response. src/main.ts only wires channels to dispatch; tests call dispatch directly.
 */
import { liveEnvelope } from '@numascope/protocol';
import path from 'node:path';
import type { ApplyOptions, BenchRequest, LiveEnvelope, LiveMessage, LoopRecord, RollbackRecord, RunOptions, StartRecordingOptions } from '@numascope/protocol';
import type { InvokeMethod, NumascopeDesktopApi } from '../api';
import { methodOf, parseRequest, parseResponse } from '../ipc-schema';
import type { CollectorAddon } from './addon';
import { applyPlan, runPlan } from './apply';
import { BenchManager } from './bench';
import type { RollbackRunner } from './apply';
import { FileService } from './files';
import type { DialogProvider } from './files';
import { LoopStore } from './loops';
import { listProcesses } from './processes';
import type { ProcessListerOptions } from './processes';
import { RecordingManager } from './recordings';

export interface MainDeps {
  addon: CollectorAddon;
  dialogs: DialogProvider;
  /** The recent-files JSON file. */
  recentFilesPath: string;
  /** Directory for recordings' trace files. */
  workDir: string;
  /** Directory for the live loop's records (main.ts: userData/loops); default: `loops` beside the recent-files file. */
  loopDir?: string;
  rollback: RollbackRunner;
  openExternal: (url: string) => Promise<void>;
  /** Sends a live message to the renderer(s) (main.ts: webContents.send(LIVE_CHANNEL, …)). */
  sendLive: (envelope: LiveEnvelope) => void;
  processes?: ProcessListerOptions;
  windowMs?: number;
}

type Handlers = { [M in InvokeMethod]: (...args: never[]) => ReturnType<NumascopeDesktopApi[M]> };

export interface MainLogic {
  handlers: Handlers;
  recordings: RecordingManager;
  bench: BenchManager;
  files: FileService;
  loops: LoopStore;
  /** Validated call of one channel; what ipcMain.handle(channel, (_e, ...args) => dispatch(channel, args)) runs. */
  dispatch(channel: string, args: unknown): Promise<unknown>;
}

export function createMainLogic(deps: MainDeps): MainLogic {
  const recordings = new RecordingManager({
    addon: deps.addon,
    workDir: deps.workDir,
    windowMs: deps.windowMs,
    // Live messages are validated like responses before they leave the main process.
    emit: (id: string, message: LiveMessage) => deps.sendLive(liveEnvelope.parse({ id, message })),
  });
  const files = new FileService(deps.dialogs, deps.recentFilesPath);
  const bench = new BenchManager(deps.addon);
  const loops = new LoopStore(deps.loopDir ?? path.join(path.dirname(deps.recentFilesPath), 'loops'), {
    knows: (id) => recordings.has(id),
  });
  const handlers: Handlers = {
    probe: () => deps.addon.probe(),
    topology: () => deps.addon.topology(),
    listProcesses: () => listProcesses(deps.processes),
    startRecording: (opts: StartRecordingOptions) => recordings.start(opts),
    recordingStatus: async (id: string) => recordings.status(id),
    stopRecording: async (id: string) => recordings.stop(id),
    recordingTrace: (id: string) => recordings.trace(id),
    apply: (plan: Record<string, unknown>, opts: ApplyOptions) => applyPlan(deps.addon, plan, opts),
    runPlan: (plan: Record<string, unknown>, opts: RunOptions) => runPlan(deps.addon, plan, opts),
    rollback: (record: RollbackRecord) => deps.rollback(record),
    saveLoop: (recording: string, record: LoopRecord) => loops.save(recording, record),
    loadLoop: (recording: string) => loops.load(recording),
    latestLoop: () => loops.latest(),
    openTrace: () => files.open(),
    openRecent: (p: string) => files.openRecent(p),
    saveTrace: (bytes: Uint8Array, name: string) => files.save(bytes, name),
    recentFiles: () => files.recent(),
    openExternal: (url: string) => deps.openExternal(url),
    startBench: async (req: BenchRequest) => bench.start(req),
    benchStatus: async (id: string) => bench.status(id),
    stopBench: async (id: string) => bench.stop(id),
  };
  return {
    handlers,
    recordings,
    bench,
    files,
    loops,
    async dispatch(channel, args) {
      const method = methodOf(channel);
      const parsed = parseRequest(channel, args);
      const fn = handlers[method] as (...a: unknown[]) => Promise<unknown>;
      return parseResponse(channel, await fn(...parsed));
    },
  };
}
