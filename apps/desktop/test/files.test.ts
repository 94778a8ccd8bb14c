// Open/save through the (injected) native dialogs and the recent-files list.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileService, MAX_RECENT } from '../src/main-logic/files';
import { tmpdir } from './helpers';

describe('FileService', () => {
  it('saves and opens through the dialogs and remembers recent files', async () => {
    const dir = tmpdir();
    const target = path.join(dir, 'saved.numascope');
    let t = 1000;
    let openAnswer: string | null = null;
    const files = new FileService(
      { showOpen: async () => openAnswer, showSave: async (o) => (o.defaultPath === 'x.numascope' ? target : null) },
      path.join(dir, 'state', 'recent.json'),
      () => t++,
    );
    expect(await files.recent()).toEqual([]);
    expect(await files.open()).toBeNull();
    expect(await files.save(new Uint8Array([1, 2, 3]), 'x.numascope')).toBe(target);
    expect(fs.readFileSync(target)).toEqual(Buffer.from([1, 2, 3]));
    expect(fs.readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]); // written atomically
    expect(await files.save(new Uint8Array([1]), 'cancel.numascope')).toBeNull();
    openAnswer = target;
    const opened = await files.open();
    expect(opened).toMatchObject({ name: 'saved.numascope', path: target });
    expect([...opened!.bytes]).toEqual([1, 2, 3]);
    const recent = await files.recent();
    expect(recent).toHaveLength(1);
    expect(recent[0]).toEqual({ path: target, name: 'saved.numascope', openedAtUnixMs: 1001 });
    expect((await files.openRecent(target)).bytes.length).toBe(3);
    await expect(files.openRecent('/etc/passwd')).rejects.toThrow(/not a recent file/);
    for (let i = 0; i < MAX_RECENT + 3; i++) {
      const f = path.join(dir, `t${i}.numascope`);
      fs.writeFileSync(f, 'x');
      openAnswer = f;
      await files.open();
    }
    const list = await files.recent();
    expect(list).toHaveLength(MAX_RECENT);
    expect(list[0]!.name).toBe(`t${MAX_RECENT + 2}.numascope`);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a corrupt recent-files file reads as empty', async () => {
    const dir = tmpdir();
    const p = path.join(dir, 'recent.json');
    fs.writeFileSync(p, '{not json');
    const files = new FileService({ showOpen: async () => null, showSave: async () => null }, p);
    expect(await files.recent()).toEqual([]);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
