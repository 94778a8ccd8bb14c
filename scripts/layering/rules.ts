/**
 * The allowed import directions of the TypeScript code, written once. `npm test` checks every
 * source file against them (layering.test.ts); a wrong-way import fails the run with the file,
 * the import and the rule it breaks.
 *
 * A file belongs to the first layer whose `files` prefix matches its repository path. Imports
 * of another layer's files (by relative path or by workspace package name) must be listed in
 * `mayImport`; imports of npm packages and Node built-ins must not match `forbidPackages`.
 */

export interface Layer {
  /** Short name used in messages. */
  readonly name: string;
  /** Repository-relative folder prefixes (ending in '/') or single modules (a path without its extension) of this layer (first match wins). */
  readonly files: readonly string[];
  /** Repository-relative prefixes excluded from `files` (they belong to a later layer). */
  readonly except?: readonly string[];
  /** Layers this one may import. Imports within the layer itself are always allowed. */
  readonly mayImport: readonly string[];
  /** npm package names (or prefixes ending in '*') this layer must not import. */
  readonly forbidPackages?: readonly string[];
  /** Whether Node's built-in modules (fs, node:path, ...) are forbidden. */
  readonly forbidNodeBuiltins?: boolean;
  /** Why, for the failure message. */
  readonly why: string;
}

/** Workspace package name -> repository-relative folder of its sources. */
export const WORKSPACE_PACKAGES: Readonly<Record<string, string>> = {
  '@numascope/protocol': 'packages/protocol/src/',
  '@numascope/policy-engine': 'packages/policy-engine/src/',
  '@numascope/viz': 'packages/viz/src/',
  '@numascope/web': 'apps/web/src/',
  '@numascope/desktop': 'apps/desktop/src/',
  '@numascope/sample-traces': 'sample-traces/generator/',
};

const UI_PACKAGES = ['react', 'react-dom', 'react-dom/*', 'd3', 'd3-*'];

export const LAYERS: readonly Layer[] = [
  {
    name: 'protocol',
    files: ['packages/protocol/src/'],
    mayImport: [],
    forbidPackages: [...UI_PACKAGES, 'electron', 'apache-arrow'],
    forbidNodeBuiltins: true,
    why: 'the cross-process message schemas are shared by the browser, the desktop main process and tests: zod only',
  },
  {
    name: 'engine',
    files: ['packages/policy-engine/src/'],
    mayImport: [],
    forbidPackages: [...UI_PACKAGES, 'electron'],
    forbidNodeBuiltins: true,
    why: 'the policy engine is pure TypeScript: it runs in a Web Worker, in Node and in tests alike',
  },
  {
    name: 'engine-cli',
    files: ['packages/policy-engine/cli/', 'packages/policy-engine/bin/'],
    mayImport: ['engine'],
    forbidPackages: [...UI_PACKAGES, 'electron'],
    why: 'the scripted-analysis CLI is a Node front end of the engine, kept out of the pure library (src/)',
  },
  {
    name: 'viz',
    files: ['packages/viz/src/'],
    mayImport: [],
    forbidPackages: ['electron'],
    forbidNodeBuiltins: true,
    why: 'viz components are reusable and take plain data as props: they import neither the engine nor an app',
  },
  {
    name: 'web-worker',
    files: ['apps/web/src/worker/'],
    mayImport: ['engine'],
    forbidPackages: [...UI_PACKAGES, 'electron'],
    forbidNodeBuiltins: true,
    why: 'the trace Worker (and the client and protocol that talk to it) runs the engine off the UI thread: it never reaches into UI code, React or D3',
  },
  {
    name: 'web-state',
    files: ['apps/web/src/ui/url-state', 'apps/web/src/ui/live/token'],
    mayImport: ['engine'],
    forbidPackages: [...UI_PACKAGES, 'electron'],
    forbidNodeBuiltins: true,
    why: "the URL's view state and the serve token: plain data the selectors and the views both read",
  },
  {
    name: 'web-selectors',
    files: ['apps/web/src/ui/selectors/'],
    mayImport: ['web-state', 'web-worker', 'protocol', 'engine', 'viz'],
    forbidPackages: [...UI_PACKAGES, 'electron'],
    forbidNodeBuiltins: true,
    why: 'selectors are pure functions from the Worker\'s views and the URL state to what a view shows: no React, no view components, unit-tested alone',
  },
  {
    name: 'web-ui',
    files: ['apps/web/src/'],
    mayImport: ['web-selectors', 'web-state', 'web-worker', 'protocol', 'engine', 'viz'],
    forbidPackages: ['electron'],
    forbidNodeBuiltins: true,
    why: 'the web app runs in a browser; it uses the shared packages and its own Worker only',
  },
  {
    name: 'desktop',
    files: ['apps/desktop/src/'],
    mayImport: ['protocol', 'engine', 'viz', 'binding'],
    why: 'the desktop shell uses only the shared packages and the collector binding, never web-app internals',
  },
  {
    name: 'binding',
    files: ['native/collector/crates/node/'],
    except: ['native/collector/crates/node/target/'],
    mayImport: ['protocol'],
    forbidPackages: [...UI_PACKAGES, 'electron'],
    why: 'the napi binding of the collector: reached only from the desktop main process (and its own tests)',
  },
  {
    name: 'sample-traces',
    files: ['sample-traces/generator/'],
    mayImport: ['engine'],
    forbidPackages: [...UI_PACKAGES, 'electron'],
    why: 'the sample generator builds traces with the engine only',
  },
];

/**
 * Known exceptions, each with the reason and the issue that removes it. Starts empty and
 * should stay so: fix the import instead of adding to it.
 */
export const ALLOWLIST: readonly { file: string; import: string; reason: string }[] = [];

/** The policy engine's library folder, whose floors `ENGINE_FLOORS` orders. */
export const ENGINE_SRC = 'packages/policy-engine/src/';

/**
 * The engine's floors (folders of `ENGINE_SRC`), bottom to top, written once: a file imports only
 * from its own floor and the floors before it (layering.test.ts), and packages/policy-engine/
 * README.md ("Floors of `src/`") and docs/architecture.md list them in this order (checked too).
 * `src/index.ts` (the public API) sits above them all.
 */
export const ENGINE_FLOORS: readonly { readonly folder: string; readonly what: string }[] = [
  { folder: 'model', what: 'the contract between the parts (types) and EngineError' },
  { folder: 'trace', what: 'the trace format: read, check, upgrade, validate, write' },
  { folder: 'query', what: 'questions about an open trace: summary, query columns, aggregates, objects' },
  { folder: 'machine', what: 'machine models, presets, loaders, the traffic model\'s facts' },
  { folder: 'code', what: 'code attribution: frames, functions, call tree' },
  { folder: 'engine', what: 'replay input (windows, closed loop), simulator, runner, steady state, retarget' },
  { folder: 'policies', what: 'the placement policies' },
  { folder: 'plan', what: 'placement plans from a policy\'s placement' },
  { folder: 'diagnose', what: 'NumaPerf-style issues, fixes and their plans' },
  { folder: 'analyze', what: 'a trace through the policies, speedups, the why of each prediction' },
  { folder: 'recommend', what: 'recommendations from an analysis' },
  { folder: 'report', what: 'one AnalysisRequest into one AnalysisReport' },
];

/** Files of `ENGINE_SRC` every floor may import: the format's vocabulary and the formatters (they import nothing of the engine above them). */
export const ENGINE_ANYWHERE: readonly string[] = ['trace/types.ts', 'format.ts'];

/** Imports against the floor order that are allowed, each with its reason. Keep it short. */
export const ENGINE_UPWARD: readonly { readonly file: string; readonly floor: string; readonly why: string }[] = [
  { file: 'trace/validate.ts', floor: 'machine', why: "a manifest's machine must be one the engine can model: validation builds its model" },
];
