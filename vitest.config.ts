import { defineConfig } from 'vitest/config';

// One Vitest run covers every TypeScript package; each has its own vitest.config.ts.
export default defineConfig({
  test: {
    projects: ['packages/protocol', 'packages/policy-engine', 'packages/viz', 'apps/web', 'apps/desktop', 'sample-traces', 'scripts/layering'],
  },
});
