export * from './schema.js';
export { buildPlan, PlanBuildError, MIN_MOVE_RUN_PAGES, type BuildPlanOptions } from './build.js';
