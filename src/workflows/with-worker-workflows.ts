// Sandbox-safe: the `workflowsPath` of a worker that has workflows of its own — theirs, then every
// workflow of ours. The bundler resolves the first module name to the worker's own `workflowsPath`
// (an alias src/worker/workflow-bundling.ts sets), so nothing is written anywhere to join the two.
export * from '__temporal_compactor_worker_workflows';
export * from './index.js';
