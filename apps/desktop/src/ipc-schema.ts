/**
 * zod schemas of every IPC request (the argument list of each invoke channel) and response, and
 * of the live messages main sends. The main process validates each request before a handler sees
 * it and each response before it leaves; errors name the channel and the field
 * (`numascope:apply: opts.pid: …`). Shared by main and tests; no Electron here.
 */
import { z } from 'zod';
import type { DesktopCommand, InvokeMethod } from './api';
import { CHANNELS, COMMAND_CHANNEL, COMMAND_NAMES } from './channels';

const int = z.number().int();
const pid = int.min(1).max(4_194_304);
const recordingId = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'a recording id (letters, digits, - and _)');
const nodeCount = z.strictObject({ node: int, count: z.number() });

export const startRecordingOptions = z
  .strictObject({
    pid: pid.optional(),
    command: z.array(z.string().min(1).max(4096)).min(1).max(256).optional(),
    durationS: z.number().positive().max(86_400).optional(),
    intervalMs: int.min(10).max(60_000).optional(),
  })
  .superRefine((o, ctx) => {
    if ((o.pid === undefined) === (o.command === undefined))
      ctx.addIssue({ code: 'custom', path: ['pid'], message: 'give exactly one of pid and command' });
  });

export const applyOptions = z.strictObject({
  pid,
  dryRun: z.boolean().optional(),
  budgetMs: int.min(1).max(3_600_000).optional(),
});

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
  openTrace: [],
  openRecent: [['path', z.string().min(1).max(4096)]],
  saveTrace: [
    ['bytes', bytes],
    ['suggestedName', fileName],
  ],
  recentFiles: [],
  openExternal: [['url', externalUrl]],
} as const satisfies Record<InvokeMethod, readonly (readonly [string, z.ZodType])[]>;

const summary = z.looseObject({
  output: z.string(),
  sizeBytes: z.number(),
  durationUs: z.number(),
  stopReason: z.string(),
  pid: int,
  exitCode: int.nullable().optional(),
  threads: z.number(),
  pages: z.number(),
  samples: z.number(),
  lostSamples: z.number(),
  pageFaults: z.string(),
  damon: z.string(),
  warnings: z.array(z.string()),
});
const errorBody = z.strictObject({ code: z.string(), message: z.string() });
const status = z.enum(['running', 'finished', 'failed']);
export const recording = z.strictObject({
  id: recordingId,
  status,
  target: z.strictObject({ pid: pid.optional(), command: z.array(z.string()).optional() }),
  durationS: z.number().nullable(),
  startedAtUnixMs: z.number(),
  stopRequested: z.boolean(),
  summary: summary.nullable(),
  error: errorBody.nullable(),
});
const applyReport = z.looseObject({ operation: z.string(), pid: int, dryRun: z.boolean(), status: z.string() });
const openedTrace = z.strictObject({ name: z.string(), path: z.string(), bytes });
const recentFile = z.strictObject({ path: z.string(), name: z.string(), openedAtUnixMs: z.number() });

export const RESPONSES = {
  probe: z.looseObject({
    privileges: plainObject,
    pmus: z.array(z.string()),
    nodes: int,
    sources: z.array(z.looseObject({ id: z.string(), available: z.boolean(), implemented: z.boolean(), reason: z.string() })),
    capabilities: z.array(z.looseObject({ metric: z.string(), status: z.string(), reason: z.string() })),
  }),
  topology: z.looseObject({ nodes: z.array(z.looseObject({ id: int, cpus: z.array(int) })) }),
  listProcesses: z.array(
    z.strictObject({
      pid,
      name: z.string(),
      command: z.array(z.string()),
      threads: int,
      rssBytes: z.number().nullable(),
      uid: int,
      own: z.boolean(),
    }),
  ),
  startRecording: recording,
  recordingStatus: recording,
  stopRecording: recording,
  recordingTrace: bytes,
  apply: applyReport,
  rollback: applyReport,
  openTrace: openedTrace.nullable(),
  openRecent: openedTrace,
  saveTrace: z.string().nullable(),
  recentFiles: z.array(recentFile),
  openExternal: z.undefined(),
} as const satisfies Record<InvokeMethod, z.ZodType>;

export const liveWindow = z.strictObject({
  type: z.literal('window'),
  recording: recordingId,
  seq: int,
  startUs: z.number(),
  endUs: z.number(),
  elapsedUs: z.number(),
  final: z.boolean(),
  pid: pid.nullable(),
  faults: z.number(),
  faultsByNode: z.array(nodeCount),
  totals: z.strictObject({
    faults: z.number(),
    faultsByNode: z.array(nodeCount),
    pages: z.number(),
    pagesByNode: z.array(nodeCount),
  }),
  threads: z.array(
    z.strictObject({ tid: int, name: z.string(), cpu: int, node: int, faults: z.number(), alive: z.boolean() }),
  ),
  threadsSeen: int,
  lostSamples: z.number(),
});
export const liveEnd = z.strictObject({
  type: z.literal('end'),
  recording: recordingId,
  status,
  summary: summary.nullable(),
  error: errorBody.nullable(),
});
export const liveEnvelope = z.strictObject({ id: recordingId, message: z.discriminatedUnion('type', [liveWindow, liveEnd]) });

/** main → renderer commands (COMMAND_CHANNEL); `open-path` names an absolute path. */
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

function issuePath(prefix: string, issue: z.core.$ZodIssue): string {
  return [prefix, ...issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : String(p)))].join('.').replace(/\.\[/g, '[');
}

function describe(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys') return `unexpected field(s) ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}`;
  return issue.message;
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
      const issue = r.error.issues[0]!;
      throw new IpcValidationError(channel, issuePath(name, issue), args[i] === undefined ? 'missing' : describe(issue));
    }
    return r.data;
  });
}

/** Validates a handler's result before it is sent back. */
export function parseResponse(channel: string, value: unknown): unknown {
  const method = methodOf(channel);
  const r = (RESPONSES[method] as z.ZodType).safeParse(value);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    throw new IpcValidationError(channel, issuePath('response', issue), describe(issue));
  }
  return r.data;
}

/** Validates a command before main sends it; errors name the field like request errors do. */
export function parseCommand(value: unknown): DesktopCommand {
  const r = desktopCommand.safeParse(value);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    throw new IpcValidationError(COMMAND_CHANNEL, issuePath('command', issue), describe(issue));
  }
  return r.data as DesktopCommand;
}
