/**
 * The code of each sample (trace format v3, docs/trace-format.md "Code: stacks, frames and
 * modules"): `samples.stack` names a stack of `stacks`, whose rows (consecutive, depth 0 first)
 * name `frames`, which name `modules`. Depth 0 of a sample's stack is the sampled instruction
 * itself, then the return addresses outward.
 *
 * - A sample's **self frame** is depth 0.
 * - Its **code site** is the innermost frame outside allocators and language runtimes, the rule
 *   the allocation sites use (`is_runtime_frame` in
 *   native/collector/crates/core/src/alloc_sites/symbolize.rs, mirrored by `isRuntimeFrame`
 *   below): a `memset` in libc that first-touches a buffer is attributed to the function that
 *   called it. A stack wholly inside runtimes has no site (-1); the attribution by site then
 *   falls back to its self frame.
 *
 * Functions are keyed by module + function name; a frame without a function name is
 * `module+0xoffset` (its module's base name and module offset), one function per address. Pure,
 * no DOM or Node: runs in the app's Worker and in the CLI.
 */
import { numericColumn, stringColumn } from '../trace/columns.js';
import type { Trace } from '../trace/types.js';

/** Module base names of allocators and language runtimes (symbolize.rs `is_runtime_frame`, RUNTIME). */
export const RUNTIME_MODULE_PREFIXES: readonly string[] = [
  'libc.so',
  'libstdc++.so',
  'libc++.so',
  'libc++abi.so',
  'libgfortran.so',
  'libgcc_s.so',
  'ld-linux',
  'libnumascope_allocshim',
];
/** Source files of Rust's standard library and of code inlined from system headers (symbolize.rs). */
export const RUNTIME_FILE_PREFIXES: readonly string[] = ['/rustc/', '/usr/include/'];
/** Function names of Rust's allocator and standard library internals (symbolize.rs, RUST_ALLOC). */
export const RUNTIME_FUNCTION_PREFIXES: readonly string[] = [
  '__rust_alloc',
  '__rust_realloc',
  '__rust_alloc_zeroed',
  '__rdl_',
  '__rg_',
  'alloc::',
  '<alloc::',
  'std::sys::',
];

function baseName(path: string): string {
  const i = path.lastIndexOf('/');
  return i >= 0 ? path.slice(i + 1) : path;
}

/**
 * Whether a frame belongs to an allocator or a language runtime rather than to the program: the
 * same rule as the collector's `is_runtime_frame` (alloc_sites/symbolize.rs): its module's base
 * name starts with one of RUNTIME_MODULE_PREFIXES (the C library, the C++, Fortran and GCC
 * runtimes, the loader, the allocation shim), or its source file is under /rustc/ or
 * /usr/include/, or its function is one of Rust's allocator or std::sys internals.
 */
export function isRuntimeFrame(frame: { modulePath: string | null; file: string | null; function: string | null }): boolean {
  if (frame.modulePath !== null) {
    const name = baseName(frame.modulePath);
    if (RUNTIME_MODULE_PREFIXES.some((p) => name.startsWith(p))) return true;
  }
  if (frame.file !== null && RUNTIME_FILE_PREFIXES.some((p) => frame.file!.startsWith(p))) return true;
  if (frame.function !== null && RUNTIME_FUNCTION_PREFIXES.some((p) => frame.function!.startsWith(p))) return true;
  return false;
}

/** A function: module + name (or `module+0xoffset` for a frame without a function name). */
export interface CodeFunction {
  /** The function's name, or `module+0xoffset` where no symbol covers the address. */
  name: string;
  /** Path of its module, null when no module covered the address. */
  module: string | null;
  buildId: string | null;
  /** Whether its frames are runtime frames (isRuntimeFrame). */
  runtime: boolean;
}

/** The code tables of a trace as typed columns, with each sample's stack. */
export interface CodeFrames {
  /** Some sample has a stack. */
  available: boolean;
  /** Why not, or how the stacks were taken: the `code-locations` capability's reason. */
  reason: string;
  /** Per sample: its stack id, -1 none. */
  sampleStack: Int32Array;
  /** Number of stacks; stack s is stackFrames[stackStart[s] .. stackStart[s + 1]), innermost first. */
  stackCount: number;
  stackStart: Int32Array;
  stackFrames: Uint32Array;
  /** Per stack: its self frame (depth 0) and its code site (innermost non-runtime frame), -1 none. */
  stackSelf: Int32Array;
  stackSite: Int32Array;
  frames: {
    module: Int32Array;
    moduleOffset: Float64Array;
    function: Array<string | null>;
    file: Array<string | null>;
    line: Int32Array;
    inlined: Int8Array;
    /** 1: an allocator or runtime frame (isRuntimeFrame). */
    runtime: Uint8Array;
    /** Row of `functions`. */
    functionOf: Int32Array;
  };
  modules: { path: Array<string | null>; buildId: Array<string | null> };
  functions: CodeFunction[];
  /** The frame rows of a sample's stack, innermost first (empty without a stack). */
  framesOf(sample: number): number[];
  /** The sample's self frame (depth 0), -1 without a stack. */
  selfFrame(sample: number): number;
  /** The sample's code site, -1 without a stack or when the whole stack is in runtimes. */
  siteFrame(sample: number): number;
}

/** The `code-locations` capability's reason, or what the samples show where it says nothing to the point. */
function codeReason(trace: Trace, available: boolean): string {
  const cap = trace.manifest.capture.capabilities.find((c) => c.metric === 'code-locations');
  const none = 'no sample has a call stack (samples.stack is -1 in every row)';
  if (!cap) return available ? 'samples carry call stacks (the trace lists no code-locations capability)' : none;
  if (!available && cap.status !== 'unavailable') return `${none}; code-locations: ${cap.reason}`;
  return cap.reason;
}

/**
 * Each sample's stack as frames (see the module comment). The reader checked the layout: stack
 * ids 0, 1, 2, … in row order, depths counting up from 0, frames and modules in range. Computed
 * once per trace (the same object is returned again).
 */
export function codeFrames(trace: Trace): CodeFrames {
  let c = framesCache.get(trace);
  if (!c) framesCache.set(trace, (c = buildCodeFrames(trace)));
  return c;
}

/** codeFrames per trace: a trace is read once and never changes, and the app asks again with every filter. */
const framesCache = new WeakMap<Trace, CodeFrames>();

function buildCodeFrames(trace: Trace): CodeFrames {
  const { samples, stacks, frames: fr, modules: md } = trace.tables;
  const sampleStack = numericColumn<Int32Array>(samples, 'stack');
  const stackIds = numericColumn<Uint32Array>(stacks, 'stack');
  const stackFrames = numericColumn<Uint32Array>(stacks, 'frame');
  const stackCount = stackIds.length === 0 ? 0 : stackIds[stackIds.length - 1]! + 1;
  const stackStart = new Int32Array(stackCount + 1);
  for (let i = 0; i < stackIds.length; i++) stackStart[stackIds[i]! + 1]!++;
  for (let s = 0; s < stackCount; s++) stackStart[s + 1]! += stackStart[s]!;

  const modules = { path: stringColumn(md, 'path'), buildId: stringColumn(md, 'build_id') };
  const module = numericColumn<Int32Array>(fr, 'module');
  const offsets64 = numericColumn<BigUint64Array>(fr, 'module_offset');
  // As numbers for arithmetic; names from the exact 64-bit value (kernel addresses exceed 2^53).
  const moduleOffset = Float64Array.from(offsets64, Number);
  const fn = stringColumn(fr, 'function');
  const file = stringColumn(fr, 'file');
  const line = numericColumn<Int32Array>(fr, 'line');
  const inlined = numericColumn<Int8Array>(fr, 'inlined');
  const frameCount = fr.numRows;
  const runtime = new Uint8Array(frameCount);
  const functionOf = new Int32Array(frameCount);
  const functions: CodeFunction[] = [];
  const functionIndex = new Map<string, number>();
  for (let f = 0; f < frameCount; f++) {
    const m = module[f]!;
    const modulePath = m >= 0 ? (modules.path[m] ?? null) : null;
    const name = fn[f] ?? `${modulePath !== null ? baseName(modulePath) : '?'}+0x${offsets64[f]!.toString(16)}`;
    const isRuntime = isRuntimeFrame({ modulePath, file: file[f] ?? null, function: fn[f] ?? null });
    runtime[f] = isRuntime ? 1 : 0;
    const key = `${modulePath ?? ''}\u0000${name}`;
    let id = functionIndex.get(key);
    if (id === undefined) {
      id = functions.length;
      functionIndex.set(key, id);
      functions.push({ name, module: modulePath, buildId: m >= 0 ? modules.buildId[m] || null : null, runtime: isRuntime });
    }
    functionOf[f] = id;
  }

  const stackSelf = new Int32Array(stackCount).fill(-1);
  const stackSite = new Int32Array(stackCount).fill(-1);
  for (let s = 0; s < stackCount; s++) {
    const lo = stackStart[s]!;
    const hi = stackStart[s + 1]!;
    if (hi > lo) stackSelf[s] = stackFrames[lo]!;
    for (let k = lo; k < hi; k++) {
      if (!runtime[stackFrames[k]!]) {
        stackSite[s] = stackFrames[k]!;
        break;
      }
    }
  }
  let available = false;
  for (let i = 0; i < sampleStack.length && !available; i++) if (sampleStack[i]! >= 0) available = true;

  const stackOf = (sample: number) => {
    const s = sampleStack[sample] ?? -1;
    return s >= 0 && s < stackCount ? s : -1;
  };
  return {
    available,
    reason: codeReason(trace, available),
    sampleStack,
    stackCount,
    stackStart,
    stackFrames,
    stackSelf,
    stackSite,
    frames: { module, moduleOffset, function: fn, file, line, inlined, runtime, functionOf },
    modules,
    functions,
    framesOf(sample) {
      const s = stackOf(sample);
      return s < 0 ? [] : Array.from(stackFrames.subarray(stackStart[s]!, stackStart[s + 1]!));
    },
    selfFrame(sample) {
      const s = stackOf(sample);
      return s < 0 ? -1 : stackSelf[s]!;
    },
    siteFrame(sample) {
      const s = stackOf(sample);
      return s < 0 ? -1 : stackSite[s]!;
    },
  };
}
