import { defineConfig } from '@playwright/test';
import base from './playwright.config';

/**
 * The screenshots in docs/images, retaken from the sample traces by docs-shots/*.shots.ts
 * (`npm run screenshots -w e2e`), never by hand: same browser, fonts and flags as the tests, a
 * 1280×800 window, one worker so the pictures come out the same each run.
 */
export default defineConfig({
  ...base,
  testDir: './docs-shots',
  testMatch: '**/*.shots.ts',
  fullyParallel: false,
  workers: 1,
  timeout: 60_000,
  use: { ...base.use, viewport: { width: 1280, height: 800 } },
});
