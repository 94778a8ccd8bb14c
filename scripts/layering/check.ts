/**
 * The layering checker: reads every TypeScript source file's imports with the TypeScript
 * compiler's own pre-processor (static, type-only, dynamic `import()` and `require`) and checks
 * each against rules.ts. Pure over a map of files, so tests can feed it fixtures.
 */
import { builtinModules } from 'node:module';
import { posix } from 'node:path';
import ts from 'typescript';
import { ALLOWLIST, ENGINE_ANYWHERE, ENGINE_FLOORS, ENGINE_SRC, ENGINE_UPWARD, LAYERS, WORKSPACE_PACKAGES, type Layer } from './rules.js';

export interface Violation {
  readonly file: string;
  readonly specifier: string;
  readonly layer: string;
  readonly message: string;
}

export interface CheckInput {
  /** Repository-relative path (forward slashes) -> source text. */
  readonly files: ReadonlyMap<string, string>;
  readonly layers?: readonly Layer[];
  readonly allowlist?: readonly { file: string; import: string }[];
}

const BUILTINS = new Set(builtinModules);

export function layerOf(path: string, layers: readonly Layer[] = LAYERS): Layer | undefined {
  // A folder import ('..') names the folder itself: match it as if it ended in '/'.
  // An entry without a trailing '/' names one module (its path without the extension).
  const p = `${path}/`;
  const stem = path.replace(/\.(tsx?|mts|m?js)$/, '');
  const holds = (f: string) => (f.endsWith('/') ? p.startsWith(f) : stem === f);
  return layers.find((l) => l.files.some(holds) && !(l.except ?? []).some((e) => p.startsWith(e)));
}

/** The specifiers a file imports, in source order. */
export function importsOf(path: string, text: string): string[] {
  const info = ts.preProcessFile(text, true, /* detectJavaScriptImports */ true);
  void path;
  return [...new Set(info.importedFiles.map((f) => f.fileName))];
}

function matchesPackage(spec: string, pattern: string): boolean {
  if (pattern.endsWith('*')) return spec.startsWith(pattern.slice(0, -1));
  return spec === pattern || spec.startsWith(`${pattern}/`);
}

/** Where an import points: a repository path (relative or workspace import) or a package. */
type Target = { kind: 'repo'; path: string } | { kind: 'package'; name: string; builtin: boolean };

export function resolveImport(from: string, spec: string): Target {
  const bare = spec.replace(/[?#].*$/, '');
  if (bare.startsWith('.') || bare.startsWith('/')) {
    return { kind: 'repo', path: posix.normalize(posix.join(posix.dirname(from), bare)) };
  }
  for (const [name, folder] of Object.entries(WORKSPACE_PACKAGES)) {
    if (bare === name || bare.startsWith(`${name}/`)) {
      return { kind: 'repo', path: folder + bare.slice(name.length + 1) };
    }
  }
  const builtin = bare.startsWith('node:') || BUILTINS.has(bare) || BUILTINS.has(bare.split('/')[0]!);
  return { kind: 'package', name: bare, builtin };
}

export function checkLayering(input: CheckInput): Violation[] {
  const layers = input.layers ?? LAYERS;
  const allow = input.allowlist ?? ALLOWLIST;
  const out: Violation[] = [];
  const files = [...input.files.keys()].sort();
  for (const file of files) {
    const layer = layerOf(file, layers);
    if (!layer) continue;
    for (const spec of importsOf(file, input.files.get(file)!)) {
      if (allow.some((a) => a.file === file && a.import === spec)) continue;
      const target = resolveImport(file, spec);
      const fail = (message: string) => out.push({ file, specifier: spec, layer: layer.name, message });
      if (target.kind === 'package') {
        if (target.builtin && layer.forbidNodeBuiltins) {
          fail(`${file} imports the Node built-in '${spec}': layer '${layer.name}' may not (${layer.why})`);
        } else if ((layer.forbidPackages ?? []).some((p) => matchesPackage(target.name, p))) {
          fail(`${file} imports the package '${spec}': layer '${layer.name}' may not (${layer.why})`);
        }
        continue;
      }
      const to = layerOf(target.path, layers);
      if (!to) {
        // A relative import that leaves every layer (e.g. into another app's tests) is as wrong
        // as one into a forbidden layer, unless it stays inside the importing file's folder tree.
        const root = layer.files.find((f) => file.startsWith(f))!;
        if (!target.path.startsWith(root)) {
          fail(`${file} imports '${spec}' (${target.path}), which is outside every layer: layer '${layer.name}' may import only ${describe(layer)}`);
        }
        continue;
      }
      if (to.name === layer.name || layer.mayImport.includes(to.name)) continue;
      fail(`${file} imports '${spec}' from layer '${to.name}': layer '${layer.name}' may import only ${describe(layer)} (${layer.why})`);
    }
  }
  return out;
}

function describe(layer: Layer): string {
  return layer.mayImport.length ? `itself and ${layer.mayImport.join(', ')}` : 'itself';
}

/**
 * The engine's floor order (rules.ts, `ENGINE_FLOORS`): every relative import between files of
 * `ENGINE_SRC` goes to the importing file's floor or one below it, or to an `ENGINE_ANYWHERE` file,
 * or is listed in `ENGINE_UPWARD`; a folder not in the order is a violation too.
 */
export function checkEngineFloors(
  files: ReadonlyMap<string, string>,
  floors: readonly { folder: string }[] = ENGINE_FLOORS,
  anywhere: readonly string[] = ENGINE_ANYWHERE,
  upward: readonly { file: string; floor: string }[] = ENGINE_UPWARD,
): string[] {
  const order = floors.map((f) => f.folder);
  /** The floor index of an engine path (index.ts and other root files: above every floor), or null outside. */
  const floorOf = (path: string): number | null | 'unknown' => {
    if (!path.startsWith(ENGINE_SRC)) return null;
    const rest = path.slice(ENGINE_SRC.length);
    if (anywhere.includes(rest)) return -1; // imported from anywhere, so it imports nothing of the engine
    if (!rest.includes('/')) return order.length;
    const i = order.indexOf(rest.split('/')[0]!);
    return i < 0 ? 'unknown' : i;
  };
  const out: string[] = [];
  for (const file of [...files.keys()].sort()) {
    const own = floorOf(file);
    if (own === null) continue;
    if (own === 'unknown') {
      out.push(`${file}: its folder is not in ENGINE_FLOORS (scripts/layering/rules.ts): add it where it belongs`);
      continue;
    }
    for (const spec of importsOf(file, files.get(file)!)) {
      if (!spec.startsWith('.')) continue;
      const target = resolveImport(file, spec);
      if (target.kind !== 'repo') continue;
      const to = floorOf(target.path.replace(/\.js$/, '.ts'));
      if (to === null || to === 'unknown' || to <= own) continue;
      const rel = target.path.slice(ENGINE_SRC.length).replace(/\.js$/, '.ts');
      if (anywhere.includes(rel)) continue;
      const from = file.slice(ENGINE_SRC.length);
      if (upward.some((u) => u.file === from && u.floor === order[to])) continue;
      const ownName = own === order.length ? 'place in the public API (src/index.ts)' : own < 0 ? 'place as a file every floor may import (ENGINE_ANYWHERE)' : `floor '${order[own]}'`;
      out.push(`${file} imports '${spec}' from floor '${order[to]}', above its ${ownName}: the engine's floors are ${order.join(' < ')} (scripts/layering/rules.ts, ENGINE_FLOORS)`);
    }
  }
  return out;
}
