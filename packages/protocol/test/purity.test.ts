// src/ is pure TypeScript for every process: it imports zod and its own modules, nothing of
// Node, the DOM or another workspace; and the zod-free commands module stays zod-free (the
// desktop preload bundles it).
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const srcDir = fileURLToPath(new URL('../src/', import.meta.url));
const files = readdirSync(srcDir).filter((f) => f.endsWith('.ts'));
const importsOf = (f: string) => [...readFileSync(srcDir + f, 'utf8').matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+'([^']+)'/gm)].map((m) => m[1]!);

describe('packages/protocol/src', () => {
  it('imports only zod and its own modules', () => {
    expect(files.length).toBeGreaterThan(5);
    for (const f of files) for (const i of importsOf(f)) expect(i === 'zod' || /^\.\/[\w-]+$/.test(i), `${f}: ${i}`).toBe(true);
  });

  it('uses no Node or DOM globals', () => {
    for (const f of files) {
      // Code only: comments may say "the process (…)".
      const text = readFileSync(srcDir + f, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
      expect(text, f).not.toMatch(/\b(?:process|Buffer|require|window|document|globalThis)\b\s*[.([]/);
    }
  });

  it('commands.ts imports nothing', () => {
    expect(importsOf('commands.ts')).toEqual([]);
  });
});
