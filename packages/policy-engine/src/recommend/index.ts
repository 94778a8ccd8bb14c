export * from './recommend.js';
