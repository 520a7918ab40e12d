// docker-compose.yml and the Dockerfile cannot be run here (no Docker on the development
// machines or in CI), so this checks what can be checked without it: the file parses, the
// services and ports are there, the worker's variables are settings of the configuration schema
// and load, and the Dockerfile's command is what the build produces.
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import {
  DYNAMIC_CONFIG_FILE,
  HISTORY_SHARDS,
  NAMESPACE_RETENTION_HOURS,
  POSTGRES_MAJOR,
  PROJECT_ROOT,
  TEMPORAL_SERVER_VERSION,
  TEMPORAL_UI_SERVER_VERSION,
} from '../../scripts/cluster/index.js';
import { configTable, loadConfig } from '../../src/config.js';
import { summarizerFromConfig } from '../../src/worker/summarizer-from-config.js';
import { COMPACTOR_SEARCH_ATTRIBUTES } from '../../dev/dev-server.js';

const root = new URL('../../', import.meta.url);
const read = (path: string): string => readFileSync(new URL(path, root), 'utf8');

const serviceSchema = z.looseObject({
  image: z.string().optional(),
  build: z.looseObject({ context: z.string(), dockerfile: z.string() }).optional(),
  environment: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])).optional(),
  ports: z.array(z.string()).optional(),
  volumes: z.array(z.string()).optional(),
  depends_on: z.record(z.string(), z.looseObject({ condition: z.string() })).optional(),
  entrypoint: z.array(z.string()).optional(),
  command: z.union([z.string(), z.array(z.string())]).optional(),
  container_name: z.string().optional(),
});
const composeSchema = z.looseObject({
  services: z.record(z.string(), serviceSchema),
  volumes: z.record(z.string(), z.unknown()).optional(),
});

// Compose reads YAML 1.1 merge keys (`<<: *postgres-env`); `yaml` needs to be told.
const compose = composeSchema.parse(parse(read('docker-compose.yml'), { merge: true }));
const services = compose.services;

function service(name: string): z.infer<typeof serviceSchema> {
  const found = services[name];
  if (found === undefined) throw new Error(`docker-compose.yml has no service ${name}`);
  return found;
}

function environmentOf(name: string): Record<string, string> {
  return Object.fromEntries(
    Object.entries(service(name).environment ?? {}).map(([key, value]) => [key, value === null ? '' : String(value)]),
  );
}

function commandText(name: string): string {
  const { command } = service(name);
  return Array.isArray(command) ? command.join('\n') : (command ?? '');
}

/** Compose's `${VAR:-default}` / `${VAR-default}` / `${VAR}` substitution against `shell`. */
function interpolate(value: string, shell: Readonly<Record<string, string>>): string {
  return value.replace(
    /\$\{(\w+)(?:(:?-)([^}]*))?\}/g,
    (_match, name: string, operator: string | undefined, fallback: string | undefined) => {
      const set = shell[name];
      if (operator === ':-') return set === undefined || set === '' ? (fallback ?? '') : set;
      if (operator === '-') return set ?? fallback ?? '';
      return set ?? '';
    },
  );
}

function workerEnv(shell: Readonly<Record<string, string>> = {}): Record<string, string> {
  return Object.fromEntries(
    Object.entries(environmentOf('worker')).map(([key, value]) => [key, interpolate(value, shell)]),
  );
}

describe('docker-compose.yml', () => {
  it('has the Temporal server on PostgreSQL, the schema and setup jobs, the UI and our worker', () => {
    expect(Object.keys(services).sort()).toEqual([
      'postgresql',
      'temporal',
      'temporal-schema',
      'temporal-setup',
      'temporal-ui',
      'worker',
    ]);
    expect(service('postgresql').image).toMatch(/^postgres:\d+/);
    expect(service('temporal').image).toMatch(/^temporalio\/server:/);
    expect(service('temporal-schema').image).toMatch(/^temporalio\/admin-tools:/);
    expect(service('temporal-setup').image).toMatch(/^temporalio\/admin-tools:/);
    expect(service('temporal-ui').image).toMatch(/^temporalio\/ui:/);
  });

  it('pins every pulled image to a version, server and admin-tools to the same one, and avoids the deprecated auto-setup image', () => {
    for (const [name, { image, build }] of Object.entries(services)) {
      if (build !== undefined) continue;
      expect(image, name).toMatch(/^[\w./-]+:\d[\w.-]*$/);
      expect(image, name).not.toMatch(/auto-setup/);
    }
    const serverVersion = service('temporal').image?.split(':')[1];
    expect(service('temporal-schema').image).toBe(`temporalio/admin-tools:${serverVersion}`);
    expect(service('temporal-setup').image).toBe(`temporalio/admin-tools:${serverVersion}`);
  });

  it('starts things in order: database, schema, server, setup, worker', () => {
    expect(service('temporal-schema').depends_on).toEqual({ postgresql: { condition: 'service_healthy' } });
    expect(service('temporal').depends_on).toEqual({
      'temporal-schema': { condition: 'service_completed_successfully' },
    });
    expect(Object.keys(service('temporal-setup').depends_on ?? {})).toEqual(['temporal']);
    expect(service('worker').depends_on).toEqual({ 'temporal-setup': { condition: 'service_completed_successfully' } });
  });

  it('publishes the frontend and the UI on 127.0.0.1 only, and nothing else', () => {
    const published = Object.fromEntries(Object.entries(services).map(([name, { ports }]) => [name, ports ?? []]));
    expect(published).toEqual({
      postgresql: [],
      'temporal-schema': [],
      temporal: ['127.0.0.1:7233:7233'],
      'temporal-setup': [],
      'temporal-ui': ['127.0.0.1:8080:8080'],
      worker: [],
    });
  });

  it('wires the server, the jobs and the UI to the same database and frontend', () => {
    const server = environmentOf('temporal');
    expect(server).toMatchObject({ DB: 'postgres12', POSTGRES_SEEDS: 'postgresql', DB_PORT: '5432' });
    expect(environmentOf('temporal-schema')).toMatchObject({
      SQL_PLUGIN: 'postgres12',
      SQL_HOST: 'postgresql',
      SQL_PORT: '5432',
    });
    expect(commandText('temporal-schema')).toMatch(/temporal-sql-tool .*create/);
    expect(commandText('temporal-schema')).toMatch(
      /update-schema -d "\/etc\/temporal\/schema\/postgresql\/v12\/\$\$dir\/versioned"/,
    );
    expect(environmentOf('temporal-setup').TEMPORAL_ADDRESS).toBe('temporal:7233');
    expect(environmentOf('temporal-ui').TEMPORAL_ADDRESS).toBe('temporal:7233');
  });

  it('mounts the dynamic config file the server is told to read', () => {
    const server = service('temporal');
    const path = environmentOf('temporal').DYNAMIC_CONFIG_FILE_PATH ?? '';
    const mount = (server.volumes ?? []).find(
      (volume) => volume.split(':')[1] === '/etc/temporal/config/dynamicconfig',
    );
    expect(path).toMatch(/^config\/dynamicconfig\/[\w.-]+\.yaml$/);
    expect(mount).toBeDefined();
    const hostDir = (mount ?? '').split(':')[0] ?? '';
    const file = `${hostDir.replace(/^\.\//, '')}/${path.split('/').at(-1) ?? ''}`;
    expect(existsSync(new URL(file, root)), file).toBe(true);
    expect(parse(read(file))).toHaveProperty(['system.forceSearchAttributesCacheRefreshOnRead']);
  });

  it('registers the namespace and the five search attributes with their types (docs/design.md#search-attributes)', () => {
    const setup = commandText('temporal-setup');
    const namespace = environmentOf('temporal-setup').TEMPORAL_NAMESPACE;
    expect(namespace).toBe(environmentOf('worker').TEMPORAL_NAMESPACE);
    expect(setup).toContain('temporal operator namespace create --namespace "$$TEMPORAL_NAMESPACE"');
    expect(setup).toContain(
      'temporal operator search-attribute create --namespace "$$TEMPORAL_NAMESPACE" --name "$$name" --type "$$type"',
    );
    const attributes = /for attribute in ([^;]+);/.exec(setup)?.[1]?.trim().split(/\s+/);
    expect(attributes).toEqual([
      'CompactionCount:Int',
      'ContextTokens:Int',
      'CompactionFallbacks:Int',
      'ContextExhausted:Bool',
      'CompactionPending:Bool',
    ]);
  });

  describe('agrees with scripts/cluster, the self-hosted path started and tested here (npm run test:cluster)', () => {
    const withoutV = (version: string): string => version.replace(/^v/, '');

    it('runs the same server, admin-tools, UI and PostgreSQL releases', () => {
      expect(service('temporal').image).toBe(`temporalio/server:${withoutV(TEMPORAL_SERVER_VERSION)}`);
      expect(service('temporal-schema').image).toBe(`temporalio/admin-tools:${withoutV(TEMPORAL_SERVER_VERSION)}`);
      expect(service('temporal-ui').image).toBe(`temporalio/ui:${withoutV(TEMPORAL_UI_SERVER_VERSION)}`);
      expect(service('postgresql').image).toBe(`postgres:${POSTGRES_MAJOR}`);
      expect(environmentOf('temporal').NUM_HISTORY_SHARDS).toBe(String(HISTORY_SHARDS));
    });

    it('runs the same schema steps on the same two databases', () => {
      const schema = commandText('temporal-schema');
      expect(schema).toMatch(/for db in temporal temporal_visibility;/);
      // scripts/cluster/index.ts runs: create, setup-schema -v 0.0, update-schema -d <dir>/versioned
      const steps = [...schema.matchAll(/temporal-sql-tool --db "\$\$db" ([\w-]+(?: -v 0\.0| -d "[^"]+")?)/g)].map(
        (match) => match[1],
      );
      expect(steps).toEqual([
        'create',
        'setup-schema -v 0.0',
        'update-schema -d "/etc/temporal/schema/postgresql/v12/$$dir/versioned"',
      ]);
    });

    it('reads the same dynamic config file', () => {
      const mount =
        (service('temporal').volumes ?? []).find(
          (volume) => volume.split(':')[1] === '/etc/temporal/config/dynamicconfig',
        ) ?? '';
      const file = `${mount.split(':')[0]?.replace(/^\.\//, '')}/${environmentOf('temporal').DYNAMIC_CONFIG_FILE_PATH?.split('/').at(-1)}`;
      expect(new URL(file, root).pathname).toBe(new URL(DYNAMIC_CONFIG_FILE.slice(PROJECT_ROOT.length), root).pathname);
    });

    it('registers the namespace with the same retention and exactly the search attributes the worker upserts', () => {
      const setup = commandText('temporal-setup');
      expect(setup).toContain(`--retention ${NAMESPACE_RETENTION_HOURS}h`);
      const attributes = /for attribute in ([^;]+);/.exec(setup)?.[1]?.trim().split(/\s+/) ?? [];
      const cliType = {
        INT: 'Int',
        BOOL: 'Bool',
        KEYWORD: 'Keyword',
        TEXT: 'Text',
        DOUBLE: 'Double',
        DATETIME: 'Datetime',
        KEYWORD_LIST: 'KeywordList',
      } as const;
      expect(attributes).toEqual(
        Object.entries(COMPACTOR_SEARCH_ATTRIBUTES).map(([name, type]) => `${name}:${cliType[type]}`),
      );
    });
  });

  describe('worker service', () => {
    const known = new Set(configTable().map((row) => row.env));

    it('is built from the Dockerfile in the repository and can be scaled (no container_name)', () => {
      const worker = service('worker');
      expect(worker.build).toEqual({ context: '.', dockerfile: 'Dockerfile' });
      expect(existsSync(new URL('Dockerfile', root))).toBe(true);
      expect(worker.container_name).toBeUndefined();
    });

    it('sets only variables the configuration schema knows', () => {
      const unknown = Object.keys(environmentOf('worker')).filter((name) => !known.has(name));
      expect(unknown).toEqual([]);
    });

    it('sets the ones it needs to reach the server in the compose network', () => {
      const env = environmentOf('worker');
      expect(env.TEMPORAL_ADDRESS).toBe('temporal:7233');
      expect(env.TEMPORAL_NAMESPACE).toBe('default');
      expect(env.COMPACTOR_TASK_QUEUE).toBe('${COMPACTOR_TASK_QUEUE:-compactor}');
      // A blank TEMPORAL_API_KEY would read as a key in envconfig and turn TLS on: leave it out.
      expect(env).not.toHaveProperty('TEMPORAL_API_KEY');
    });

    it('loads with the shell environment empty: defaults, and the offline summarizer', () => {
      const config = loadConfig({ env: workerEnv() });
      expect(config).toMatchObject({
        temporalAddress: 'temporal:7233',
        temporalNamespace: 'default',
        taskQueue: 'compactor',
        summarizerTaskQueue: 'compactor',
        summarizer: 'auto',
        summarizerModel: 'gpt-4o-mini',
        summarizerTimeoutMs: 60_000,
        maxConcurrentActivities: 100,
        maxConcurrentWorkflowTasks: 40,
        openaiApiKey: undefined,
        openaiBaseUrl: undefined,
      });
      expect(summarizerFromConfig(config).kind).toBe('extractive');
    });

    it('passes the shell environment through, so an OpenAI-compatible server takes over', () => {
      const config = loadConfig({
        env: workerEnv({
          OPENAI_BASE_URL: 'http://host.docker.internal:11434/v1',
          COMPACTOR_SUMMARIZER_MODEL: 'qwen2.5:7b',
          COMPACTOR_SUMMARIZER_TASK_QUEUE: 'llm',
        }),
      });
      expect(config.openaiBaseUrl).toBe('http://host.docker.internal:11434/v1');
      expect(config.summarizerModel).toBe('qwen2.5:7b');
      expect(config.summarizerTaskQueue).toBe('llm');
      expect(summarizerFromConfig(config).kind).toBe('openai');
    });
  });
});

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');
  const instructions = dockerfile
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));

  it('builds on a pinned Node 20 Debian image (the SDK core bridge needs glibc)', () => {
    const bases = instructions.filter((line) => line.startsWith('FROM ')).map((line) => line.split(/\s+/)[1]);
    expect(bases.length).toBeGreaterThan(0);
    for (const base of bases) expect(base).toMatch(/^node:20\.\d+-(bookworm|bullseye)(-slim)?$/);
  });

  it('installs from the lockfile and builds with the project script', () => {
    expect(instructions).toContain('COPY package.json package-lock.json ./');
    expect(instructions.some((line) => /^RUN npm ci\b/.test(line))).toBe(true);
    expect(instructions.some((line) => /^RUN npm run build\b/.test(line))).toBe(true);
    const scripts = z
      .object({ scripts: z.record(z.string(), z.string()) })
      .parse(JSON.parse(read('package.json'))).scripts;
    // the build compiles src/ to dist/; the image then prebuilds the workflow bundle its worker starts from
    expect(scripts.build).toMatch(/^tsc -p tsconfig\.build\.json$/);
  });

  it('runs dist/worker/create-worker.js, which the build emits from src/worker/create-worker.ts', () => {
    const cmd = instructions.find((line) => line.startsWith('CMD '));
    const argv = z.array(z.string()).parse(JSON.parse((cmd ?? 'CMD null').slice(4)));
    expect(argv).toEqual(['node', 'dist/worker/create-worker.js']);
    const build = z
      .object({ compilerOptions: z.object({ outDir: z.string(), rootDir: z.string() }), include: z.array(z.string()) })
      .parse(JSON.parse(read('tsconfig.build.json')));
    expect(build.compilerOptions).toMatchObject({ outDir: 'dist', rootDir: 'src' });
    expect(build.include).toContain('src');
    const source = argv[1]?.replace(/^dist\//, 'src/').replace(/\.js$/, '.ts') ?? '';
    expect(existsSync(new URL(source, root)), `${source} (the worker entry point)`).toBe(true);
  });

  it('keeps secrets and local state out of the build context', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#'));
    for (const entry of ['.git', 'node_modules', 'dist', '.env', '.temporal']) expect(ignored).toContain(entry);
    for (const needed of ['src', 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json'])
      expect(ignored).not.toContain(needed);
  });
});
