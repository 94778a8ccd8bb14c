export * from './model/contract.js';
export { EngineError, isEngineError, type EngineErrorCode } from './model/errors.js';
export * from './trace/types.js';
export * from './trace/schema.js';
export * from './trace/errors.js';
export { readTrace, readTraceUnchecked, describeArrowType, type ReadTraceOptions } from './trace/reader.js';
export { zstdReady, zstdDecoderInUse } from './trace/zstd.js';
export { DEFAULT_TRACE_LIMITS, type TraceLimits } from './trace/limits.js';
export { upgradeTrace, checkTraceVersion, UPGRADERS, OLDEST_TRACE_VERSION, type RawTrace, type Upgrader } from './trace/upgrade.js';
export { validateManifest } from './trace/validate.js';
export { numericColumn, dictionaryColumn, stringColumn, type DictionaryColumn } from './trace/columns.js';
export { summarizeTrace, countLabels, BASE_PAGE_BYTES, type TraceSummary, type NodeSummary, type ThreadSummary, type CountLabels } from './query/summary.js';
export {
  queryColumns,
  cpuSlots,
  regionMeta,
  migrationMarks,
  rowSpan,
  type QueryColumns,
  type TimeRange,
  type RegionMeta,
  type MigrationMark,
} from './query/query-columns.js';
export * from './query/aggregate.js';
export { objectTable, type ObjectRow, type ObjectTable } from './query/object-table.js';
export {
  allocationStack,
  attributeObjects,
  describeFrame,
  objectColumns,
  MAX_CANDIDATES_PER_PAGE,
  type AttributionInput,
  type ObjectColumns,
  type StackFrameView,
} from './query/objects.js';
export { answerQuery, type TraceQuery, type TraceAnswer, type AnyTraceAnswer } from './query/queries.js';
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
export { machineModel, traceMachineOf, nodeOfCpu, machineTiers, isCpuless, MachineModelError, DEFAULT_MC_BANDWIDTH_GBPS, DEFAULT_LOCAL_LATENCY_NS, ESTIMATED_LINK_SHARE } from './machine/model.js';
export { machineFromJson, machineFromHwlocXml, machineFromText, machineFromSysfs, parseCpuList, parseHwlocCpuset, recordedMachine, MachineLoadError } from './machine/loaders.js';
export * from './code/index.js';
export { c2cTable, hitmLineKeys, PMU_EVENTS, type C2cTable, type C2cLine, type C2cOffset } from './code/c2c.js';
export { replayInputFor, restrictToTimeRange, hintingFaultStats, accessSampleRows, type AccessEstimateOption, type AccessRatesOption, type HintingFaultStats, MEMORY_DATA_SOURCES, PAGE_ROW_BYTES, type ReplayInputOptions, type TimeRangeUs } from './engine/windows.js';
export {
  simulateWindow,
  simulateMatrix,
  accessMatrix,
  sampleCvPct,
  CACHE_LINE_BYTES,
  MEMORY_STALL_SHARE,
  queueDelayNs,
} from './engine/simulate.js';
export { trafficModel, fitLoadedLatencyCurve, MLC_REFERENCE_CURVE, LQ_CONTENTION_SHARE, LQ_QUEUE_SCALE, sustainedShare, presetSustainedGBps, type TrafficModel, type Coherence } from './machine/traffic.js';
export { chooseMachine, machineChoiceJson, sameNodes, type MachineChoice, type MachineChoiceKind, type OfferedMachine } from './machine/choice.js';
export { retarget, retargetNodeMap, RETARGET_RULES, type RetargetRule } from './engine/retarget.js';
export {
  analyze,
  analyzeInput,
  overallMetrics,
  windowPredictedUs,
  defaultBaseline,
  MIGRATION_SECONDS_PER_GB,
  DEFAULT_WINDOW_MS,
  type AnalyzeOptions,
  type AnalysisResult,
  type PolicyResult,
  type OverallMetrics,
  type ReplaySummary,
  type SteadyStateInfo,
} from './analyze/analyze.js';
export { buildReplayInput } from './analyze/replay-input.js';
export { analysisJson, policyResultJson, policySummary, replaySummaryJson, nodeLoads, hotSpotIndex, weightsJson, weightCommands } from './analyze/json.js';
export { formatSpeedup, formatLatencyNs, formatShare, formatPct, formatTimeUs } from './format.js';
export {
  getPolicy,
  listPolicies,
  POLICY_IDS,
  POLICY_DESCRIPTORS,
  DEFAULT_BASELINE,
  FALLBACK_BASELINE,
  BASELINES,
  describePolicy,
  policyLabel,
  policyForms,
  runsOnEstimate,
  needsPlacement,
  type PolicyDescriptor,
  type PolicyParameter,
  type PolicyId,
  type DefaultPolicyId,
  type PolicyArguments,
  observedPolicy,
  firstTouchPolicy,
  firstTouchPageNodes,
  interleavePolicy,
  interleaveAllPolicy,
  interleavePageNodes,
  pagesByAddress,
  manualPolicy,
  type ManualPlacement,
  listPoliciesFor,
  tieredMachine,
  TIERED_POLICY_IDS,
  ON_REQUEST_POLICY_IDS,
  tieringPolicy,
  tieringPlacement,
  replicatePolicy,
  replicationOf,
  parseReplicateId,
  replicateId,
  REPLICATE_DEFAULT_READ_SHARE,
  type ReplicateOptions,
  type ReplicationResult,
  weightedInterleavePolicy,
  recommendWeights,
  weightedPageNodes,
  weightedRanges,
  weightedNodeOf,
  weightedSlots,
  weightsForShares,
  weightSides,
  checkWeights,
  parseWeightedId,
  parseWeightedNodeSetId,
  checkNodeSet,
  MIN_WEIGHT,
  MAX_WEIGHT,
} from './policies/index.js';
export * from './plan/index.js';
export * from './recommend/index.js';
export * from './diagnose/index.js';
export { diagnoseAnalysis } from './analyze/diagnose-analysis.js';
export { predictionWhy, type PredictionWhy } from './analyze/why.js';
export {
  analysisReport,
  rankedActions,
  machineReport,
  needsEstimate,
  policyReport,
  ESTIMATE_REASON,
  type ActionReport,
  type AnalysisReport,
  type AnalysisRequest,
  type MachineReport,
  type PolicyReport,
  type RecommendationReport,
  type ReportContext,
  type ReportRange,
} from './report/report.js';
export { workOf, type ReportWork } from './report/report.js';
export { compareRecordings, speedupPerWork, type RecordingComparison } from './report/compare.js';
export { policyPlan, fixPlan, diagnoseReport, recommendationsPlan, type PolicyPlan, type PlanContext } from './report/plans.js';
