/**
 * zod schemas of every IPC request (the argument list of each invoke channel) and response. The
 * main process validates each request before a handler sees it and each response before it
 * leaves; errors name the channel and the field (`numascope:apply: opts.pid: …`). The schemas of
 * the recording, live, probe, process and apply payloads are @numascope/protocol's (the live
 * messages main sends are checked with its `liveEnvelope`); the file and link ones are the
 * desktop app's own. Shared by main and tests; no Electron here.
 */
import {
  applyOptions,
  applyReport,
  benchRequest,
  describeIssue,
  desktopBenchRun,
  desktopCommand,
  desktopLatestLoop,
  desktopRecording,
  loopRecord,
  machine,
  openedTrace,
  probe,
  processInfo,
  recordingId,
  runOptions,
  runReport,
  savedLoop,
  startRecordingOptions,
} from '@numascope/protocol';
import type { DesktopCommand } from '@numascope/protocol/commands';
import { z } from 'zod';
import type { InvokeMethod } from './api';
import { CHANNELS, COMMAND_CHANNEL } from './channels';

// The plan and the rollback record are checked by the collector, whose errors name the field.
const plainObject = z.record(z.string(), z.unknown());
const bytes = z.instanceof(Uint8Array, { message: 'expected a Uint8Array' });
const fileName = z
  .string()
  .min(1)
  .max(255)
  .refine((s) => !/[/\\\0]/.test(s), 'a file name without / \\ or NUL');
const externalUrl = z
  .string()
  .max(8192)
  .refine((s) => {
    try {
      const u = new URL(s);
      return u.protocol === 'https:' || u.protocol === 'http:';
    } catch {
      return false;
    }
  }, 'an http(s) URL');

const benchId = z.string().regex(/^[0-9a-f]{16}$/, 'a benchmark run id (16 hex digits)');

/** Each method's parameters: [name, schema] in order (the names appear in error messages). */
export const REQUESTS = {
  probe: [],
  topology: [],
  listProcesses: [],
  startRecording: [['opts', startRecordingOptions]],
  recordingStatus: [['id', recordingId]],
  stopRecording: [['id', recordingId]],
  recordingTrace: [['id', recordingId]],
  apply: [
    ['plan', plainObject],
    ['opts', applyOptions],
  ],
  rollback: [['record', plainObject]],
  runPlan: [
    ['plan', plainObject],
    ['opts', runOptions],
  ],
  // The record is checked here field by field; the store checks its size (4 MiB) and the recording.
  saveLoop: [
    ['recording', recordingId],
    ['record', loopRecord],
  ],
  loadLoop: [['recording', recordingId]],
  latestLoop: [],
  openTrace: [],
  openRecent: [['path', z.string().min(1).max(4096)]],
  saveTrace: [
    ['bytes', bytes],
    ['suggestedName', fileName],
  ],
  recentFiles: [],
  openExternal: [['url', externalUrl]],
  startBench: [['req', benchRequest]],
  benchStatus: [['id', benchId]],
  stopBench: [['id', benchId]],
} as const satisfies Record<InvokeMethod, readonly (readonly [string, z.ZodType])[]>;

const recentFile = z.strictObject({ path: z.string(), name: z.string(), openedAtUnixMs: z.number() });

export const RESPONSES = {
  probe,
  topology: machine,
  listProcesses: z.array(processInfo),
  startRecording: desktopRecording,
  recordingStatus: desktopRecording,
  stopRecording: desktopRecording,
  recordingTrace: bytes,
  apply: applyReport,
  rollback: applyReport,
  runPlan: runReport,
  saveLoop: savedLoop,
  loadLoop: loopRecord.nullable(),
  latestLoop: desktopLatestLoop.nullable(),
  openTrace: openedTrace.nullable(),
  openRecent: openedTrace,
  saveTrace: z.string().nullable(),
  recentFiles: z.array(recentFile),
  openExternal: z.undefined(),
  startBench: desktopBenchRun,
  benchStatus: desktopBenchRun,
  stopBench: desktopBenchRun,
} as const satisfies Record<InvokeMethod, z.ZodType>;

export class IpcValidationError extends Error {
  readonly channel: string;
  readonly field: string;
  constructor(channel: string, field: string, message: string) {
    super(`${channel}: ${field ? field + ': ' : ''}${message}`);
    this.name = 'IpcValidationError';
    this.channel = channel;
    this.field = field;
  }
}

const CHANNEL_TO_METHOD = new Map<string, InvokeMethod>(
  (Object.entries(CHANNELS) as [InvokeMethod, string][]).map(([m, c]) => [c, m]),
);

/** The method behind an invoke channel; throws for any other channel. */
export function methodOf(channel: unknown): InvokeMethod {
  const m = typeof channel === 'string' ? CHANNEL_TO_METHOD.get(channel) : undefined;
  if (!m) throw new IpcValidationError(String(channel), '', 'unknown IPC channel');
  return m;
}

/** The field path and the problem, as `opts.command[1]: …` (prefixed by the channel in IpcValidationError). */
function split(prefix: string, issue: z.core.$ZodIssue): [string, string] {
  const text = describeIssue(prefix, issue);
  const at = text.indexOf(': ');
  return [text.slice(0, at), text.slice(at + 2)];
}

/** Validates a request's argument list; returns the parsed arguments. */
export function parseRequest(channel: string, args: unknown): unknown[] {
  const method = methodOf(channel);
  const params = REQUESTS[method] as readonly (readonly [string, z.ZodType])[];
  if (!Array.isArray(args)) throw new IpcValidationError(channel, '', 'the arguments are not a list');
  if (args.length > params.length)
    throw new IpcValidationError(channel, '', `takes ${params.length} argument(s), got ${args.length}`);
  return params.map(([name, schema], i) => {
    const r = schema.safeParse(args[i]);
    if (!r.success) {
      const [field, problem] = split(name, r.error.issues[0]!);
      throw new IpcValidationError(channel, field, args[i] === undefined ? 'missing' : problem);
    }
    return r.data;
  });
}

/** Validates a handler's result before it is sent back. */
export function parseResponse(channel: string, value: unknown): unknown {
  const method = methodOf(channel);
  const r = (RESPONSES[method] as z.ZodType).safeParse(value);
  if (!r.success) {
    throw new IpcValidationError(channel, ...split('response', r.error.issues[0]!));
  }
  return r.data;
}

/** Validates a command before main sends it; errors name the field like request errors do. */
export function parseCommand(value: unknown): DesktopCommand {
  const r = desktopCommand.safeParse(value);
  if (!r.success) {
    throw new IpcValidationError(COMMAND_CHANNEL, ...split('command', r.error.issues[0]!));
  }
  return r.data as DesktopCommand;
}
