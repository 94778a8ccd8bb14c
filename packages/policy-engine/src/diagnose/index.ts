export * from './diagnose.js';
export * from './fixes.js';
