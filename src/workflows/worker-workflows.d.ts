// The worker's own workflows module, as `with-worker-workflows.ts` imports it: a name only the
// workflow bundler resolves (to the worker's `workflowsPath`), so its exports are not known here.
declare module '__temporal_compactor_worker_workflows';
