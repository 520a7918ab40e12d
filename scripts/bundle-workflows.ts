// Node: prebuilds the workflow bundles the worker loads in production, so a worker starts without
// webpack and every worker runs byte-identical workflow code: `dist/workflow-bundle.js`, and
// `dist/workflow-bundle-tracing.js` with the OpenTelemetry workflow interceptors, which a worker
// with COMPACTOR_TRACING on loads instead (the plain bundle would lose the workflow spans).
// Usage: npm run build:bundle [-- <output path>]   (the tracing bundle goes beside it)
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { tracingWorkflowInterceptorModules } from '../src/telemetry/tracing.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const output = resolve(process.argv[2] ?? resolve(root, 'dist/workflow-bundle.js'));
const tracingOutput = output.replace(/(\.js)?$/, '-tracing.js');
const workflowsPath = resolve(root, 'src/workflows/index.ts');
await mkdir(dirname(output), { recursive: true });
for (const [path, workflowInterceptorModules] of [
  [output, []],
  [tracingOutput, tracingWorkflowInterceptorModules()],
] as const) {
  const { code } = await bundleWorkflowCode({
    workflowsPath,
    workflowInterceptorModules: [...workflowInterceptorModules],
  });
  await writeFile(path, code);
  console.log(`workflow bundle: ${path} (${(code.length / 1024).toFixed(0)} KiB)`);
}
