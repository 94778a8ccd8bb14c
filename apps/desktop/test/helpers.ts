import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { LiveMessage } from '@numascope/protocol';
import { bindingDir, loadAddon } from '../src/main-logic/addon';
import { createMainLogic } from '../src/main-logic/handlers';
import type { MainDeps } from '../src/main-logic/handlers';

export const repoRoot = path.resolve(bindingDir(), '..', '..', '..', '..');
export const testload =
  process.env.NUMASCOPE_TESTLOAD_BIN ?? path.join(repoRoot, 'native', 'collector', 'target', 'debug', 'numascope-testload');

export function tmpdir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'numascope-desktop-'));
}

/** Main logic over the real addon; live messages are collected per recording. */
export function realLogic(over: Partial<MainDeps> = {}) {
  const dir = tmpdir();
  const live = new Map<string, LiveMessage[]>();
  const logic = createMainLogic({
    addon: loadAddon(),
    dialogs: { showOpen: async () => null, showSave: async () => null },
    recentFilesPath: path.join(dir, 'recent.json'),
    workDir: path.join(dir, 'recordings'),
    rollback: async () => {
      throw new Error('no rollback in this test');
    },
    openExternal: async () => {},
    sendLive: ({ id, message }) => {
      if (!live.has(id)) live.set(id, []);
      live.get(id)!.push(message);
    },
    windowMs: 100,
    ...over,
  });
  return { logic, live, dir };
}
