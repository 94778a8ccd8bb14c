/**
 * Import cycles between the files of one folder (the TypeScript side of the collector's
 * core/tests/module_graph.rs): inside a folder, files import each other in one direction only,
 * so a newcomer can read a folder bottom-up and a change to a low file cannot need a high one.
 * Type-only imports count too: a type that two files need belongs below both.
 *
 * Pure over a map of files (repository path -> source text), like check.ts.
 */
import { posix } from 'node:path';
import { importsOf, resolveImport } from './check.js';

export interface FolderCycle {
  /** The folder whose files import each other in a circle. */
  readonly folder: string;
  /** The files of the cycle's strongly connected component, sorted. */
  readonly files: readonly string[];
  /** One circle through them, as a path that ends where it starts (a ↔ b: [a, b, a]). */
  readonly example: readonly string[];
}

const EXTENSIONS = ['.ts', '.tsx', '.mts', '.js', '.mjs'];

/** The file an import resolves to among `files`, or null (a package, or outside the map). */
export function resolveFile(files: ReadonlyMap<string, string>, from: string, spec: string): string | null {
  const target = resolveImport(from, spec);
  if (target.kind !== 'repo') return null;
  const base = target.path;
  const stem = base.replace(/\.(js|mjs|jsx|ts|tsx|mts)$/, '');
  const candidates = [base, ...EXTENSIONS.map((e) => stem + e), ...EXTENSIONS.map((e) => `${base}/index${e}`)];
  return candidates.find((c) => files.has(c)) ?? null;
}

/** Every folder's import cycles between its own files (folders in path order). */
export function folderCycles(files: ReadonlyMap<string, string>): FolderCycle[] {
  // Edges between files of the same folder only.
  const edges = new Map<string, string[]>();
  for (const [file, text] of files) {
    const dir = posix.dirname(file);
    const out: string[] = [];
    for (const spec of importsOf(file, text)) {
      const to = resolveFile(files, file, spec);
      if (to && to !== file && posix.dirname(to) === dir && !out.includes(to)) out.push(to);
    }
    edges.set(file, out.sort());
  }
  const cycles: FolderCycle[] = [];
  for (const component of stronglyConnected([...files.keys()].sort(), edges)) {
    if (component.length < 2) continue;
    cycles.push({ folder: posix.dirname(component[0]!), files: component, example: circleThrough(component, edges) });
  }
  return cycles.sort((a, b) => a.folder.localeCompare(b.folder) || a.files[0]!.localeCompare(b.files[0]!));
}

/** Tarjan's strongly connected components, iterative (no recursion depth limit); each sorted. */
function stronglyConnected(nodes: readonly string[], edges: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const out: string[][] = [];
  let next = 0;
  for (const root of nodes) {
    if (index.has(root)) continue;
    const work: { node: string; edge: number }[] = [{ node: root, edge: 0 }];
    index.set(root, next);
    low.set(root, next++);
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const top = work[work.length - 1]!;
      const succ = edges.get(top.node) ?? [];
      if (top.edge < succ.length) {
        const w = succ[top.edge++]!;
        if (!index.has(w)) {
          index.set(w, next);
          low.set(w, next++);
          stack.push(w);
          onStack.add(w);
          work.push({ node: w, edge: 0 });
        } else if (onStack.has(w)) {
          low.set(top.node, Math.min(low.get(top.node)!, index.get(w)!));
        }
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1]!.node;
        low.set(parent, Math.min(low.get(parent)!, low.get(top.node)!));
      }
      if (low.get(top.node) === index.get(top.node)) {
        const component: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          component.push(w);
        } while (w !== top.node);
        out.push(component.sort());
      }
    }
  }
  return out;
}

/** A shortest circle from the component's first file back to itself (breadth-first inside it). */
function circleThrough(component: readonly string[], edges: ReadonlyMap<string, readonly string[]>): string[] {
  const inside = new Set(component);
  const start = component[0]!;
  const parent = new Map<string, string>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const v = queue[i]!;
    for (const w of edges.get(v) ?? []) {
      if (!inside.has(w)) continue;
      if (w === start) {
        // start → … → v from the parents, then back to start.
        const back: string[] = [];
        for (let x: string | undefined = v; x !== undefined; x = x === start ? undefined : parent.get(x)) back.push(x);
        return [...back.reverse(), start];
      }
      if (!parent.has(w) && w !== start) {
        parent.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start];
}
