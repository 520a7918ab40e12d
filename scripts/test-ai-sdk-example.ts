// Node (`npm run test:ai-sdk-example`, run by .ci/run): runs examples/ai-sdk-agent as a user would,
// outside the repository, against a dev server and a fake OpenAI-compatible endpoint:
//   1. packs this package (prepack builds it) and copies the example into a temporary project
//      whose temporal-compactor dependency is the tarball; `npm install` from the registry;
//   2. checks the tree holds one version of each @temporalio package;
//   3. starts the worker and the client; the fake endpoint answers the agent with eight read_log
//      calls, then an answer, and holds the first summary request: the worker is SIGKILLed then,
//      and a new one started;
//   4. checks the client printed the answer after nine steps, the summary was asked for again by
//      the new worker (one summarize activity, retried: nothing lost), and the history replays.
// Exits non-zero with what went wrong; removes what it started and created.
//
// Options: --tarball FILE installs a tarball packed before instead of packing (.ci/run packs once
// for this and test:package).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { startDevServer, type DevServer } from '../dev/dev-server.js';

const root = resolve(fileURLToPath(new URL('..', import.meta.url)));
const example = join(root, 'examples', 'ai-sdk-agent');
const started = Date.now();
const SUMMARIZER_MODEL = 'fake-summarizer';
const TOOL_CALLS = 8;
const ANSWER = 'The nightly builds failed on test timeouts.';

function progress(message: string): void {
  process.stderr.write(
    `[test:ai-sdk-example ${String(Math.round((Date.now() - started) / 1000)).padStart(4)}s] ${message}\n`,
  );
}

class ExampleTestError extends Error {
  override readonly name = 'ExampleTestError';
}

/** The command line: `--tarball FILE` or nothing; anything else is refused. */
function parseArgs(argv: readonly string[]): { tarball: string | undefined } {
  let tarball: string | undefined;
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index] ?? '';
    if (arg !== '--tarball')
      throw new ExampleTestError(`unknown argument ${JSON.stringify(arg)} (known: --tarball FILE)`);
    const path = argv[++index];
    if (path === undefined || !path.endsWith('.tgz') || !existsSync(path))
      throw new ExampleTestError(`--tarball takes the path of an existing .tgz, got ${JSON.stringify(path)}`);
    tarball = resolve(path);
  }
  return { tarball };
}

/** The package's tarball: packed now into `dir` (prepack builds dist/), or the one given. */
function packedTarball(dir: string, given: string | undefined): string {
  if (given !== undefined) {
    progress(`the tarball packed before: ${given}`);
    return given;
  }
  progress('npm pack (prepack builds dist/) ...');
  const packDir = join(dir, 'pack');
  mkdirSync(packDir);
  run('npm', ['pack', '--pack-destination', packDir, '--loglevel=error'], root);
  return join(packDir, readdirSync(packDir).find((name) => name.endsWith('.tgz')) ?? '');
}

function run(command: string, args: readonly string[], cwd: string): string {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (result.status !== 0)
    throw new ExampleTestError(`${command} ${args.join(' ')} exited ${result.status}\n${result.stderr.slice(-4000)}`);
  return result.stdout;
}

/** The fake endpoint: the agent's model and the summarizer on one OpenAI-compatible server. */
function startFakeEndpoint(onFirstSummary: () => void): Promise<{ url: string; summaries: number; close(): void }> {
  const state = { summaries: 0 };
  const held: ServerResponse[] = [];
  const completion = (message: Record<string, unknown>, finish: string) => ({
    id: 'c',
    object: 'chat.completion',
    created: 0,
    model: 'fake',
    choices: [{ index: 0, finish_reason: finish, message: { role: 'assistant', ...message } }],
    usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 },
  });
  const answer = (response: ServerResponse, body: unknown): void => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify(body));
  };
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    let text = '';
    request.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    request.on('end', () => {
      const body = JSON.parse(text) as { model?: string; messages?: Array<{ role: string }> };
      if (body.model === SUMMARIZER_MODEL) {
        state.summaries += 1;
        if (state.summaries === 1) {
          held.push(response); // never answered: the worker that asked is killed
          onFirstSummary();
          return;
        }
        answer(
          response,
          completion(
            {
              content:
                '## Goals\nFind why the builds failed.\n## Decisions\nRead the logs.\n## Files and commands\nbuild logs\n## Unresolved\nNone.',
            },
            'stop',
          ),
        );
        return;
      }
      // The next call follows the latest answered one (compaction summarizes the older ones away).
      const answered = (body.messages ?? []).flatMap((message) => {
        const id = (message as { tool_call_id?: unknown }).tool_call_id;
        const index = typeof id === 'string' ? /^call_(\d+)$/.exec(id)?.[1] : undefined;
        return index === undefined ? [] : [Number(index)];
      });
      const results = answered.length === 0 ? 0 : Math.max(...answered) + 1;
      if (results < TOOL_CALLS) {
        const call = {
          id: `call_${results}`,
          type: 'function',
          function: { name: 'read_log', arguments: JSON.stringify({ name: `nightly-${results}` }) },
        };
        answer(response, completion({ content: null, tool_calls: [call] }, 'tool_calls'));
      } else answer(response, completion({ content: ANSWER }, 'stop'));
    });
  });
  return new Promise((resolveServer) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolveServer({
        url: `http://127.0.0.1:${port}/v1`,
        get summaries() {
          return state.summaries;
        },
        close() {
          for (const response of held) response.destroy();
          server.close();
        },
      });
    });
  });
}

function background(command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv, prefix: string) {
  const child: ChildProcess = spawn(command, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer): void => {
    const text = chunk.toString('utf8');
    output += text;
    for (const line of text.split('\n')) if (line.trim() !== '') process.stderr.write(`  ${prefix} ${line}\n`);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<number | null>((resolveExit) => child.on('exit', (code) => resolveExit(code)));
  return {
    output: () => output,
    exited,
    kill(signal: NodeJS.Signals): void {
      if (child.pid !== undefined && child.exitCode === null) {
        try {
          process.kill(-child.pid, signal);
        } catch {
          // already gone
        }
      }
    },
  };
}

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  const dir = mkdtempSync(join(realpathSync(tmpdir()), 'temporal-compactor-ai-sdk-example-'));
  const cleanups: Array<() => Promise<void> | void> = [() => rmSync(dir, { recursive: true, force: true })];
  try {
    const tarball = packedTarball(dir, options.tarball);

    const project = join(dir, 'project');
    cpSync(example, project, { recursive: true, filter: (path) => !path.includes('node_modules') });
    const manifest = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    manifest.dependencies['temporal-compactor'] = `file:${tarball}`;
    writeFileSync(join(project, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    progress('npm install (the example, with the tarball) ...');
    run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], project);
    for (const name of ['@temporalio/workflow', '@temporalio/common', '@temporalio/client', '@temporalio/activity']) {
      const listed = run('npm', ['ls', name, '--all', '--parseable', '--long'], project)
        .split('\n')
        .filter((line) => line.includes(`${name}@`));
      const versions = new Set(listed.map((line) => line.slice(line.lastIndexOf('@') + 1)));
      if (versions.size !== 1)
        throw new ExampleTestError(`${name}: ${[...versions].join(', ')} in the tree, one wanted`);
    }
    progress('one version of each @temporalio package in the tree');

    const server: DevServer = await startDevServer({ ui: false });
    cleanups.push(() => server.stop());
    let killFirstWorker = (): void => undefined;
    const endpoint = await startFakeEndpoint(() => killFirstWorker());
    cleanups.push(() => endpoint.close());
    const env = {
      ...process.env,
      TEMPORAL_ADDRESS: server.address,
      OPENAI_BASE_URL: endpoint.url,
      OPENAI_API_KEY: 'test-key',
      COMPACTOR_SUMMARIZER_MODEL: SUMMARIZER_MODEL,
      WORKFLOW_ID: `investigate-${Date.now()}`,
    };
    const workers: Array<ReturnType<typeof background>> = [];
    const startWorker = (): void => {
      const worker = background(
        'npx',
        ['--no-install', 'tsx', 'worker.ts'],
        project,
        env,
        `worker${workers.length + 1} |`,
      );
      workers.push(worker);
    };
    cleanups.push(() => workers.forEach((worker) => worker.kill('SIGKILL')));
    killFirstWorker = () => {
      progress('the first summary request arrived: SIGKILL the worker, start another');
      workers[0]?.kill('SIGKILL');
      startWorker();
    };
    startWorker();
    progress('npx tsx client.ts ...');
    const client = background('npx', ['--no-install', 'tsx', 'client.ts'], project, env, 'client |');
    const timeout = setTimeout(() => client.kill('SIGKILL'), 180_000);
    const code = await client.exited;
    clearTimeout(timeout);
    const expected = `answer after ${TOOL_CALLS + 1} steps: ${ANSWER}`;
    if (code !== 0 || !client.output().includes(expected))
      throw new ExampleTestError(`the client exited ${code} without printing "${expected}"`);
    if (workers.length !== 2) throw new ExampleTestError(`no summary was asked for: the example did not compact`);

    const connection = await Connection.connect({ address: server.address });
    cleanups.push(() => connection.close());
    const history = await new Client({ connection }).workflow.getHandle(env.WORKFLOW_ID).fetchHistory();
    const summarize = (history.events ?? []).filter(
      (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'summarize',
    ).length;
    if (summarize < 1) throw new ExampleTestError('the history holds no summarize activity');
    progress(
      `PASSED: ${expected}; ${summarize} summarize activit${summarize === 1 ? 'y' : 'ies'} in the history, ${endpoint.summaries} summary requests (the first lost with the killed worker)`,
    );
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    progress(`FAILED: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
