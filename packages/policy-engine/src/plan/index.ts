export * from './schema.js';
export { buildPlan, PlanBuildError, MIN_MOVE_RUN_PAGES, type BuildPlanOptions } from './build.js';
export {
  buildObjectEntries,
  pagesInRangeOf,
  weightsFromPages,
  type AllocationFrameInput,
  type AllocationObjectInput,
  type ObjectEntriesResult,
  type ObjectEntryOptions,
  type PagesInRange,
} from './objects.js';
export { allocationObjectInputs, nextLaunchOptions } from './objects-from-trace.js';
