// The live loop's records on the desktop app (issue 35 item 2): the main-process store
// (src/main-logic/loops.ts: one JSON file per recording under userData/loops, validated with
// loopRecord, at most 4 MiB, the 16 newest kept, written atomically) and its IPC channels
// (save-loop, load-loop, latest-loop), validated by the ipc schema like every other channel.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import type { LoopRecord } from '@numascope/protocol';
import { CHANNELS } from '../src/channels';
import { IpcValidationError } from '../src/ipc-schema';
import { createMainLogic } from '../src/main-logic/handlers';
import type { CollectorAddon } from '../src/main-logic/addon';
import { LoopStore, LoopStoreError, MAX_LOOP_BYTES, MAX_LOOPS } from '../src/main-logic/loops';
import { tmpdir } from './helpers';

/** A loop record as the web app's toLoopRecord writes it, right after the first recording. */
export function sampleLoop(recording: string, pid = 4242): LoopRecord {
  return {
    format: 'numascope-loop',
    version: 1,
    savedAt: '2026-12-03T18:00:00.000Z',
    nodeIds: [0, 1],
    before: { recording, pid, durationUs: 1_000_000, pagesByNode: [{ node: 0, count: 10 }], pages: 10, prediction: { kind: 'idle' } },
    recommend: { kind: 'idle' },
    dry: { kind: 'idle' },
    apply: { kind: 'idle' },
    again: { kind: 'idle' },
    after: null,
    afterCheck: { kind: 'idle' },
  };
}

function store(known: string[] = ['r1', 'r2'], over: { maxBytes?: number; keep?: number } = {}) {
  const dir = path.join(tmpdir(), 'loops');
  let t = 1_800_000_000_000;
  const s = new LoopStore(dir, { knows: (id) => known.includes(id), now: () => t, ...over });
  return { s, dir, tick: () => (t += 1000) };
}

const refusal = async (p: Promise<unknown>) => p.then(() => null, (e: unknown) => e as LoopStoreError);

describe('the desktop loop store', () => {
  it('keeps a record as one private JSON file and reads it back', async () => {
    const { s, dir } = store();
    expect(await s.latest()).toBeNull();
    expect(await s.load('r1')).toBeNull();
    const answer = await s.save('r1', sampleLoop('r1'));
    expect(answer).toEqual({ recording: 'r1', bytes: JSON.stringify(sampleLoop('r1')).length });
    expect(await s.load('r1')).toEqual(sampleLoop('r1'));
    expect(await s.latest()).toEqual({ recording: 'r1', loop: sampleLoop('r1') });
    expect(fs.readdirSync(dir)).toEqual(['r1.json']);
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    expect(fs.statSync(path.join(dir, 'r1.json')).mode & 0o777).toBe(0o600);
    // A new store on the same directory (the next start of the app) finds it.
    const again = new LoopStore(dir, { knows: () => false });
    expect(await again.latest()).toEqual({ recording: 'r1', loop: sampleLoop('r1') });
  });

  it('replaces a record saved again, which becomes the newest; the 16 newest are kept', async () => {
    const ids = Array.from({ length: MAX_LOOPS + 3 }, (_, i) => `r${i}`);
    const { s, dir } = store(ids);
    await s.save('r1', sampleLoop('r1', 1));
    await s.save('r2', sampleLoop('r2', 2));
    expect((await s.latest())?.recording).toBe('r2');
    await s.save('r1', { ...sampleLoop('r1', 1), dry: { kind: 'error', error: { code: 'x', message: 'y' } } });
    expect(await s.latest()).toMatchObject({ recording: 'r1', loop: { dry: { kind: 'error' } } });
    expect(fs.readdirSync(dir).sort()).toEqual(['r1.json', 'r2.json']);
    // Saves issued together run one after another; the oldest are removed past 16.
    await Promise.all(ids.map((id) => s.save(id, sampleLoop(id))));
    const left = await s.list();
    expect(left).toHaveLength(MAX_LOOPS);
    expect(left[0]).toBe(ids.at(-1));
    expect(left).not.toContain('r0');
    expect(left).not.toContain('r2');
    expect(fs.readdirSync(dir).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });

  it('refuses an unknown recording, a bad id, a record that does not parse, and one over 4 MiB', async () => {
    const { s, dir } = store(['r1']);
    expect(await refusal(s.save('r9', sampleLoop('r9')))).toMatchObject({ code: 'unknown-recording' });
    expect(await refusal(s.save('../x', sampleLoop('r1')))).toMatchObject({ code: 'invalid-recording-id' });
    expect(await refusal(s.load('../../etc/passwd'))).toMatchObject({ code: 'invalid-recording-id' });
    const bad = await refusal(s.save('r1', { ...sampleLoop('r1'), before: { ...sampleLoop('r1').before, pid: -3 } }));
    expect(bad).toMatchObject({ code: 'invalid-loop' });
    expect(bad!.message).toMatch(/loop\.before\.pid/);
    expect(await refusal(s.save('r1', [1, 2]))).toMatchObject({ code: 'invalid-loop' });
    const big = { ...sampleLoop('r1'), nodeIds: [0] } as LoopRecord;
    const small = new LoopStore(dir, { knows: () => true, maxBytes: 300 });
    expect(await refusal(small.save('r1', big))).toMatchObject({ code: 'too-large' });
    expect(MAX_LOOP_BYTES).toBe(4 * 1024 * 1024);
    expect(fs.existsSync(dir) ? fs.readdirSync(dir) : []).toEqual([]);
  });

  it('refuses a kept file that is damaged, edited, too big or a link, naming the field', async () => {
    const { s, dir } = store(['r1', 'r2']);
    await s.save('r1', sampleLoop('r1'));
    fs.writeFileSync(path.join(dir, 'r1.json'), '{"format":"numascope-loop",');
    expect(await refusal(s.load('r1'))).toMatchObject({ code: 'invalid-loop', message: expect.stringMatching(/not JSON \(damaged\)/) });
    expect(await refusal(s.latest())).toMatchObject({ code: 'invalid-loop' });
    fs.writeFileSync(path.join(dir, 'r1.json'), JSON.stringify({ ...sampleLoop('r1'), version: 2 }));
    expect(await refusal(s.load('r1'))).toMatchObject({ message: expect.stringMatching(/r1: loop\.version/) });
    fs.writeFileSync(path.join(dir, 'r1.json'), JSON.stringify({ ...sampleLoop('r1'), extra: 1 }));
    expect(await refusal(s.load('r1'))).toMatchObject({ message: expect.stringMatching(/unexpected field/) });
    const small = new LoopStore(dir, { knows: () => true, maxBytes: 100 });
    fs.writeFileSync(path.join(dir, 'r1.json'), JSON.stringify(sampleLoop('r1')));
    expect(await refusal(small.load('r1'))).toMatchObject({ message: expect.stringMatching(/more than 100/) });
    fs.rmSync(path.join(dir, 'r1.json'));
    fs.symlinkSync('/etc/hostname', path.join(dir, 'r1.json'));
    expect(await refusal(s.load('r1'))).toMatchObject({ code: 'invalid-loop' });
  });
});

describe('the loop channels', () => {
  function logic() {
    const dir = tmpdir();
    const l = createMainLogic({
      addon: {} as CollectorAddon,
      dialogs: { showOpen: async () => null, showSave: async () => null },
      recentFilesPath: path.join(dir, 'recent.json'),
      workDir: path.join(dir, 'work'),
      loopDir: path.join(dir, 'loops'),
      rollback: vi.fn(),
      openExternal: vi.fn(),
      sendLive: () => {},
    });
    vi.spyOn(l.recordings, 'has').mockImplementation((id) => id === 'r1-abc');
    return { l, dir };
  }
  const fails = (p: Promise<unknown>) => p.then(() => null, (e: unknown) => e as Error);

  it('saves, loads and answers the latest through dispatch, in userData/loops', async () => {
    const { l, dir } = logic();
    expect(await l.dispatch(CHANNELS.latestLoop, [])).toBeNull();
    expect(await l.dispatch(CHANNELS.loadLoop, ['r1-abc'])).toBeNull();
    const saved = await l.dispatch(CHANNELS.saveLoop, ['r1-abc', sampleLoop('r1-abc')]);
    expect(saved).toMatchObject({ recording: 'r1-abc' });
    expect(fs.readdirSync(path.join(dir, 'loops'))).toEqual(['r1-abc.json']);
    expect(await l.dispatch(CHANNELS.loadLoop, ['r1-abc'])).toEqual(sampleLoop('r1-abc'));
    expect(await l.dispatch(CHANNELS.latestLoop, [])).toEqual({ recording: 'r1-abc', loop: sampleLoop('r1-abc') });
  });

  it('validates the arguments before the store sees them, naming the field', async () => {
    const { l, dir } = logic();
    const save = vi.spyOn(l.loops, 'save');
    const e1 = await fails(l.dispatch(CHANNELS.saveLoop, ['r1-abc', { ...sampleLoop('r1-abc'), before: { ...sampleLoop('r1-abc').before, pages: -1 } }]));
    expect(e1).toBeInstanceOf(IpcValidationError);
    expect(e1!.message).toMatch(/^numascope:save-loop: record\.before\.pages: /);
    const e2 = await fails(l.dispatch(CHANNELS.saveLoop, ['../x', sampleLoop('r1-abc')]));
    expect(e2!.message).toMatch(/^numascope:save-loop: recording: /);
    const e3 = await fails(l.dispatch(CHANNELS.saveLoop, ['r1-abc']));
    expect(e3!.message).toMatch(/record: missing/);
    const e4 = await fails(l.dispatch(CHANNELS.loadLoop, [7]));
    expect(e4!.message).toMatch(/^numascope:load-loop: recording: /);
    const e5 = await fails(l.dispatch(CHANNELS.latestLoop, [1]));
    expect(e5!.message).toMatch(/takes 0 argument/);
    expect(save).not.toHaveBeenCalled();
    // A recording this app does not have is the store's refusal.
    const e6 = await fails(l.dispatch(CHANNELS.saveLoop, ['r9-zzz', sampleLoop('r9-zzz')]));
    expect(e6).toBeInstanceOf(LoopStoreError);
    expect(e6!.message).toMatch(/^unknown-recording: /);
    expect(fs.existsSync(path.join(dir, 'loops'))).toBe(false);
  });

  it('a damaged record on disk is refused by the store before it leaves the main process', async () => {
    const { l, dir } = logic();
    await l.dispatch(CHANNELS.saveLoop, ['r1-abc', sampleLoop('r1-abc')]);
    fs.writeFileSync(path.join(dir, 'loops', 'r1-abc.json'), JSON.stringify({ ...sampleLoop('r1-abc'), nodeIds: ['x'] }));
    const e = await fails(l.dispatch(CHANNELS.latestLoop, []));
    expect(e!.message).toMatch(/invalid-loop: r1-abc: loop\.nodeIds\[0\]/);
  });
});
