/**
 * The policy-engine API the generator and its tests use, imported in one place.
 */
export {
  DATA_SOURCES,
  OPS,
  TABLE_NAMES,
  TABLE_SCHEMAS,
  CURRENT_TRACE_VERSION,
  TRACE_FORMAT_NAME,
  dictionaryColumn,
  emptyColumns,
  numericColumn,
  readTrace,
  stringColumn,
  type Capability,
  type CaptureSource,
  type Trace,
  type TraceMachine,
  type TraceManifest,
  writeTrace,
  type TraceColumns,
  getPreset,
  listPresets,
  machineModel,
  trafficModel,
} from '@numascope/policy-engine';
