// Open/save through the (injected) native dialogs and the recent-files list.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileService, MAX_RECENT, writeFileReplacing } from '../src/main-logic/files';
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

  it('saves without following a link planted at a temporary name, privately, leaving nothing behind', async () => {
    const dir = tmpdir();
    const victim = path.join(dir, 'victim.txt');
    fs.writeFileSync(victim, 'keep me');
    const target = path.join(dir, 'shared.numascope');
    fs.writeFileSync(target, 'old trace');
    // The name the previous code used, planted as a link to the victim.
    fs.symlinkSync(victim, `${target}.${process.pid}.tmp`);
    const files = new FileService({ showOpen: async () => null, showSave: async () => target }, path.join(dir, 'recent.json'));
    expect(await files.save(new Uint8Array([1, 2, 3]), 'x.numascope')).toBe(target);
    expect(fs.readFileSync(victim, 'utf8')).toBe('keep me');
    expect([...fs.readFileSync(target)]).toEqual([1, 2, 3]);
    expect(fs.statSync(target).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(dir).filter((n) => n.endsWith('.tmp') && !fs.lstatSync(path.join(dir, n)).isSymbolicLink())).toEqual([]);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('an existing file is left whole when the new one cannot be written', async () => {
    const dir = tmpdir();
    const target = path.join(dir, 'kept.numascope');
    fs.writeFileSync(target, 'old trace');
    // A directory where the data should go: rename fails after the temporary file was written.
    const blocked = path.join(dir, 'blocked');
    fs.mkdirSync(path.join(blocked, 'inner'), { recursive: true });
    await expect(writeFileReplacing(blocked, 'new')).rejects.toThrow();
    expect(fs.readFileSync(target, 'utf8')).toBe('old trace');
    expect(fs.readdirSync(dir).filter((n) => n.endsWith('.tmp'))).toEqual([]);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
