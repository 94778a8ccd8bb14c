/**
 * @numascope/protocol: the one definition of every message that crosses a process boundary
 * between the collector (`numascope serve`, the napi binding) and the apps, as zod schemas with
 * their inferred types. docs/live-api.md describes them; this package defines them.
 */
export * from './common';
export * from './record';
export * from './live';
export * from './serve';
export * from './apply';
export * from './commands';
export * from './desktop';
export * from './bench';
export * from './run';
export * from './messages';
export * from './loop';
