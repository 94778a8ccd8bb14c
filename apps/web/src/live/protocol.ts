/** The `numascope serve` API's JSON (docs/live-api.md), with checked parsing of the live messages. */

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

export interface ApiErrorBody {
  code: string;
  message: string;
}

export interface RecordSummary {
  output?: string;
  sizeBytes?: number;
  durationUs?: number;
  stopReason?: string;
  pid?: number;
  exitCode?: number | null;
  threads?: number;
  pages?: number;
  samples?: number;
  lostSamples?: number;
  pageFaults?: string;
  warnings?: string[];
}

export type RecordingStatus = 'running' | 'finished' | 'failed';

export interface LiveEnd {
  type: 'end';
  recording: string;
  status: RecordingStatus;
  summary: RecordSummary | null;
  error: ApiErrorBody | null;
}

export interface Recording {
  id: string;
  status: RecordingStatus;
  target: { pid?: number; command?: string[] };
  durationS: number | null;
  startedAtUnixMs: number;
  stopRequested: boolean;
  summary: RecordSummary | null;
  error: ApiErrorBody | null;
  urls: { status: string; stop: string; trace: string; live: string };
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

export interface Capability {
  metric: string;
  status: string;
  reason: string;
}

export interface Probe {
  capabilities: Capability[];
  [k: string]: unknown;
}

export interface Topology {
  name?: string;
  nodes: Array<{ id: number; cpus?: number[]; memoryBytes?: number | null }>;
  [k: string]: unknown;
}

export class ProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProtocolError';
  }
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);

function num(o: Record<string, unknown>, k: string, where: string): number {
  const v = o[k];
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new ProtocolError(`${where}: "${k}" is not a number`);
  return v;
}

function nodeCounts(v: unknown, where: string): NodeCount[] {
  if (!Array.isArray(v)) throw new ProtocolError(`${where} is not a list`);
  return v.map((e, i) => {
    if (!isObj(e) || !isInt(e.node) || !isInt(e.count)) throw new ProtocolError(`${where}[${i}] is not {node, count}`);
    return { node: e.node, count: e.count };
  });
}

function threads(v: unknown): LiveThread[] {
  if (!Array.isArray(v)) throw new ProtocolError('window: "threads" is not a list');
  return v.map((t, i) => {
    if (!isObj(t)) throw new ProtocolError(`window: threads[${i}] is not an object`);
    const where = `window: threads[${i}]`;
    return {
      tid: num(t, 'tid', where),
      name: typeof t.name === 'string' ? t.name : '',
      cpu: isInt(t.cpu) ? t.cpu : -1,
      node: isInt(t.node) ? t.node : -1,
      faults: isInt(t.faults) ? t.faults : 0,
      alive: t.alive !== false,
    };
  });
}

/** Parses one text message of the live WebSocket. Throws ProtocolError for anything else. */
export function parseLiveMessage(text: string): LiveWindow | LiveEnd {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new ProtocolError('a live message is not JSON');
  }
  if (!isObj(v)) throw new ProtocolError('a live message is not an object');
  if (v.type === 'end') {
    const status = v.status;
    if (status !== 'running' && status !== 'finished' && status !== 'failed') throw new ProtocolError(`end: unknown status ${String(status)}`);
    const error = isObj(v.error) ? { code: String(v.error.code ?? 'unknown'), message: String(v.error.message ?? '') } : null;
    return { type: 'end', recording: String(v.recording ?? ''), status, summary: isObj(v.summary) ? (v.summary as RecordSummary) : null, error };
  }
  if (v.type !== 'window') throw new ProtocolError(`unknown live message type ${JSON.stringify(v.type)}`);
  const totals = v.totals;
  if (!isObj(totals)) throw new ProtocolError('window: "totals" is missing');
  return {
    type: 'window',
    recording: String(v.recording ?? ''),
    seq: num(v, 'seq', 'window'),
    startUs: num(v, 'startUs', 'window'),
    endUs: num(v, 'endUs', 'window'),
    elapsedUs: num(v, 'elapsedUs', 'window'),
    final: v.final === true,
    pid: isInt(v.pid) ? v.pid : null,
    faults: num(v, 'faults', 'window'),
    faultsByNode: nodeCounts(v.faultsByNode, 'window.faultsByNode'),
    totals: {
      faults: num(totals, 'faults', 'window.totals'),
      faultsByNode: nodeCounts(totals.faultsByNode, 'window.totals.faultsByNode'),
      pages: num(totals, 'pages', 'window.totals'),
      pagesByNode: nodeCounts(totals.pagesByNode, 'window.totals.pagesByNode'),
    },
    threads: threads(v.threads),
    threadsSeen: num(v, 'threadsSeen', 'window'),
    lostSamples: num(v, 'lostSamples', 'window'),
  };
}

/** `[…,"a b",…]` → a shell-like argv split: whitespace separates, quotes ('…', "…") group, backslash escapes. */
export function splitArgv(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let has = false;
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === quote) quote = null;
      else if (c === '\\' && quote === '"' && i + 1 < line.length) cur += line[++i];
      else cur += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      has = true;
    } else if (c === '\\' && i + 1 < line.length) {
      cur += line[++i];
      has = true;
    } else if (/\s/.test(c)) {
      if (has) out.push(cur);
      cur = '';
      has = false;
    } else {
      cur += c;
      has = true;
    }
  }
  if (quote) throw new ProtocolError(`unclosed ${quote} quote in the command`);
  if (has) out.push(cur);
  return out;
}
