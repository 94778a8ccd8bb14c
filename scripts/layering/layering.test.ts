import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkEngineFloors, checkLayering, layerOf } from './check.js';
import { folderCycles } from './cycles.js';
import { ENGINE_FLOORS, LAYERS } from './rules.js';

const ROOT = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
const SOURCE = /\.(ts|tsx|mts|js|mjs)$/;

function walk(dir: string, out: Map<string, string>): void {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path, out);
    else if (SOURCE.test(name) && !name.endsWith('.d.ts')) {
      out.set(relative(ROOT, path).split(sep).join('/'), readFileSync(path, 'utf8'));
    }
  }
}

function repoFiles(): Map<string, string> {
  const files = new Map<string, string>();
  for (const layer of LAYERS) for (const prefix of layer.files) {
    try { walk(join(ROOT, prefix), files); } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
  }
  return files;
}

describe('layering (scripts/layering/rules.ts)', () => {
  it('every source file imports only what its layer may', () => {
    const files = repoFiles();
    // The walk found the code it is meant to check.
    for (const l of LAYERS) {
      expect([...files.keys()].some((f) => layerOf(f)?.name === l.name), `files of layer ${l.name}`).toBe(true);
    }
    const violations = checkLayering({ files });
    expect(violations.map((v) => v.message)).toEqual([]);
  });

  it('fails on a wrong-way import between layers', () => {
    const files = new Map([
      ['packages/viz/src/Chart.tsx', "import { App } from '../../../apps/web/src/App.js';\nexport const x = App;"],
      ['packages/policy-engine/src/engine/x.ts', "import { Chart } from '@numascope/viz';\nexport const y = Chart;"],
      ['apps/desktop/src/main.ts', "const m = await import('../../web/src/load.js');"],
      ['apps/web/src/ok.ts', "import { analyze } from '@numascope/policy-engine';\nimport { Chart } from '@numascope/viz';"],
    ]);
    const v = checkLayering({ files });
    expect(v.map((x) => [x.file, x.specifier])).toEqual([
      ['apps/desktop/src/main.ts', '../../web/src/load.js'],
      ['packages/policy-engine/src/engine/x.ts', '@numascope/viz'],
      ['packages/viz/src/Chart.tsx', '../../../apps/web/src/App.js'],
    ]);
    expect(v[1]!.message).toMatch(/layer 'engine' may import only itself/);
  });

  it('fails on forbidden packages and Node built-ins, including type-only and dynamic imports', () => {
    const files = new Map([
      ['packages/policy-engine/src/a.ts', "import type { Stats } from 'node:fs';\nexport type S = Stats;"],
      ['packages/policy-engine/src/b.ts', "const p = await import('path');"],
      ['packages/policy-engine/src/c.ts', "import * as d3 from 'd3-scale';"],
      // The library has no exception for a CLI inside src/; the CLI is its own layer beside it.
      ['packages/policy-engine/src/cli/main.ts', "import { readFileSync } from 'node:fs';"],
      ['packages/policy-engine/cli/main.ts', "import { readFileSync } from 'node:fs';\nimport { analyze } from '../src/index.js';"],
      ['apps/web/src/d.ts', "import { ipcRenderer } from 'electron';"],
      ['apps/web/src/worker/e.ts', "import { useState } from 'react';"],
    ]);
    const v = checkLayering({ files });
    expect(v.map((x) => x.file)).toEqual([
      'apps/web/src/d.ts',
      'apps/web/src/worker/e.ts',
      'packages/policy-engine/src/a.ts',
      'packages/policy-engine/src/b.ts',
      'packages/policy-engine/src/c.ts',
      'packages/policy-engine/src/cli/main.ts',
    ]);
  });

  it('keeps the web app\'s Worker code out of its UI code, and lets the UI use the Worker', () => {
    const files = new Map([
      ['apps/web/src/worker/handler.ts', "import { ViewState } from '../ui/url-state';\nimport { openTraceBytes } from './open';"],
      ['apps/web/src/worker/run.ts', "import type { App } from '../main';"],
      ['apps/web/src/worker/client.ts', "import { analyze } from '@numascope/policy-engine';"],
      ['apps/web/src/ui/App.tsx', "import { TraceWorkerClient } from '../worker/client';\nimport { TrafficGraph } from '@numascope/viz';"],
    ]);
    const v = checkLayering({ files });
    expect(v.map((x) => [x.file, x.specifier])).toEqual([
      ['apps/web/src/worker/handler.ts', '../ui/url-state'],
      ['apps/web/src/worker/run.ts', '../main'],
    ]);
    expect(v[0]!.message).toMatch(/layer 'web-worker' may import only itself and engine/);
  });

  it("keeps the web app's selectors pure: no view component, no React; views and the Markdown summary use them", () => {
    const files = new Map([
      ['apps/web/src/ui/selectors/policy.ts', "import { Badge } from '../views/EngineParts';\nimport { useState } from 'react';\nimport type { ViewState } from '../url-state';\nimport type { PolicyView } from '../../worker/analysis';"],
      ['apps/web/src/ui/markdown.ts', "import { weightGains } from './selectors/weights';"],
      ['apps/web/src/ui/views/TrafficView.tsx', "import { trafficInput } from '../selectors/policy';"],
    ]);
    const v = checkLayering({ files });
    expect(v.map((x) => [x.file, x.specifier])).toEqual([
      ['apps/web/src/ui/selectors/policy.ts', '../views/EngineParts'],
      ['apps/web/src/ui/selectors/policy.ts', 'react'],
    ]);
    expect(v[0]!.message).toMatch(/layer 'web-selectors' may import only itself and web-state, web-worker/);
  });

  it('an allowlisted import passes, and only that one', () => {
    const files = new Map([['packages/viz/src/x.ts', "import '../../../apps/web/src/a.js';\nimport '../../../apps/web/src/b.js';"]]);
    const v = checkLayering({ files, allowlist: [{ file: 'packages/viz/src/x.ts', import: '../../../apps/web/src/a.js' }] });
    expect(v.map((x) => x.specifier)).toEqual(['../../../apps/web/src/b.js']);
  });
});

describe("the engine's floors (rules.ts, ENGINE_FLOORS)", () => {
  const E = 'packages/policy-engine/src/';
  it('every engine file imports only from its floor and the floors below it', () => {
    const files = repoFiles();
    expect([...files.keys()].filter((f) => f.startsWith(E)).length).toBeGreaterThan(50);
    expect(checkEngineFloors(files)).toEqual([]);
  });

  it('fails on an upward import and an unknown folder; the format vocabulary, listed exceptions and the public API pass', () => {
    const files = new Map([
      [`${E}engine/windows.ts`, "import { replayAll } from '../policies/index.js';\nimport type { Trace } from '../trace/types.js';\nimport { x } from '../format.js';"],
      [`${E}trace/validate.ts`, "import { machineModel } from '../machine/model.js';"],
      [`${E}trace/reader.ts`, "import { machineModel } from '../machine/model.js';"],
      [`${E}trace/types.ts`, "import { q } from '../query/summary.js';"],
      [`${E}extra/thing.ts`, "export const t = 1;"],
      [`${E}index.ts`, "export * from './report/report.js';"],
    ]);
    const v = checkEngineFloors(files);
    expect(v).toHaveLength(4);
    expect(v[0]).toMatch(/engine\/windows\.ts imports '\.\.\/policies\/index\.js' from floor 'policies', above its floor 'engine'/);
    expect(v[1]).toMatch(/extra\/thing\.ts: its folder is not in ENGINE_FLOORS/);
    expect(v[2]).toMatch(/trace\/reader\.ts imports .* from floor 'machine'/);
    expect(v[3]).toMatch(/trace\/types\.ts imports .* from floor 'query'/);
  });

  it("the package README's floor table and docs/architecture.md list the floors in this order", () => {
    const order = ENGINE_FLOORS.map((f) => f.folder);
    const readme = readFileSync(join(ROOT, 'packages/policy-engine/README.md'), 'utf8');
    const section = readme.split('## Floors of `src/`')[1]!.split('\n## ')[0]!;
    const rows = section.split('\n').filter((l) => /^\| `[a-z]+\/` \|/.test(l)).map((l) => /^\| `([a-z]+)\/`/.exec(l)![1]);
    expect(rows).toEqual(order);
    const arch = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
    const line = /inside, bottom to top: ((?:[a-z]+\s*◄\s*)*[a-z]+)/.exec(arch);
    expect(line?.[1]!.trim().split(/\s*◄\s*/)).toEqual(order);
  });
});

describe('no import cycle between the files of one folder (scripts/layering/cycles.ts)', () => {
  it('every folder of every layer reads bottom-up', () => {
    const cycles = folderCycles(repoFiles());
    expect(cycles.map((c) => `${c.folder}: ${c.example.join(' → ')}`)).toEqual([]);
  });

  it('finds a cycle through a type-only import, an index file and a folder import, with a path', () => {
    const files = new Map([
      ['packages/policy-engine/src/engine/run.ts', "import { steady } from './steady.js';\nexport const run = steady;"],
      ['packages/policy-engine/src/engine/steady.ts', "import type { Run } from './run.js';\nexport const steady = 1;"],
      ['packages/policy-engine/src/plan/index.ts', "export * from './a.js';"],
      ['packages/policy-engine/src/plan/a.ts', "import { b } from './b';\nexport const a = b;"],
      ['packages/policy-engine/src/plan/b.ts', "import { x } from './index.js';\nexport const b = x;"],
      // Across folders: not a folder cycle (the layers and the folder order judge those).
      ['packages/policy-engine/src/x/one.ts', "import { two } from '../y/two.js';"],
      ['packages/policy-engine/src/y/two.ts', "import { one } from '../x/one.js';"],
      // A folder import of a sub-folder is an edge to another folder.
      ['apps/web/src/ui/a.ts', "import { s } from './sub';"],
      ['apps/web/src/ui/sub/index.ts', "import { a } from '../a.js';"],
    ]);
    const cycles = folderCycles(files);
    expect(cycles.map((c) => [c.folder, c.files])).toEqual([
      ['packages/policy-engine/src/engine', ['packages/policy-engine/src/engine/run.ts', 'packages/policy-engine/src/engine/steady.ts']],
      ['packages/policy-engine/src/plan', ['packages/policy-engine/src/plan/a.ts', 'packages/policy-engine/src/plan/b.ts', 'packages/policy-engine/src/plan/index.ts']],
    ]);
    expect(cycles[0]!.example).toEqual(['packages/policy-engine/src/engine/run.ts', 'packages/policy-engine/src/engine/steady.ts', 'packages/policy-engine/src/engine/run.ts']);
    expect(cycles[1]!.example).toEqual(['packages/policy-engine/src/plan/a.ts', 'packages/policy-engine/src/plan/b.ts', 'packages/policy-engine/src/plan/index.ts', 'packages/policy-engine/src/plan/a.ts']);
  });

  it('a file importing itself or a package is no cycle', () => {
    const files = new Map([
      ['packages/viz/src/a.ts', "import { a } from './a.js';\nimport * as d3 from 'd3-scale';"],
    ]);
    expect(folderCycles(files)).toEqual([]);
  });
});
