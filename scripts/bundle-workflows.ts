// Node: prebuilds the workflow bundle the worker loads in production (`dist/workflow-bundle.js`),
// so a worker starts without webpack and every worker runs byte-identical workflow code.
// Usage: npm run build:bundle [-- <output path>]
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const output = resolve(process.argv[2] ?? resolve(root, 'dist/workflow-bundle.js'));
const { code } = await bundleWorkflowCode({ workflowsPath: resolve(root, 'src/workflows/index.ts') });
await mkdir(dirname(output), { recursive: true });
await writeFile(output, code);
console.log(`workflow bundle: ${output} (${(code.length / 1024).toFixed(0)} KiB)`);
