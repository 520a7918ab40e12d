// Node only: `temporal-compactor bundle` — prebuilds a worker's workflow bundle, so a worker starts without webpack.
import { existsSync } from 'node:fs';
import { dirname, resolve, sep } from 'node:path';
import { configFlagsFromArgs, readSettings } from '../../config.js';
import { withoutDataSources } from '../bundle-source-map.js';
import { noArguments, UsageError, type CliCommand } from '../command.js';
import { writeFileWhole } from '../conversation-file.js';

const PARTS_SHOWN = 6;

/** Bytes as megabytes with one decimal (as the SDK logs bundle sizes). */
function megabytes(bytes: number): string {
  return `${(bytes / 1_000_000).toFixed(1)} MB`;
}

/** Which part of a bundle a module belongs to: its npm package, else this package's source or the worker's own code. */
function partOf(resource: string, ourRoot: string): string {
  const marker = `${sep}node_modules${sep}`;
  const at = resource.lastIndexOf(marker);
  if (at >= 0) {
    const [scope = '', name = ''] = resource.slice(at + marker.length).split(sep);
    return scope.startsWith('@') ? `${scope}/${name}` : scope;
  }
  return resource.startsWith(`${ourRoot}${sep}`) ? 'temporal-compactor' : 'your workflows';
}

export const bundle: CliCommand = {
  name: 'bundle',
  usage: '--out FILE [--workflows FILE] [--tracing otlp|console] [options]',
  summary: "prebuild a worker's workflow bundle (your workflows and ours), so workers start without bundling",
  description: [
    "Bundles this package's workflows (compactConversation, agentRun) and, with --workflows, your own workflows module beside them, as compactorPlugin() bundles them when a worker starts, and writes the bundle to --out. Give it to your workers as workflowBundle: { codePath } (compactorPlugin() and createWorker use it as it is) or to `temporal-compactor worker` as COMPACTOR_WORKFLOW_BUNDLE. Its inline source map leaves out the text and mappings of the BPE rank tables (data, where no stack frame stops; over a third of the file), so workers read and compile less as they start.",
    'With tracing on (--tracing or COMPACTOR_TRACING: otlp or console) the bundle carries the OpenTelemetry workflow interceptors, which a worker with tracing on requires. Rebuild the bundle whenever your workflows or the installed packages change. Prints the size, the largest parts and the build id the plugin gives a worker that runs it.',
  ],
  options: {
    out: { type: 'string', value: 'FILE', help: 'where to write the bundle (replaced if it exists)' },
    workflows: {
      type: 'string',
      value: 'FILE',
      help: "your workflows module (the worker's workflowsPath); without it, ours alone",
    },
  },
  async run(context) {
    noArguments(context);
    const { out, workflows } = context.values;
    if (typeof out !== 'string' || out === '') throw new UsageError('--out is required');
    const target = resolve(out);
    if (!existsSync(dirname(target))) throw new UsageError(`--out: the folder ${dirname(target)} does not exist`);
    if (workflows !== undefined && (typeof workflows !== 'string' || !existsSync(resolve(workflows))))
      throw new UsageError(`--workflows: ${JSON.stringify(workflows)} does not exist`);
    const { tracing } = readSettings(['tracing'], { env: context.io.env, flags: configFlagsFromArgs(context.values) });
    // The worker package and its bundler load only for this command, not for every start of the CLI.
    const [
      { bundleWorkflowCode, DefaultLogger },
      { tracingWorkflowInterceptorModules },
      { workerBuildId },
      { compactorWorkflowsPath, withOurWorkflows },
    ] = await Promise.all([
      import('@temporalio/worker'),
      import('../../telemetry/tracing.js'),
      import('../../worker/plugin.js'),
      import('../../worker/workflow-bundling.js'),
    ]);
    const ourRoot = resolve(dirname(compactorWorkflowsPath()), '..', '..');
    const parts = new Map<string, number>();
    const { workflowsPath, webpackConfigHook, preloadModules } = withOurWorkflows({
      workflowsPath: typeof workflows === 'string' ? resolve(workflows) : undefined,
      // The sizes of the modules webpack emits (a module no chunk holds is left out of the bundle).
      webpackConfigHook: (config) => ({
        ...config,
        plugins: [
          ...(config.plugins ?? []),
          {
            apply(compiler) {
              compiler.hooks.done.tap('temporal-compactor bundle', (stats) => {
                for (const module of stats.toJson({ all: false, modules: true, ids: true }).modules ?? []) {
                  const resource = module.nameForCondition ?? undefined;
                  if (resource === undefined || (module.chunks ?? []).length === 0) continue;
                  const part = partOf(resource, ourRoot);
                  parts.set(part, (parts.get(part) ?? 0) + (module.size ?? 0));
                }
              });
            },
          },
        ],
      }),
    });
    const started = Date.now();
    const built = await bundleWorkflowCode({
      workflowsPath,
      webpackConfigHook,
      preloadModules,
      workflowInterceptorModules: tracing === 'off' ? [] : tracingWorkflowInterceptorModules(),
      logger: new DefaultLogger('WARN', ({ level, message }) => context.io.stderr(`bundle: ${level}: ${message}\n`)),
    });
    const { code, left } = withoutDataSources(built.code);
    // Never half a bundle; a symlink at --out is replaced, never written through.
    writeFileWhole(target, code, { mode: 0o644, replaceLink: true });
    const bytes = Buffer.byteLength(code);
    const mapAt = code.lastIndexOf('\n//# sourceMappingURL=');
    const sourceMap = mapAt < 0 ? 0 : Buffer.byteLength(code.slice(mapAt));
    const largest = [...parts]
      .sort(([, a], [, b]) => b - a)
      .slice(0, PARTS_SHOWN)
      .map(([part, bytes]) => `${part} ${megabytes(bytes)}`);
    context.io.stderr(
      [
        `workflow bundle ${out}: ${megabytes(bytes)} (modules ${megabytes(bytes - sourceMap)}, inline source map ${megabytes(sourceMap)}${left.length === 0 ? '' : `, without the text and mappings of ${left.length} data modules (the BPE rank tables)`}), built in ${((Date.now() - started) / 1000).toFixed(1)} s${tracing === 'off' ? '' : ', with the tracing interceptors'}`,
        `  largest parts (module sources): ${largest.join(', ')}`,
        `  build id of a worker that runs it with compactorPlugin(): ${workerBuildId(code)}`,
        '',
      ].join('\n'),
    );
    return 0;
  },
};
