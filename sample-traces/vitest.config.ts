import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Tests must not depend on the machine's time zone or locale.
    env: { TZ: 'UTC', LANG: 'C', LC_ALL: 'C' },
    // Regenerating the committed samples takes a few seconds.
    testTimeout: 60_000,
  },
});
