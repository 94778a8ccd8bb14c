// Every IPC request is validated before a handler runs; errors name the channel and the field.
import { describe, expect, it, vi } from 'vitest';
import { RECORD_LIMITS } from '@numascope/protocol';
import { rustExample } from '@numascope/protocol/fixtures';
import { CHANNELS, COMMAND_CHANNEL, COMMAND_NAMES, INVOKE_CHANNELS } from '../src/channels';
import { IpcValidationError, parseCommand, parseRequest, parseResponse, REQUESTS, RESPONSES } from '../src/ipc-schema';
import { createMainLogic } from '../src/main-logic/handlers';
import type { CollectorAddon } from '../src/main-logic/addon';

function fakeLogic() {
  const addon = {
    probe: vi.fn(async () => rustExample('probe')),
    topology: vi.fn(async () => rustExample('machine')),
    startRecording: vi.fn(),
    apply: vi.fn(async () => rustExample('applyReport')),
    runPlan: vi.fn(async () => rustExample('runReport', 1)),
    startBench: vi.fn(),
  } satisfies Record<keyof CollectorAddon, unknown>;
  const openExternal = vi.fn(async () => {});
  const logic = createMainLogic({
    addon: addon as unknown as CollectorAddon,
    dialogs: { showOpen: async () => null, showSave: async () => null },
    recentFilesPath: '/nonexistent/recent.json',
    workDir: '/nonexistent/work',
    rollback: vi.fn(),
    openExternal,
    sendLive: () => {},
  });
  return { logic, addon, openExternal };
}

const bad = async (channel: string, args: unknown, field: RegExp) => {
  const { logic, addon } = fakeLogic();
  const err = await logic.dispatch(channel, args).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(IpcValidationError);
  expect((err as Error).message).toMatch(field);
  // Nothing reached the collector.
  expect(addon.startRecording).not.toHaveBeenCalled();
  expect(addon.apply).not.toHaveBeenCalled();
  expect(addon.runPlan).not.toHaveBeenCalled();
};

describe('IPC request validation', () => {
  it('has a request and a response schema for every channel', () => {
    expect(Object.keys(REQUESTS).sort()).toEqual(Object.keys(CHANNELS).sort());
    expect(Object.keys(RESPONSES).sort()).toEqual(Object.keys(CHANNELS).sort());
    expect(new Set(INVOKE_CHANNELS).size).toBe(INVOKE_CHANNELS.length);
  });

  it('refuses unknown channels', async () => {
    await bad('numascope:exec', [], /numascope:exec: unknown IPC channel/);
    await bad('probe', [], /unknown IPC channel/);
    expect(() => parseRequest('__proto__', [])).toThrow(/unknown IPC channel/);
  });

  it('refuses extra arguments and non-list arguments', async () => {
    await bad(CHANNELS.probe, [1], /takes 0 argument\(s\), got 1/);
    await bad(CHANNELS.stopRecording, 'r1', /not a list/);
  });

  it('startRecording: wrong types, missing target, both targets, extra fields', async () => {
    await bad(CHANNELS.startRecording, [], /numascope:start-recording: opts: missing/);
    await bad(CHANNELS.startRecording, [{ pid: 'self' }], /opts\.pid: .*number/);
    await bad(CHANNELS.startRecording, [{ pid: -3 }], /opts\.pid/);
    await bad(CHANNELS.startRecording, [{ pid: 1.5 }], /opts\.pid/);
    await bad(CHANNELS.startRecording, [{}], /opts\.pid: give exactly one of pid and command/);
    await bad(CHANNELS.startRecording, [{ pid: 10, command: ['ls'] }], /exactly one/);
    await bad(CHANNELS.startRecording, [{ command: 'ls -l' }], /opts\.command: /);
    await bad(CHANNELS.startRecording, [{ command: ['ls', 3] }], /opts\.command\[1\]: /);
    await bad(CHANNELS.startRecording, [{ command: [] }], /opts\.command: /);
    await bad(CHANNELS.startRecording, [{ pid: 10, output: '/etc/passwd' }], /opts: unexpected field\(s\) "output"/);
    await bad(CHANNELS.startRecording, [{ pid: 10, durationS: -1 }], /opts\.durationS/);
    // The collector's limits (RECORD_LIMITS, read from its sources by packages/protocol's tests).
    await bad(CHANNELS.startRecording, [{ pid: 10, durationS: RECORD_LIMITS.maxDurationS + 1 }], /opts\.durationS: .*2592000/);
    await bad(CHANNELS.startRecording, [{ pid: 10, intervalMs: 0 }], /opts\.intervalMs/);
    await bad(CHANNELS.startRecording, [{ pid: 10, intervalMs: RECORD_LIMITS.intervalMs.max + 1 }], /opts\.intervalMs/);
    await bad(CHANNELS.startRecording, [{ pid: 10, faultRateHz: 99 }], /opts\.faultRateHz/);
    await bad(CHANNELS.startRecording, [{ pid: 10, faultPeriod: 1, faultRateHz: 1000 }], /opts\.faultPeriod: give faultPeriod or faultRateHz, not both/);
    await bad(CHANNELS.startRecording, [{ pid: 10, faultEvent: 'hardware' }], /opts\.faultEvent/);
    await bad(CHANNELS.startRecording, [{ pid: 10, killOnStop: 'yes' }], /opts\.killOnStop/);
    await bad(CHANNELS.startRecording, [{ pid: 10, numaBalancing: 'off' }], /opts\.numaBalancing/);
  });

  it('recording ids are short tokens', async () => {
    await bad(CHANNELS.stopRecording, [42], /numascope:stop-recording: id: /);
    await bad(CHANNELS.recordingTrace, ['../../etc/passwd'], /id: .*recording id/);
    await bad(CHANNELS.recordingStatus, [], /id: missing/);
  });

  it('apply: plan must be an object, opts strict', async () => {
    await bad(CHANNELS.apply, ['{"format":"numascope-plan"}', { pid: 1 }], /numascope:apply: plan: /);
    await bad(CHANNELS.apply, [{}, {}], /opts\.pid: missing|opts\.pid: /);
    await bad(CHANNELS.apply, [{}, { pid: 1, dryRun: 'yes' }], /opts\.dryRun: .*boolean/);
    await bad(CHANNELS.apply, [{}, { pid: 1, budgetMs: 0 }], /opts\.budgetMs/);
    await bad(CHANNELS.apply, [{}, { pid: 1, force: true }], /opts: unexpected field\(s\) "force"/);
    await bad(CHANNELS.apply, [{}, { pid: 1, setSystemWeights: 'yes' }], /opts\.setSystemWeights: .*boolean/);
    await bad(CHANNELS.rollback, [null], /numascope:rollback: record: /);
  });

  it('files and links', async () => {
    await bad(CHANNELS.saveTrace, ['not bytes', 'a.numascope'], /bytes: expected a Uint8Array/);
    await bad(CHANNELS.saveTrace, [new Uint8Array(1), '../x.numascope'], /suggestedName: a file name/);
    await bad(CHANNELS.saveTrace, [new Uint8Array(1)], /suggestedName: missing/);
    await bad(CHANNELS.openRecent, [7], /path: /);
    await bad(CHANNELS.openExternal, ['file:///etc/passwd'], /url: an http\(s\) URL/);
    await bad(CHANNELS.openExternal, ['javascript:alert(1)'], /url: an http\(s\) URL/);
  });

  it('runPlan: plan must be an object, opts strict (argv of non-empty strings, known fallback)', async () => {
    await bad(CHANNELS.runPlan, ['{"format":"numascope-plan"}', {}], /numascope:run-plan: plan: /);
    await bad(CHANNELS.runPlan, [{}, { command: [] }], /opts\.command/);
    await bad(CHANNELS.runPlan, [{}, { command: ['./app', ''] }], /opts\.command/);
    await bad(CHANNELS.runPlan, [{}, { command: 'ls' }], /opts\.command/);
    await bad(CHANNELS.runPlan, [{}, { dryRun: 1 }], /opts\.dryRun: .*boolean/);
    await bad(CHANNELS.runPlan, [{}, { weightsFallback: 'maybe' }], /opts\.weightsFallback/);
    await bad(CHANNELS.runPlan, [{}, { setSystemWeights: 'yes' }], /opts\.setSystemWeights: .*boolean/);
    await bad(CHANNELS.runPlan, [{}, { setWeights: true }], /opts: unexpected field\(s\) "setWeights"/);
  });

  it('runPlan reaches the binding and its report is checked on the way back', async () => {
    const { logic, addon } = fakeLogic();
    const plan = { target: { pid: 1, command: ['./app'] }, objects: [{}] };
    await expect(logic.dispatch(CHANNELS.runPlan, [plan, { dryRun: true, weightsFallback: 'interleave' }])).resolves.toEqual(rustExample('runReport', 1));
    expect(addon.runPlan).toHaveBeenCalledWith(JSON.stringify(plan), { dryRun: true, weightsFallback: 'interleave' });
    // The system-wide weights for the run reach the binding only when asked for.
    await logic.dispatch(CHANNELS.runPlan, [plan, { dryRun: true, setSystemWeights: true }]);
    expect(addon.runPlan).toHaveBeenLastCalledWith(JSON.stringify(plan), { dryRun: true, setSystemWeights: true });
    addon.runPlan.mockResolvedValueOnce({ ...(rustExample('runReport', 1) as object), extra: 1 } as never);
    await expect(logic.dispatch(CHANNELS.runPlan, [plan, {}])).rejects.toThrow(/extra/);
  });

  it('valid requests reach their handler', async () => {
    const { logic, addon, openExternal } = fakeLogic();
    await expect(logic.dispatch(CHANNELS.probe, [])).resolves.toEqual(rustExample('probe'));
    await logic.dispatch(CHANNELS.openExternal, ['https://example.org/numa']);
    expect(openExternal).toHaveBeenCalledWith('https://example.org/numa');
    await logic.dispatch(CHANNELS.apply, [{ target: { pid: 1 } }, { pid: 1, dryRun: true }]);
    expect(addon.apply).toHaveBeenCalledWith(JSON.stringify({ target: { pid: 1 } }), { pid: 1, dryRun: true });
    // The system-wide weights reach the binding only when asked for.
    await logic.dispatch(CHANNELS.apply, [{ target: { pid: 1 } }, { pid: 1, setSystemWeights: true }]);
    expect(addon.apply).toHaveBeenLastCalledWith(JSON.stringify({ target: { pid: 1 } }), { pid: 1, setSystemWeights: true });
  });

  it('startRecording hands the record options to the binding, within the limits', async () => {
    const { logic, addon } = fakeLogic();
    addon.startRecording.mockReturnValue({ result: new Promise(() => {}), stop: () => {} });
    const opts = { command: ['./app'], durationS: RECORD_LIMITS.maxDurationS, intervalMs: 1, faultRateHz: 500, faultEvent: 'software', killOnStop: true, numaBalancing: 'on', allocSites: false };
    const rec = await logic.dispatch(CHANNELS.startRecording, [opts]);
    expect(rec).toMatchObject({ status: 'running', target: { command: ['./app'] }, durationS: RECORD_LIMITS.maxDurationS, summary: null });
    expect(addon.startRecording).toHaveBeenCalledWith(
      expect.objectContaining({
        command: ['./app'],
        durationMs: RECORD_LIMITS.maxDurationS * 1000,
        intervalMs: 1,
        faultRateHz: 500,
        faultEvent: 'software',
        killOnStop: true,
        numaBalancing: 'on',
        allocSites: false,
      }),
    );
  });

  it('validates responses too', async () => {
    const machine = rustExample('machine');
    expect(() => parseResponse(CHANNELS.topology, { ...machine, nodes: [{ ...machine.nodes[0], id: 'zero' }] })).toThrow(
      /numascope:topology: response\.nodes\[0\]\.id: /,
    );
    // A field the collector does not send (or renamed) is refused too: the schemas are strict.
    expect(() => parseResponse(CHANNELS.probe, { ...rustExample('probe'), cpus: 4 })).toThrow(/numascope:probe: response: unexpected field\(s\) "cpus"/);
    const { logic, addon } = fakeLogic();
    addon.probe.mockResolvedValueOnce({ nodes: 'many' } as never);
    await expect(logic.dispatch(CHANNELS.probe, [])).rejects.toThrow(/numascope:probe: response\./);
  });

  it('commands to the renderer are validated too: known names, an absolute open-path, nothing extra', () => {
    for (const c of COMMAND_NAMES) expect(parseCommand({ command: c })).toEqual({ command: c });
    expect(parseCommand({ command: 'open-path', path: '/t/a.numascope' })).toEqual({ command: 'open-path', path: '/t/a.numascope' });
    const cases: [unknown, RegExp][] = [
      [{ command: 'shell', arg: 'rm' }, /^numascope:command: command\.command: /],
      [{ command: 'open', path: '/x' }, /^numascope:command: command: unexpected field\(s\) "path"/],
      [{ command: 'open-path' }, /^numascope:command: command\.path: /],
      [{ command: 'open-path', path: '../etc/passwd' }, /^numascope:command: command\.path: an absolute path/],
      [{ command: 'open-path', path: 7 }, /^numascope:command: command\.path: /],
      ['open', /^numascope:command: command: /],
      [null, /^numascope:command: command: /],
    ];
    for (const [v, re] of cases) {
      let err: unknown;
      try {
        parseCommand(v);
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(v)).toBeInstanceOf(IpcValidationError);
      expect((err as IpcValidationError).channel).toBe(COMMAND_CHANNEL);
      expect((err as Error).message).toMatch(re);
    }
  });
});
