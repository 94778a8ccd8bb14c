/**
 * `numascope export --format pprof` opens in speedscope (issue 32 item 5): the profile is loaded
 * into speedscope's own page (the npm package's release build, pinned) in Chromium the way its
 * command line does (`#localProfilePath=` a script calling `speedscope.loadFileFromBase64`), and
 * its Sandwich table must list the engine's busiest functions with their sample counts.
 *
 * Needs Chromium (`/usr/bin/chromium`, which the test setup installs) and the built collector;
 * without them the suite is skipped with a message.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BIN = process.env['NUMASCOPE_BIN'] ?? resolve(REPO_ROOT, 'native/collector/target/debug/numascope');
const CHROMIUM = process.env['CHROMIUM'] ?? '/usr/bin/chromium';
const require = createRequire(import.meta.url);

function speedscopeIndex(): string | null {
  try {
    return join(dirname(require.resolve('speedscope/package.json')), 'dist/release/index.html');
  } catch {
    return null;
  }
}
const INDEX = speedscopeIndex();
const missing = [!existsSync(CHROMIUM) && CHROMIUM, !INDEX && 'the speedscope npm package', !existsSync(BIN) && BIN].filter(Boolean);
if (missing.length > 0) console.warn(`pprof-speedscope.test.ts skipped: ${missing.join(', ')} not found`);

const dir = mkdtempSync(join(tmpdir(), 'numascope-speedscope-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Row {
  total: number;
  self: number;
  name: string;
}

describe.skipIf(missing.length > 0)('pprof export in speedscope', () => {
  it("speedscope imports the profile as pprof and its Sandwich table has the engine's functions and counts", async () => {
    const trace = resolve(REPO_ROOT, 'sample-traces/recorded-code-sites.numascope');
    const profile = join(dir, 'code.pb.gz');
    execFileSync(BIN, ['export', trace, '--format', 'pprof', '-o', profile, '-q']);
    const loader = join(dir, 'load.js');
    writeFileSync(loader, `speedscope.loadFileFromBase64("code.pb.gz", ${JSON.stringify(readFileSync(profile).toString('base64'))})`);

    const { chromium } = await import('playwright');
    const browser = await chromium.launch({ executablePath: CHROMIUM });
    try {
      const page = await browser.newPage();
      const logs: string[] = [];
      page.on('console', (m) => logs.push(m.text()));
      page.on('pageerror', (e) => logs.push(`page error: ${String(e)}`));
      await page.goto(`${pathToFileURL(INDEX!).href}#localProfilePath=${loader}`);
      await page.waitForFunction(() => (globalThis as unknown as { document: { title: string } }).document.title.startsWith('code.pb.gz'), undefined, { timeout: 30_000 });
      expect(logs).toContain('Importing as protobuf encoded pprof file');
      expect(logs.filter((l) => l.startsWith('page error'))).toEqual([]);
      await page.getByText('Sandwich').click();
      await page.getByText('Symbol Name').waitFor();
      const text = await page.locator('body').innerText();
      // Rows print as "1,024 (32%)\t1,024 (32%)\tinit_alpha" over lines: total, self, name.
      const cells = text.split(/[\n\t]+/).map((s) => s.trim()).filter((s) => s.length > 0);
      const rows: Row[] = [];
      const count = /^([\d,]+) \([\d.]+%\)$/;
      for (let i = 0; i + 2 < cells.length; i++) {
        const a = count.exec(cells[i]!);
        const b = count.exec(cells[i + 1]!);
        if (a && b && !count.test(cells[i + 2]!)) {
          rows.push({ total: Number(a[1]!.replace(/,/g, '')), self: Number(b[1]!.replace(/,/g, '')), name: cells[i + 2]! });
          i += 2;
        }
      }
      const byName = new Map(rows.map((r) => [r.name, r]));

      // The engine's functions by sampled instruction (the profile's first sample type counts samples).
      const code = JSON.parse(
        execFileSync(process.execPath, [resolve(REPO_ROOT, 'packages/policy-engine/bin/numascope-analyze.mjs'), 'code', trace, '--by', 'self', '--limit', '3', '--json'], { encoding: 'utf8' }),
      ) as { functions: Array<{ function: string; samples: number }> };
      expect(code.functions.length).toBe(3);
      for (const f of code.functions) {
        const row = byName.get(f.function);
        expect(row, `${f.function} in speedscope's Sandwich table (${rows.length} rows read)`).toBeDefined();
        expect(row!.self, f.function).toBe(f.samples);
      }
    } finally {
      await browser.close();
    }
  }, 120_000);
});
