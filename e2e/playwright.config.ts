import { defineConfig } from '@playwright/test';

/**
 * End-to-end tests of the web app in Debian's Chromium (/usr/bin/chromium; Playwright's own
 * browser downloads are never used). The web server builds the app and serves it with
 * `vite preview` on a fixed port; the app's samples plugin serves sample-traces/ from source.
 * Pinned: time zone, locale, viewport, Chromium flags. Tests never sleep: they wait on the
 * app's idle signal (document.body.dataset.state).
 */
const PORT = Number(process.env.NUMASCOPE_E2E_PORT ?? 4179);

export default defineConfig({
  testDir: './tests',
  testMatch: '**/*.e2e.ts',
  outputDir: './.artifacts/test-results',
  fullyParallel: true,
  forbidOnly: !!process.env.CI,
  retries: 0,
  workers: 2,
  timeout: 30_000,
  expect: { timeout: 10_000 },
  reporter: [['list']],
  use: {
    baseURL: `http://127.0.0.1:${PORT}/`,
    browserName: 'chromium',
    headless: true,
    viewport: { width: 1280, height: 900 },
    deviceScaleFactor: 1,
    timezoneId: 'UTC',
    locale: 'en-US',
    colorScheme: 'light',
    trace: 'retain-on-failure',
    launchOptions: {
      executablePath: process.env.NUMASCOPE_CHROMIUM ?? '/usr/bin/chromium',
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
        '--disable-dev-shm-usage',
        '--font-render-hinting=none',
      ],
    },
  },
  webServer: {
    // Build then preview, so `npx playwright test` alone always tests the current source.
    command: `npm run build -w apps/web && npm run preview -w apps/web -- --host 127.0.0.1 --port ${PORT} --strictPort`,
    cwd: '..',
    url: `http://127.0.0.1:${PORT}/`,
    reuseExistingServer: !process.env.CI,
    timeout: 180_000,
    stdout: 'ignore',
    stderr: 'pipe',
  },
});
