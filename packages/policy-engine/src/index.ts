export * from './trace/types.js';
export * from './trace/schema.js';
export * from './trace/errors.js';
export { readTrace, describeArrowType } from './trace/reader.js';
export { upgradeTrace, UPGRADERS, OLDEST_TRACE_VERSION, type RawTrace, type Upgrader } from './trace/upgrade.js';
export { validateManifest } from './trace/validate.js';
export { numericColumn, dictionaryColumn, stringColumn, type DictionaryColumn } from './trace/columns.js';
export { summarizeTrace, BASE_PAGE_BYTES, type TraceSummary, type NodeSummary, type ThreadSummary } from './trace/summary.js';
export {
  writeTrace,
  emptyColumns,
  TraceWriteError,
  ARROW_ENTRY_ALIGNMENT_BYTES,
  type TraceColumns,
  type TableColumns,
  type ColumnValues,
  type EncodedDictionaryColumn,
  type TraceWriteErrorCode,
} from './trace/writer.js';
export { listPresets, getPreset, PRESET_IDS, routeKey, shortestPathRoutes, type MachinePreset } from './machine/presets.js';
