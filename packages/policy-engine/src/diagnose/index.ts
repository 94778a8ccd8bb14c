export * from './diagnose.js';
export * from './fixes.js';
export * from './plan.js';
