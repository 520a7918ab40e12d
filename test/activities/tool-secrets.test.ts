// Secret files under the tool root: what `fs_read`, `fs_list` and `grep` hand the model goes to the
// run's history and to the model's provider, so the built-in tools read nothing until a root is
// given, refuse dotenv files, `.git`, keys and credential files by rule (a result the model reads,
// naming the rule) unless the worker allows them by name, skip them in a grep, and refuse a symlink
// that leads into one. A temporary root holds one of each, every one with a canary inside.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from '../../src/activities/index.js';
import { createBuiltInTools } from '../../src/activities/tools.js';
import { FailureType } from '../../src/index.js';
import { createExtractiveSummarizer } from '../../src/summarizers/extractive.js';

const run = <T>(fn: (args: unknown) => Promise<T>, args: unknown): Promise<T> =>
  new MockActivityEnvironment().run(fn, args);

async function failureOf(call: () => Promise<unknown>): Promise<ApplicationFailure> {
  try {
    const output = await call();
    throw new Error(`expected a failure, got ${JSON.stringify(output).slice(0, 300)}`);
  } catch (error) {
    if (!(error instanceof ApplicationFailure)) throw error;
    return error;
  }
}

/** Secret files by path under the root, with the rule each is refused by. */
const SECRETS: ReadonlyArray<[path: string, rule: string]> = [
  ['.env', '.env'],
  ['.env.production', '.env.*'],
  ['deploy/web.env', '*.env'],
  ['.git/config', '.git'],
  ['.ssh/id_rsa', '.ssh'],
  ['keys/server.pem', '*.pem'],
  ['keys/tls.key', '*.key'],
  ['id_ed25519', 'id_ed25519*'],
  ['.npmrc', '.npmrc'],
  ['.pypirc', '.pypirc'],
  ['.netrc', '.netrc'],
  ['.aws/credentials', '.aws'],
  ['.config/gcloud/application_default_credentials.json', '.config/gcloud'],
  ['.docker/config.json', '.docker/config.json'],
  ['.kube/config', '.kube/config'],
  ['infra/terraform.tfstate', '*.tfstate'],
];

const canary = (path: string): string => `CANARY-${path.replace(/[^A-Za-z0-9]/g, '_')}`;

describe('secret files under the tool root', () => {
  let root: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'compactor-secrets-'));
    for (const [path] of SECRETS) {
      mkdirSync(join(root, dirname(path)), { recursive: true });
      writeFileSync(join(root, path), `token = ${canary(path)}\n`);
    }
    mkdirSync(join(root, 'src'));
    writeFileSync(join(root, 'src', 'app.py'), 'print("the CANARY word is fine in source")\n');
    writeFileSync(join(root, '.env.example'), 'API_KEY=\n');
    writeFileSync(join(root, '.ssh', 'known_hosts'), `${canary('.ssh/known_hosts')}\n`);
    // Symlinks inside the root that lead into secret files: by file, and through a directory.
    symlinkSync(join(root, '.env'), join(root, 'settings.txt'));
    symlinkSync(join(root, '.ssh'), join(root, 'keys-dir'));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it.each(SECRETS)('fs_read %s → Tool.SecretPath naming its rule (%s), read by nobody', async (path, rule) => {
    const tools = createBuiltInTools({ root });
    const failure = await failureOf(() => run(tools.fs_read, { path }));
    expect([failure.type, failure.nonRetryable]).toEqual([FailureType.Tool.SecretPath, true]);
    expect(failure.message).toContain(`fs_read: ${path} is not read: it matches the rule "${rule}"`);
    expect(failure.message).toContain('COMPACTOR_TOOLS_ALLOW');
    expect(failure.message).not.toContain('CANARY');
  });

  it('grep skips every secret file and directory, and finds the rest', async () => {
    const tools = createBuiltInTools({ root });
    expect(await run(tools.grep, { pattern: 'CANARY' })).toBe(
      'src/app.py:1: print("the CANARY word is fine in source")',
    );
  });

  it('grep, fs_list and fs_read refuse a secret path named outright', async () => {
    const tools = createBuiltInTools({ root });
    for (const [tool, args] of [
      [tools.grep, { pattern: 'x', path: '.env' }],
      [tools.grep, { pattern: 'x', path: '.git' }],
      [tools.fs_list, { path: '.ssh' }],
      [tools.fs_list, { path: '.config/gcloud' }],
      [tools.fs_read, { path: './src/../.aws/credentials' }],
      [tools.fs_read, { path: '.ENV' }],
    ] as const) {
      const failure = await failureOf(() => run(tool, args));
      expect(failure.type, JSON.stringify(args)).toBe(FailureType.Tool.SecretPath);
    }
  });

  it('a symlink into a secret file or directory is refused like the file itself', async () => {
    const tools = createBuiltInTools({ root });
    const byFile = await failureOf(() => run(tools.fs_read, { path: 'settings.txt' }));
    expect([byFile.type, byFile.message]).toEqual([
      FailureType.Tool.SecretPath,
      expect.stringContaining('fs_read: settings.txt is not read: it matches the rule ".env"'),
    ]);
    const byDirectory = await failureOf(() => run(tools.fs_read, { path: 'keys-dir/known_hosts' }));
    expect([byDirectory.type, byDirectory.message]).toEqual([
      FailureType.Tool.SecretPath,
      expect.stringContaining('it matches the rule ".ssh"'),
    ]);
  });

  it('fs_list still names secret files (their names, never their contents)', async () => {
    const tools = createBuiltInTools({ root });
    expect(String(await run(tools.fs_list, {})).split('\n')).toEqual(
      expect.arrayContaining(['.env', '.git/', '.ssh/', 'src/']),
    );
  });

  it('the worker allows files by rule or by path (COMPACTOR_TOOLS_ALLOW); the others stay refused', async () => {
    const tools = createBuiltInTools({ root, allow: ['*.pem', '.env.example', 'deploy/web.env'] });
    expect(await run(tools.fs_read, { path: 'keys/server.pem' })).toBe(
      `     1\ttoken = ${canary('keys/server.pem')}\n     2\t`,
    );
    expect(await run(tools.fs_read, { path: '.env.example' })).toBe('     1\tAPI_KEY=\n     2\t');
    expect(String(await run(tools.grep, { pattern: 'CANARY' })).split('\n')).toEqual([
      `deploy/web.env:1: token = ${canary('deploy/web.env')}`,
      `keys/server.pem:1: token = ${canary('keys/server.pem')}`,
      'src/app.py:1: print("the CANARY word is fine in source")',
    ]);
    expect((await failureOf(() => run(tools.fs_read, { path: '.env' }))).type).toBe(FailureType.Tool.SecretPath);
    expect((await failureOf(() => run(tools.fs_read, { path: 'keys/tls.key' }))).type).toBe(
      FailureType.Tool.SecretPath,
    );
  });

  it('a path allowed beneath a refused directory is read, and found by grep, alone', async () => {
    const tools = createBuiltInTools({ root, allow: ['.git/config'] });
    expect(await run(tools.grep, { pattern: 'CANARY', path: '.git/config' })).toBe(
      `.git/config:1: token = ${canary('.git/config')}`,
    );
    expect((await failureOf(() => run(tools.fs_list, { path: '.git' }))).type).toBe(FailureType.Tool.SecretPath);
  });
});

describe('no tool root', () => {
  it('the built-in tools read nothing: each call is Tool.NoRoot, naming the setting', async () => {
    for (const tools of [createBuiltInTools(), createActivities({ summarizer: createExtractiveSummarizer() })]) {
      for (const [tool, args] of [
        [tools.fs_read, { path: 'package.json' }],
        [tools.fs_list, {}],
        [tools.grep, { pattern: 'name' }],
      ] as const) {
        const failure = await failureOf(() => run(tool, args));
        expect([failure.type, failure.nonRetryable]).toEqual([FailureType.Tool.NoRoot, true]);
        expect(failure.message).toMatch(
          /^(fs_read|fs_list|grep): this worker has no tool root \(COMPACTOR_TOOLS_ROOT\): the built-in tools read nothing$/,
        );
      }
    }
  });

  it('a root that does not exist is Tool.NoRoot too, naming it', async () => {
    const missing = join(tmpdir(), 'compactor-no-such-root');
    const failure = await failureOf(() => run(createBuiltInTools({ root: missing }).fs_list, {}));
    expect([failure.type, failure.message]).toEqual([
      FailureType.Tool.NoRoot,
      `fs_list: the tool root ${missing} is not a directory this worker can read`,
    ]);
  });
});
