// Node entry point (`temporal-compactor`): everything sandbox-safe plus the Node-only drivers.
export * from './workflow.js';
export { Compactor, type CompactorOptions, type CompactCallOptions } from './compactor.js';
export * from './summarizers/index.js';
