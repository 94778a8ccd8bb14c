export * from './diagnose.js';
export * from './fixes.js';
export * from './plan.js';
export * from './code-sites.js';
