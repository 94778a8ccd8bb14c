/**
 * Issue 32, "one front door": `numascope analyze|diagnose|plan|compare|code` runs the engine from
 * its one-file bundle (bin/build-bundle.mjs) beside the binary, with no repository, node_modules or
 * tsx around it; every command's --help works through it; a missing bundle or Node says so (127).
 *
 * Needs the built collector (NUMASCOPE_BIN).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../cli/main.js';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BIN = process.env['NUMASCOPE_BIN'] ?? resolve(REPO_ROOT, 'native/collector/target/debug/numascope');
const SAMPLE = resolve(REPO_ROOT, 'sample-traces/two-groups.numascope');
const dir = mkdtempSync(join(tmpdir(), 'numascope-front-door-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// A release layout: the binary and the bundle in one directory, nothing else.
const bin = join(dir, 'bin');
mkdirSync(bin);
copyFileSync(BIN, join(bin, 'numascope'));
execFileSync(process.execPath, [resolve(REPO_ROOT, 'packages/policy-engine/bin/build-bundle.mjs'), join(bin, 'numascope-analyze.mjs')], { stdio: 'ignore' });
const trace = join(dir, 'two-groups.numascope');
copyFileSync(SAMPLE, trace);
const env = { PATH: `${resolve(process.execPath, '..')}:/usr/bin:/bin`, HOME: dir };

function numascope(args: string[], extra: Record<string, string> = {}, exe = join(bin, 'numascope')) {
  return spawnSync(exe, args, { cwd: dir, env: { ...env, ...extra }, encoding: 'utf8' });
}

describe('numascope analyze … runs the bundled engine (issue 32)', () => {
  it('analyze --json from the release layout equals the engine run in process', async () => {
    const r = numascope(['analyze', trace, '--json']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    let expected = '';
    expect(await main(['analyze', trace, '--json'], (s) => (expected += s + '\n'))).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(JSON.parse(expected));
  });

  it('every analysis command has --help, options as --opt=value, and the engine\'s exit codes', async () => {
    for (const c of ['analyze', 'diagnose', 'plan', 'compare', 'code']) {
      const r = numascope([c, '--help']);
      expect(r.status, `${c} --help: ${r.stderr}`).toBe(0);
      expect(r.stdout, c).toMatch(/usage/i);
    }
    const eq = numascope(['analyze', `--policy=carrefour`, trace, '--json']);
    expect(eq.status, eq.stderr).toBe(0);
    expect(JSON.parse(eq.stdout).policies.map((p: { policy: string }) => p.policy)).toContain('carrefour');
    const bad = numascope(['analyze', trace, '--no-such-option']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/no-such-option/);
    const gone = join(dir, 'missing.numascope');
    const missing = numascope(['analyze', gone]);
    expect(missing.stderr).toContain('missing.numascope');
    expect(missing.status).toBe(await main(['analyze', gone], () => {}, () => {}));
    expect(missing.status).not.toBe(0);
  });

  it('without Node or without the bundle: exit 127 and a message naming what to install', () => {
    const noNode = numascope(['analyze', trace], { NUMASCOPE_NODE: join(dir, 'no-node') });
    expect(noNode.status).toBe(127);
    expect(noNode.stderr).toMatch(/needs Node\.js 20 or later/);
    const alone = join(dir, 'alone');
    mkdirSync(alone);
    copyFileSync(BIN, join(alone, 'numascope'));
    const noBundle = numascope(['analyze', trace], {}, join(alone, 'numascope'));
    expect(noBundle.status).toBe(127);
    expect(noBundle.stderr).toMatch(/numascope-analyze\.mjs, which is not installed/);
  });
});
