import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // The electron package is not installed (no binary can be downloaded here): tests that load
    // src/main.ts or src/preload.ts replace it with vi.mock('electron'); this alias only gives the
    // module id something to resolve to.
    alias: { electron: fileURLToPath(new URL('./test/electron-stub.ts', import.meta.url)) },
  },
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node',
    env: { TZ: 'UTC', LANG: 'C', LC_ALL: 'C' },
    testTimeout: 30_000,
  },
});
