/**
 * Desktop mode: inside the Electron app the preload exposes `window.numascopeDesktop`
 * (apps/desktop/src/api.ts, NumascopeDesktopApi). DesktopLiveApi implements the same client
 * interface as the `numascope serve` client (LiveClient), so the Live screen and the apply panel
 * work unchanged. apps/web and apps/desktop do not import each other: the shapes exchanged, and
 * the part of the desktop API used here (DesktopLiveBridge), are @numascope/protocol's;
 * apps/desktop/test/web-contract.test.ts checks at compile time that the desktop API satisfies it.
 */
import { parseLiveMessageValue, ProtocolError } from '@numascope/protocol';
import type {
  ApplyOptions,
  ApplyReport,
  ApplyRequest,
  BenchRequest,
  BenchRun,
  DesktopBenchBridge,
  DesktopBenchRun,
  DesktopLiveBridge,
  DesktopRecording,
  LoopRecord,
  Machine,
  ProcessInfo,
  Probe,
  Recording,
  RollbackRecord,
  RunOptions,
  RunReport,
  RunRequest,
  StartRecordingRequest,
} from '@numascope/protocol';
import { ApiError } from './client';
import type { BenchClient, LiveClient, WatchHandlers } from './client';

/** The part of NumascopeDesktopApi the Live screen uses. */
export type DesktopBridge = DesktopLiveBridge;

/** The desktop bridge when the page runs inside the Electron app, else null. */
export function desktopBridge(): DesktopBridge | null {
  if (typeof window === 'undefined') return null;
  const b = (window as unknown as { numascopeDesktop?: DesktopBridge }).numascopeDesktop;
  return b && b.isDesktop === true ? b : null;
}

/** IPC errors arrive as Error("Error invoking remote method 'numascope:…': Error: …"); keep the last part. */
function wrap(e: unknown): ApiError {
  const raw = e instanceof Error ? e.message : String(e);
  const message = raw.replace(/^Error invoking remote method '[^']*': (?:\w*Error: )?/, '');
  const code = /IpcValidationError/.test(raw) || /^numascope:[a-z-]+: /.test(message) ? 'invalid-request' : 'desktop';
  return new ApiError('api', null, code, message);
}

async function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw wrap(e);
  }
}

const withUrls = (r: DesktopRecording): Recording => ({ ...r, latest: null, urls: { status: '', stop: '', trace: '', live: '' } });

export class DesktopLiveApi implements LiveClient {
  constructor(private readonly bridge: DesktopBridge) {}

  probe(): Promise<Probe> {
    return call(() => this.bridge.probe());
  }
  topology(): Promise<Machine> {
    return call(() => this.bridge.topology());
  }
  processes(): Promise<ProcessInfo[]> {
    return call(() => this.bridge.listProcesses());
  }
  async start(req: StartRecordingRequest): Promise<Recording> {
    // Only the fields given: the main process refuses unknown ones.
    const opts = Object.fromEntries(Object.entries(req).filter(([, v]) => v !== undefined)) as StartRecordingRequest;
    return withUrls(await call(() => this.bridge.startRecording(opts)));
  }
  async status(id: string): Promise<Recording> {
    return withUrls(await call(() => this.bridge.recordingStatus(id)));
  }
  async stop(id: string): Promise<Recording> {
    return withUrls(await call(() => this.bridge.stopRecording(id)));
  }
  apply(req: ApplyRequest): Promise<ApplyReport> {
    const opts: ApplyOptions = { pid: req.pid };
    if (req.dryRun) opts.dryRun = true;
    if (req.budgetMs !== undefined) opts.budgetMs = req.budgetMs;
    // Global weights: sent only when the user ticked the box (the binding writes them and keeps
    // the previous ones in the rollback record).
    if (req.setSystemWeights) opts.setSystemWeights = true;
    return call(() => this.bridge.apply(req.plan, opts));
  }
  rollback(record: RollbackRecord): Promise<ApplyReport> {
    return call(() => this.bridge.rollback(record));
  }
  /** The binding's runPlan(): resolves when the program exits (the pid is in the report). */
  runPlan(req: RunRequest): Promise<RunReport> {
    const opts: RunOptions = {};
    if (req.command) opts.command = req.command;
    if (req.dryRun) opts.dryRun = true;
    if (req.anyProgram) opts.anyProgram = true;
    if (req.weightsFallback) opts.weightsFallback = req.weightsFallback;
    // Global weights for the run, restored when it exits: only when the user ticked the box.
    if (req.setSystemWeights) opts.setSystemWeights = true;
    return call(() => this.bridge.runPlan(req.plan, opts));
  }
  /** The desktop app keeps the loop's records under its userData (apps/desktop main-logic/loops.ts). */
  readonly loopKeeper = 'the desktop app';
  async saveLoop(recording: string, record: LoopRecord): Promise<void> {
    await call(() => this.bridge.saveLoop(recording, record));
  }
  async loadLoop(recording: string): Promise<unknown> {
    return call(() => this.bridge.loadLoop(recording));
  }
  async latestLoop(): Promise<{ recording: string; loop: unknown } | null> {
    return call(() => this.bridge.latestLoop());
  }
  async trace(id: string): Promise<ArrayBuffer> {
    const bytes = await call(() => this.bridge.recordingTrace(id));
    return bytes.slice().buffer as ArrayBuffer;
  }

  watch(id: string, h: WatchHandlers): () => void {
    let done = false;
    let off: () => void = () => {};
    const finish = () => {
      done = true;
      off();
    };
    off = this.bridge.onLiveWindow(id, (raw) => {
      if (done) return;
      let msg;
      try {
        // The main process validated it; the renderer checks it again like a WebSocket message.
        msg = parseLiveMessageValue(raw);
      } catch (err) {
        finish();
        h.onLost(`The desktop app sent something unexpected (${err instanceof ProtocolError ? err.message : String(err)}).`);
        return;
      }
      if (msg.type === 'window') h.onWindow(msg);
      else {
        finish();
        h.onEnd(msg);
      }
    });
    // A recording that ended before this subscription (a command that failed at once) sent its
    // end to nobody: read the status once and settle from it.
    void this.bridge.recordingStatus(id).then(
      (r) => {
        if (done || r.status === 'running') return;
        finish();
        h.onEnd({ type: 'end', recording: id, status: r.status, summary: r.summary, error: r.error });
      },
      () => {},
    );
    return () => {
      if (!done) finish();
    };
  }
}

/** The desktop bridge's benchmark part, when the page runs inside an Electron app that has it. */
export function desktopBenchBridge(): DesktopBenchBridge | null {
  const b = desktopBridge() as (DesktopBridge & Partial<DesktopBenchBridge>) | null;
  return b && typeof b.startBench === 'function' && typeof b.benchStatus === 'function' && typeof b.stopBench === 'function' ? (b as DesktopBenchBridge) : null;
}

const benchWithUrls = (r: DesktopBenchRun): BenchRun => ({ ...r, urls: { status: '', stop: '' } });

/** `numascope bench` through the desktop app's napi binding, as the Machine view's BenchClient. */
export class DesktopBenchApi implements BenchClient {
  constructor(private readonly bridge: DesktopBenchBridge) {}
  async startBench(req: BenchRequest): Promise<BenchRun> {
    return benchWithUrls(await call(() => this.bridge.startBench(req)));
  }
  async benchStatus(id: string): Promise<BenchRun> {
    return benchWithUrls(await call(() => this.bridge.benchStatus(id)));
  }
  async stopBench(id: string): Promise<BenchRun> {
    return benchWithUrls(await call(() => this.bridge.stopBench(id)));
  }
}
