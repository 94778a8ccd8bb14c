/**
 * What the Worker does for the Code view: maps the view's controls to the engine's code
 * attribution options (packages/policy-engine/src/code/: functionTable, callTree, dataObjects)
 * and returns the engine's answers as they are (the objects `numascope-analyze code --json`
 * prints), or the `code-locations` capability's reason when no sample has a stack. Also "touched
 * by" for the Objects panel: the functions whose samples fell in one allocation's data object.
 * Pure over a Trace, so it is unit-tested in Node.
 */
import { c2cTable, callTree, dataObjects, functionTable, objectLabel } from '@numascope/policy-engine';
import type { C2cTable, CallTree, CodeAttribution, CodeLocality, CodeOp, CodeOptions, DataObject, FunctionTable, FunctionTableOptions, Trace } from '@numascope/policy-engine';

/** Functions sent to the view at most (the table is virtualised; the engine counts them all). */
export const CODE_FUNCTION_LIMIT = 5000;
/** Call-tree nodes at most (the engine says when the tree was cut). */
export const CODE_TREE_NODE_LIMIT = 20_000;
/** Data objects listed per function. */
export const CODE_OBJECT_LIMIT = 20;
/** Functions "touched by" lists. */
export const TOUCHED_BY_LIMIT = 10;

/** The Code view's controls (ui/url-state.ts `cby`, `cloc`, `cop`, `cobj`, `cthr` and the time range). */
export interface CodeRequest {
  by: CodeAttribution;
  /** µs, half-open; null: the whole trace. */
  range: { fromUs: number; toUs: number } | null;
  /** A row of `threads`; null: every thread. */
  thread: number | null;
  op: CodeOp | null;
  /** Memory on the sample's cpu's node or another; null: both (and unknown). */
  locality: CodeLocality | null;
  /** Memory on this node (a node id); null: any. */
  node: number | null;
  /** A data object (allocation site, as FunctionObject.site names it); null: any. */
  object: string | null;
}

/**
 * perf c2c's Shared Data Cache Line Table of the whole trace (engine code/c2c.ts: as
 * `numascope-analyze c2c` prints it), or null when the trace has no IBS/PEBS samples at all.
 * Not under the view's filters: perf c2c counts the whole recording.
 */
export type CodeC2c = C2cTable | null;

export type CodeOutcome =
  | { available: false; reason: string; c2c: CodeC2c }
  | { available: true; reason: string; table: FunctionTable; tree: CallTree; objects: DataObject[]; c2c: CodeC2c };

/** Shared cache lines listed at most (perf c2c lists every one; the count is said). */
export const C2C_LINE_LIMIT = 200;

const c2cCache = new WeakMap<Trace, CodeC2c>();

/** The trace's c2c table, computed once per trace; null without PMU samples. */
export function codeC2c(trace: Trace): CodeC2c {
  let t = c2cCache.get(trace);
  if (t === undefined) {
    const full = c2cTable(trace);
    t = full.pmuSamples === 0 ? null : { ...full, lines: full.lines.slice(0, C2C_LINE_LIMIT) };
    c2cCache.set(trace, t);
  }
  return t;
}

export type TouchedByOutcome =
  | { available: false; reason: string }
  /** `object`: the allocation's data object (null: not an allocation of the trace). */
  | { available: true; object: string | null; table: FunctionTable | null };

/** The engine's options for the view's controls. */
export function codeOptions(req: CodeRequest): CodeOptions {
  return {
    by: req.by,
    range: req.range ? { fromUs: req.range.fromUs, toUs: req.range.toUs } : null,
    threads: req.thread === null ? null : [req.thread],
    op: req.op,
    locality: req.locality,
    node: req.node,
    object: req.object,
  };
}

/** The function table, call tree and data objects under the view's filters (one set of options for all three). */
export function codeOutcome(trace: Trace, req: CodeRequest): CodeOutcome {
  const options = codeOptions(req);
  const table = functionTable(trace, { ...options, limit: CODE_FUNCTION_LIMIT, objectLimit: CODE_OBJECT_LIMIT } satisfies FunctionTableOptions);
  if (!table.available) return { available: false, reason: table.reason, c2c: codeC2c(trace) };
  const tree = callTree(trace, { ...options, limit: CODE_TREE_NODE_LIMIT });
  return { available: true, reason: table.reason, table, tree, objects: dataObjects(trace), c2c: codeC2c(trace) };
}

/** The functions that touched an allocation's data object (its site), busiest first, in a time range. */
export function touchedByOutcome(trace: Trace, allocation: number, range: CodeRequest['range']): TouchedByOutcome {
  const object = objectLabel(trace, allocation);
  const table = functionTable(trace, {
    range: range ? { fromUs: range.fromUs, toUs: range.toUs } : null,
    object: object ?? '',
    limit: object === null ? 0 : TOUCHED_BY_LIMIT,
    objectLimit: 1,
  });
  if (!table.available) return { available: false, reason: table.reason };
  return { available: true, object, table: object === null ? null : table };
}
