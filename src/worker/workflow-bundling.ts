// Node only: our workflows in a webpack bundle beside a worker's own, through a bundler alias that
// `workflows/with-worker-workflows` imports: nothing written to a shared temporary directory, where
// another local user could swap it.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BundleOptions } from '@temporalio/worker';

/** The module name `with-worker-workflows` imports the worker's own workflows by (an alias of the bundler's). */
const WORKER_WORKFLOWS_MODULE = '__temporal_compactor_worker_workflows';

type WebpackConfigHook = NonNullable<BundleOptions['webpackConfigHook']>;
type WebpackConfig = Parameters<WebpackConfigHook>[0];
type Aliases = NonNullable<NonNullable<WebpackConfig['resolve']>['alias']>;

export class WorkflowsPathError extends Error {
  override readonly name = 'WorkflowsPathError';
  constructor(readonly workflowsPath: string) {
    super(
      `temporal-compactor: workflowsPath: expected the path of a workflows module, got ${JSON.stringify(workflowsPath)}, which does not exist`,
    );
  }
}

/** A module of ours (`workflows/index`): the compiled one beside the build output, else the source (tsx). */
function ourModule(name: string): string {
  const candidates = [`../${name}.js`, `../${name}.ts`].map((path) => fileURLToPath(new URL(path, import.meta.url)));
  const found = candidates.find((path) => existsSync(path));
  if (found === undefined) throw new Error(`temporal-compactor: found no ${name} beside the plugin`);
  return found;
}

/** The `workflowsPath` of a worker with our workflows alone. */
export function compactorWorkflowsPath(): string {
  return ourModule('workflows/index');
}

/**
 * The modules of ours a bundle preloads (the SDK's `preloadModules`): a worker's reusable V8 context
 * evaluates them once, before any workflow, and every workflow on that thread shares them. Only
 * modules whose state is a pure cache belong here: the BPE encoders, each a 200,000-entry table
 * that every workflow run would otherwise build again (`core/counting/bpe-encoders`).
 */
export function compactorPreloadModules(): string[] {
  return [ourModule('core/counting/bpe-encoders')];
}

/** `aliases` added to webpack's `resolve.alias`, in either of its two forms. */
function withAliases(current: Aliases | undefined, aliases: Record<string, string>): Aliases {
  if (Array.isArray(current)) return [...current, ...Object.entries(aliases).map(([name, alias]) => ({ name, alias }))];
  return { ...current, ...aliases };
}

/** A webpack hook: the worker's own `hook` first, then the alias of the worker's workflows module. */
function bundlingHook(theirs: string, hook: WebpackConfigHook | undefined): WebpackConfigHook {
  const aliases = { [`${WORKER_WORKFLOWS_MODULE}$`]: theirs };
  return (config) => {
    const hooked = hook === undefined ? config : hook(config);
    const resolved = hooked.resolve ?? {};
    return { ...hooked, resolve: { ...resolved, alias: withAliases(resolved.alias, aliases) } };
  };
}

interface WorkflowsToBundle {
  workflowsPath?: string | undefined;
  webpackConfigHook?: WebpackConfigHook | undefined;
  preloadModules?: string[] | undefined;
}

/** The workflows path and webpack hook of a bundle with the worker's own workflows and ours. */
function workflowsAndHook({ workflowsPath, webpackConfigHook }: WorkflowsToBundle): {
  workflowsPath: string;
  webpackConfigHook?: WebpackConfigHook | undefined;
} {
  const ours = compactorWorkflowsPath();
  const combined = ourModule('workflows/with-worker-workflows');
  const theirs = workflowsPath === undefined ? undefined : resolve(workflowsPath);
  // Configured already (the worker's options, then its bundler's, which another plugin's hook may wrap):
  // the alias is in the hook chain, and wrapping our module in itself would lose the worker's workflows.
  if (theirs === combined) return { workflowsPath: combined, webpackConfigHook };
  if (theirs === undefined || theirs === ours) return { workflowsPath: ours, webpackConfigHook };
  if (!existsSync(theirs)) throw new WorkflowsPathError(workflowsPath ?? theirs);
  return { workflowsPath: combined, webpackConfigHook: bundlingHook(theirs, webpackConfigHook) };
}

/**
 * The workflows path, webpack hook and preloaded modules of a bundle with the worker's own
 * workflows and ours; idempotent.
 */
export function withOurWorkflows(bundling: WorkflowsToBundle): WorkflowsToBundle & {
  workflowsPath: string;
  preloadModules: string[];
} {
  const preloadModules = [...new Set([...(bundling.preloadModules ?? []), ...compactorPreloadModules()])];
  return { ...workflowsAndHook(bundling), preloadModules };
}
