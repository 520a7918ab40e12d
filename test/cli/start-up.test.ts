// What the command line loads as it starts: the worker package (the SDK's Worker and its webpack
// bundler) only for the commands that start or bundle a worker, so `--help`, `compact`, `history` and
// the others start without it.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** The packages under node_modules a fresh process has loaded after running `script`. */
function packagesLoadedBy(script: string): string[] {
  const probe = `${script}
const { createRequire } = await import('node:module');
const loaded = Object.keys(createRequire(import.meta.url).cache)
  .map((file) => /node_modules\\/((?:@[^/]+\\/)?[^/]+)/.exec(file)?.[1])
  .filter((name) => name !== undefined);
process.stdout.write(JSON.stringify([...new Set(loaded)].sort()));`;
  const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', probe], {
    cwd: root,
    encoding: 'utf8',
  });
  expect(child.status, child.stderr).toBe(0);
  return JSON.parse(child.stdout) as string[];
}

describe('the command line at start-up', () => {
  it('runs --help and compact without loading the worker package', () => {
    const loaded = packagesLoadedBy(`
const { main } = await import('./src/cli/main.ts');
const turns = Array.from({ length: 10 }, (_, turn) => [
  { role: 'user', content: 'Where is order ' + turn + '? ' + 'Please check the tracking. '.repeat(12) },
  { role: 'assistant', content: 'Order ' + turn + ' left the warehouse. ' + 'It is on its way. '.repeat(12) },
]).flat();
let printed = '';
const io = {
  env: { OPENAI_API_KEY: '', OPENAI_BASE_URL: '' },
  stdout: (text) => { printed += text; },
  stderr: () => undefined,
  readStdin: async () => JSON.stringify(turns),
};
for (const argv of [['--help'], ['compact', '-', '--budget', '500']]) {
  printed = '';
  const code = await main(argv, io);
  if (code !== 0) throw new Error(argv.join(' ') + ' exited ' + code);
}
if (JSON.parse(printed).length >= turns.length) throw new Error('compact did not shorten the conversation');`);
    expect(loaded).toContain('@temporalio/client');
    expect(loaded).not.toContain('@temporalio/worker');
    expect(loaded).not.toContain('webpack');
  });
});
