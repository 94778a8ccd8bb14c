export * from './columns';
export * from './aggregate';
export * from './queries';
