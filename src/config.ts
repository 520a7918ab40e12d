// Node only: the one configuration schema — environment variables and CLI flags — shared by the
// worker, the CLI and the demo. A bad value stops start-up with a message naming the setting.
import { z } from 'zod';
import { durationTextMs } from './core/compaction/options.js';
import { redactUrls } from './redact.js';
import { KEY_BYTES, KeyFormatError, keyringFromSettings, type Keyring } from './payloads/keyring.js';
import { parsePayloadStore } from './payloads/store-location.js';
import {
  DEFAULT_CODEC_SERVER_HOST,
  DEFAULT_CODEC_SERVER_PORT,
  MAX_PAYLOAD_THRESHOLD,
} from './payloads/codec-server.js';

/** A setting's value as the environment or a flag parser gives it. */
export type RawSettingValue = string | number | boolean | undefined;

/** What a worker polls for: workflows and activities, or one kind only. */
export type WorkerModeSetting = 'all' | 'workflows' | 'activities';

/** Where spans go: nowhere, an OTLP/HTTP endpoint (the standard OTEL_EXPORTER_OTLP_* variables), or stderr. */
export type TracingSettingValue = 'off' | 'otlp' | 'console';

export const DEFAULT_TASK_QUEUE = 'compactor';
/** @default 'gpt-4o-mini' — a small, cheap model is usually a fine summarizer. */
export const DEFAULT_SUMMARIZER_MODEL = 'gpt-4o-mini';
export const DEFAULT_TEMPORAL_NAMESPACE = 'default';
/** @default 10 s for in-flight activities to finish when the worker shuts down */
export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;
/** @default 60 s for one summarize call */
export const DEFAULT_SUMMARIZER_TIMEOUT_MS = 60_000;
/** @default 120 s for one chat request of the agent loop */
export const DEFAULT_CHAT_TIMEOUT_MS = 120_000;
/** Where the OpenAI client sends requests when no base URL is configured. */
export const DEFAULT_OPENAI_BASE_URL = 'https://api.openai.com/v1';
/** A claim costs about 200 bytes of history: a larger payload takes less as a claim than inline (bench/README.md). */
export const DEFAULT_PAYLOAD_THRESHOLD = 256;
/** @default the origins of `temporal server start-dev`'s UI (port 8233), by name and by address. */
export const DEFAULT_CODEC_SERVER_ORIGINS: readonly string[] = ['http://localhost:8233', 'http://127.0.0.1:8233'];

// Value schemas: each takes what the environment or a flag parser gives.

const nonEmptyText = z.string().trim().min(1);

// A number, or its digits as the environment gives them.
const numeric = z.union([z.number(), z.string().trim().regex(/^\d+$/).transform(Number)]);

const integerIn = (minimum: number, maximum = Number.MAX_SAFE_INTEGER) =>
  numeric.pipe(z.number().int().min(minimum).max(maximum));

// envconfig reads TEMPORAL_TLS as true only for `1` and `true` (anything else is false), so
// accepting `yes` here would silently disagree with the connection it configures.
const flag = z.union([
  z.boolean(),
  z.enum(['true', 'false', '1', '0']).transform((value) => value === 'true' || value === '1'),
]);

// Text without a unit is milliseconds; NaN (not a duration) fails the range check.
const durationOf = (minimumMs: number) =>
  z
    .union([numeric, z.string().transform((value) => durationTextMs(value) ?? Number.NaN)])
    .pipe(z.number().finite().min(minimumMs))
    .transform(Math.round);

// No userinfo and no query: fetch refuses a URL with credentials (quoting it, password and all, in
// its error), and the clients append their paths to the base URL, after any query it has.
function bareHttpUrl(value: string): URL | undefined {
  const url = URL.canParse(value) ? new URL(value) : undefined;
  const bare = url?.username === '' && url.password === '' && url.search === '' && url.hash === '';
  return (url?.protocol === 'http:' || url?.protocol === 'https:') && bare ? url : undefined;
}

const httpUrl = nonEmptyText.refine((value) => bareHttpUrl(value) !== undefined);

/** A comma-separated list, each entry trimmed and mapped by `entry`; one undefined makes the list bad. */
const listOf = (entry: (text: string) => string | undefined) =>
  nonEmptyText.transform((value, context) => {
    const entries = value.split(',').map((text) => entry(text.trim()));
    if (entries.every((each) => each !== undefined)) return entries;
    context.addIssue({ code: 'custom', message: 'bad list' });
    return z.NEVER;
  });

// Browser origins (`scheme://host[:port]`, no path) for CORS, comma-separated; `*` for any origin.
const originList = nonEmptyText.pipe(
  z.union([
    z.literal('*').transform(() => ['*']),
    listOf((entry) => {
      const url = bareHttpUrl(entry);
      return url?.pathname === '/' ? url.origin : undefined;
    }),
  ]),
);

// Names of secret files the built-in tools may read (COMPACTOR_TOOLS_ALLOW), comma-separated: each a
// rule or a path relative to the tool root, so none absolute and none leading out of the root.
const allowList = listOf((entry) =>
  entry === '' || entry.startsWith('/') || /^[A-Za-z]:/.test(entry) || entry.split(/[\\/]/).includes('..')
    ? undefined
    : entry,
);

// host:port with an optional port (the SDK adds 7233); IPv6 hosts in brackets.
const hostPort = nonEmptyText.regex(/^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::\d{1,5})?$/);

// A socket address the SDK's metrics server binds: an IP (IPv6 in brackets) and a port, no host name.
const bindAddress = nonEmptyText.refine((value) => {
  const match = /^(?:(\d{1,3}(?:\.\d{1,3}){3})|\[([0-9A-Fa-f:.]+)\]):(\d{1,5})$/.exec(value);
  if (match === null) return false;
  const [, ipv4, , port] = match;
  if (ipv4 !== undefined && ipv4.split('.').some((part) => Number(part) > 255)) return false;
  return Number(port) >= 1 && Number(port) <= 65_535;
});

// The settings, in the README table's order. Each has a variable (`envOf`) and a flag, the
// kebab-case form of its key, but secrets: environment only (a flag shows up in process lists and
// shell history), never shown, and taken out of every failure that quotes them (`workerSecrets`).

interface Setting {
  /** What a valid value looks like: a failure reads `VARIABLE: expected <expected>, got "<value>"`. */
  expected: string;
  /** The default, as the README shows it. */
  defaultText: string;
  description: string;
  secret?: boolean;
  schema: z.ZodType;
}

const settings = {
  temporalAddress: {
    expected: 'host:port, e.g. localhost:7233',
    defaultText: '`localhost:7233`; the demo starts a local dev server when unset',
    description: 'Temporal frontend address; Temporal Cloud: `<namespace>.<account>.tmprl.cloud:7233`.',
    schema: hostPort.optional(),
  },
  temporalNamespace: {
    expected: 'a namespace name',
    defaultText: `\`${DEFAULT_TEMPORAL_NAMESPACE}\``,
    description: 'Temporal namespace.',
    schema: nonEmptyText.default(DEFAULT_TEMPORAL_NAMESPACE),
  },
  temporalApiKey: {
    expected: 'an API key',
    defaultText: '—',
    description: 'Temporal Cloud API key (environment only); turns TLS on unless `TEMPORAL_TLS=false`.',
    secret: true,
    schema: nonEmptyText.optional(),
  },
  temporalTls: {
    expected: 'true, false, 1 or 0',
    defaultText: 'on with an API key, else off',
    description: 'TLS to the frontend. Certificates: the `TEMPORAL_TLS_*` variables of `@temporalio/envconfig`.',
    schema: flag.optional(),
  },
  temporalCliPath: {
    expected: 'a path to the temporal CLI',
    defaultText: '`.temporal/`, then `temporal` on PATH',
    description: 'The `temporal` CLI that runs the local dev server (demo and tests).',
    schema: nonEmptyText.optional(),
  },
  taskQueue: {
    expected: 'a task queue name',
    defaultText: `\`${DEFAULT_TASK_QUEUE}\``,
    description: 'Task queue of the workflows (and of the activities, unless the next setting is set).',
    schema: nonEmptyText.default(DEFAULT_TASK_QUEUE),
  },
  summarizerTaskQueue: {
    expected: 'a task queue name',
    defaultText: 'the task queue',
    description:
      'Own task queue for summarize activities, so summarizer capacity and provider rate limits scale apart from the agents.',
    schema: nonEmptyText.optional(),
  },
  workerMode: {
    expected: '"all", "workflows" or "activities"',
    defaultText: '`all`',
    description:
      'What a worker polls for: `all`, or only `workflows` or only `activities` (e.g. a summarizer-only worker on its own queue).',
    schema: z.enum(['all', 'workflows', 'activities']).default('all'),
  },
  workflowBundle: {
    expected: 'a path to a prebuilt workflow bundle',
    defaultText: '— (bundled at start-up)',
    description:
      'A prebuilt workflow bundle (`temporal-compactor bundle --out FILE`), so workers start without bundling; with tracing on, one built with tracing.',
    schema: nonEmptyText.optional(),
  },
  shutdownGraceTime: {
    expected: 'a duration such as "10s", "500ms", "1m" or milliseconds',
    defaultText: `\`${DEFAULT_SHUTDOWN_GRACE_MS / 1000}s\``,
    description: 'On SIGINT/SIGTERM, how long in-flight activities may finish before they are cancelled.',
    schema: durationOf(0).default(DEFAULT_SHUTDOWN_GRACE_MS),
  },
  summarizer: {
    expected: '"auto", "openai" or "extractive"',
    defaultText: '`auto`',
    description:
      '`auto`: the OpenAI-compatible summarizer when `OPENAI_API_KEY` or `OPENAI_BASE_URL` is set, else the built-in offline extractive one; `openai` or `extractive` to choose.',
    schema: z.enum(['auto', 'openai', 'extractive']).default('auto'),
  },
  openaiBaseUrl: {
    expected: 'an http(s) URL without user:password@ or query, e.g. http://localhost:11434/v1',
    defaultText: `\`${DEFAULT_OPENAI_BASE_URL}\``,
    description:
      "Any OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp), usually ending in `/v1`: the summarizer's, and the agent loop's chat (`provider: 'openai'`).",
    schema: httpUrl.optional(),
  },
  openaiApiKey: {
    expected: 'an API key',
    defaultText: '—',
    description: 'The API key of that server (environment only); local servers need none.',
    secret: true,
    schema: nonEmptyText.optional(),
  },
  summarizerModel: {
    expected: 'a model name',
    defaultText: `\`${DEFAULT_SUMMARIZER_MODEL}\``,
    description: 'The model that writes summaries.',
    schema: nonEmptyText.default(DEFAULT_SUMMARIZER_MODEL),
  },
  summarizerTimeout: {
    expected: 'a positive duration such as "60s", "500ms", "2m" or milliseconds',
    defaultText: `\`${DEFAULT_SUMMARIZER_TIMEOUT_MS / 1000}s\``,
    description: "Deadline of one summarize call; keep it below the activity's `startToCloseTimeout` (5 min).",
    schema: durationOf(1).default(DEFAULT_SUMMARIZER_TIMEOUT_MS),
  },
  summarizerMaxTokens: {
    expected: 'a positive integer (tokens)',
    defaultText: "derived from the summary's room",
    description:
      "The most tokens a summary may take, sent as the OpenAI summarizer's max tokens with every request instead of what each request derives from the summary's room in the compacted conversation (docs/design.md#summary-length).",
    schema: integerIn(1).optional(),
  },
  chatTimeout: {
    expected: 'a positive duration such as "120s", "500ms", "2m" or milliseconds',
    defaultText: `\`${DEFAULT_CHAT_TIMEOUT_MS / 1000}s\``,
    description:
      "Deadline of one chat request of an agent run (`provider: 'openai'`); keep it below the chat activity's `startToCloseTimeout`.",
    schema: durationOf(1).default(DEFAULT_CHAT_TIMEOUT_MS),
  },
  maxConcurrentActivities: {
    expected: 'a positive integer',
    defaultText: "the SDK's (100)",
    description: 'Activities (summarize calls, chat, tools) one worker runs at once.',
    schema: integerIn(1).optional(),
  },
  maxConcurrentWorkflowTasks: {
    expected: 'an integer of at least 2',
    defaultText: "the SDK's (40)",
    description: 'Workflow tasks one worker runs at once (the SDK needs at least 2 while it caches workflows).',
    schema: integerIn(2).optional(),
  },
  contextBudget: {
    expected: 'a positive integer (tokens)',
    defaultText: "the run's own",
    description: 'Context window in tokens for agent runs started from the CLI or the demo.',
    schema: integerIn(1).optional(),
  },
  summarizerContextWindow: {
    expected: 'an integer of at least 1024 (tokens)',
    defaultText: 'unset (one request)',
    description:
      "The summarizer's own context window in tokens (docs/design.md#summarizer-window): the worker's `summarize` activity refuses a request over it (Summarizer.ContextOverflow) and the compaction cuts the middle to fit; compactions and agent runs started from the CLI or the demo also get it as their `summarizerContextWindow` option.",
    schema: integerIn(1024).optional(),
  },
  toolsRoot: {
    expected: 'a directory path',
    defaultText: '— (the built-in tools read nothing)',
    description:
      'The directory the built-in tools (`fs_read`, `fs_list`, `grep`) may read; paths resolving outside it are refused, and so are secret files in it ([the rules](agent-runs.md#secret-files)). Unset, every call of theirs is refused: no directory is safe to hand a model by default.',
    schema: nonEmptyText.optional(),
  },
  toolsAllow: {
    expected:
      'comma-separated rules of the secret files (e.g. *.pem) or paths relative to the tool root (e.g. config/dev.pem), none absolute, with no ".."',
    defaultText: '— (no secret file is read)',
    description:
      'Secret files under the tool root the built-in tools may read after all: a rule as [the rules](agent-runs.md#secret-files) write it (`*.pem`: that rule no longer applies), or a path relative to the root (`.env.example`: that file, or that directory and what is under it).',
    schema: allowList.default(() => []),
  },
  trajectoryDir: {
    expected: 'a directory path',
    defaultText: 'the current directory',
    description: "Where the replay provider (`provider: 'replay'`) finds recorded trajectories by name (`NAME.json`).",
    schema: nonEmptyText.optional(),
  },
  payloadStore: {
    expected: '"off", "file:DIR" or "s3://BUCKET/PREFIX" (a valid S3 bucket name)',
    defaultText: '`off`; the demo: `file:.payload-store` in the project',
    description:
      "Where payloads of at least `COMPACTOR_PAYLOAD_THRESHOLD` bytes go (Temporal's External Storage): history keeps a claim of about 200 bytes (193, 210 with a key), the store content-addressed chunks. Worker, clients and the CLI must all see the same store.",
    schema: z
      .string()
      .transform((value, context) => {
        const location = parsePayloadStore(value);
        if (location === undefined) context.addIssue({ code: 'custom', message: 'bad payload store' });
        return location ?? { kind: 'off' as const };
      })
      .optional(),
  },
  payloadThreshold: {
    expected: `a byte count from 0 to ${MAX_PAYLOAD_THRESHOLD}`,
    defaultText: `\`${DEFAULT_PAYLOAD_THRESHOLD}\``,
    description:
      'Payloads of at least this many bytes go to the store (a claim in history is about 200 bytes); smaller ones stay inline, compressed from 512 bytes, encrypted with a key.',
    schema: integerIn(0, MAX_PAYLOAD_THRESHOLD).default(DEFAULT_PAYLOAD_THRESHOLD),
  },
  s3Endpoint: {
    expected: 'an http(s) URL without user:password@ or query, e.g. http://127.0.0.1:9000',
    defaultText: 'AWS S3',
    description:
      'An S3-compatible server for `s3://` stores (path-style requests). Credentials and region: the usual `AWS_*` variables.',
    schema: httpUrl.optional(),
  },
  codecKey: {
    expected: `base64 of exactly ${KEY_BYTES} random bytes, e.g. from \`openssl rand -base64 32\``,
    defaultText: '— (no encryption)',
    description:
      'AES-256-GCM key (environment only) for inline payloads and stored chunks. Clients and workers need the same key.',
    secret: true,
    schema: nonEmptyText.optional(),
  },
  codecKeyId: {
    expected: '1-64 characters of A-Z, a-z, 0-9, ".", "_" or "-", with COMPACTOR_CODEC_KEY set',
    defaultText: '`k-` + 8 hex digits of a hash of the key',
    description: 'The id written beside every ciphertext, so decoding finds the right key after a rotation.',
    schema: nonEmptyText.optional(),
  },
  codecOldKeys: {
    expected: `comma-separated ID:BASE64 entries (ID optional) of ${KEY_BYTES}-byte keys, with COMPACTOR_CODEC_KEY set`,
    defaultText: '—',
    description:
      'Retired keys (environment only), for decoding only: rotate by moving the old key here and setting a new `COMPACTOR_CODEC_KEY`.',
    secret: true,
    schema: nonEmptyText.optional(),
  },
  codecServerHost: {
    expected: 'a host name or IP address to listen on, e.g. 127.0.0.1',
    defaultText: `\`${DEFAULT_CODEC_SERVER_HOST}\``,
    description:
      'Where `temporal-compactor codec-server` listens. It hands out decrypted payloads: beyond this machine, set a token and put TLS in front.',
    schema: nonEmptyText.default(DEFAULT_CODEC_SERVER_HOST),
  },
  codecServerPort: {
    expected: 'a port number from 0 to 65535 (0: any free port)',
    defaultText: `\`${DEFAULT_CODEC_SERVER_PORT}\`; the demo: a free port`,
    description: "The codec server's port; the Temporal UI's codec endpoint is `http://HOST:PORT`.",
    schema: integerIn(0, 65_535).default(DEFAULT_CODEC_SERVER_PORT),
  },
  codecServerOrigins: {
    expected:
      'comma-separated origins such as http://localhost:8233,https://cloud.temporal.io (scheme, host and port, no path), or *',
    defaultText: `\`${DEFAULT_CODEC_SERVER_ORIGINS.join(',')}\`; the demo: its UI`,
    description: "Browser origins (the Temporal UI's) the codec server answers (CORS); `*` answers any web page.",
    schema: originList.default(() => [...DEFAULT_CODEC_SERVER_ORIGINS]),
  },
  codecServerInlineLimit: {
    expected: 'a byte count',
    defaultText: `\`${MAX_PAYLOAD_THRESHOLD}\` (2 MiB, what history holds inline without a store)`,
    description:
      'The Temporal UI asks the codec server to keep claims (`preserveStorageRefs`) and offers them as downloads; claims of payloads up to this size are resolved anyway, so the event history shows the conversation.',
    schema: integerIn(0).default(MAX_PAYLOAD_THRESHOLD),
  },
  codecServerToken: {
    expected: "a token of 16 to 256 characters of A-Z, a-z, 0-9, '-', '_', '.' or '~'",
    defaultText: '— (a new random token at every start, printed once in the endpoint URL)',
    description:
      "The token (environment only) the codec server requires on every request: in its endpoint's path (`http://HOST:PORT/TOKEN`, what the Temporal UI's codec endpoint setting holds) or as `Authorization: Bearer TOKEN` (the `temporal` CLI's `--codec-auth`). Set it so the endpoint survives a restart.",
    secret: true,
    schema: nonEmptyText.pipe(z.string().regex(/^[A-Za-z0-9._~-]{16,256}$/)).optional(),
  },
  codecServerEncodeStore: {
    expected: 'true, false, 1 or 0',
    defaultText: '`false`',
    description:
      "Let the codec server's `/encode` write to the payload store (large payloads become claims, as a worker stores them). Off, it only compresses and encrypts: what the UI sends goes into history inline.",
    schema: flag.default(false),
  },
  tracing: {
    expected: '"off", "otlp" or "console"',
    defaultText: '`off`',
    schema: z.enum(['off', 'otlp', 'console']).default('off'),
    description:
      "OpenTelemetry spans of the worker (its workflows, a `Compaction` span per compaction, its activities) and of the clients `compactorPlugin()` is given to (the demo's among them): `otlp` sends them over OTLP/HTTP to the endpoint of the standard `OTEL_EXPORTER_OTLP_*` variables (default `http://localhost:4318`), `console` writes JSON lines to stderr. See [telemetry.md](telemetry.md).",
  },
  prometheusAddress: {
    expected: 'an IP address and port, e.g. 127.0.0.1:9464',
    defaultText: '— (no endpoint)',
    schema: bindAddress.optional(),
    description:
      "Serve the worker's metrics (the SDK's, and compactions, tokens reclaimed, fallbacks, summarizer latency, failures by type) for Prometheus at `http://ADDRESS/metrics`.",
  },
} as const satisfies Record<string, Setting>;

const SETTING_KEYS: readonly SettingKey[] = Object.keys(settings).filter(isSettingKey);

/** The camelCase name of a setting; its flag is the kebab-case form (`taskQueue` → `--task-queue`). */
export type SettingKey = keyof typeof settings;

/** The settings a CLI flag can set (secrets are environment only). */
export type FlagKey = { [K in SettingKey]: (typeof settings)[K] extends { secret: true } ? never : K }[SettingKey];

/** CLI flags by setting key, e.g. `{ taskQueue: 'agents' }` for `--task-queue agents`. Flags override the environment. */
export type ConfigFlags = Partial<Record<FlagKey, RawSettingValue>>;

// TypeScript cannot follow a mapped type through Object.fromEntries, hence the one assertion.
const configSchema = z.object(
  Object.fromEntries(SETTING_KEYS.map((key) => [key, settings[key].schema])) as {
    [K in SettingKey]: (typeof settings)[K]['schema'];
  },
);

/** Every setting's parsed value by setting key (`readSettings`' result for all of them). */
export type SettingValues = z.output<typeof configSchema>;

/** The typed configuration: every setting, durations as `…Ms`, the codec keys as one keyring; `undefined` means not configured. */
export type CompactorConfig = ReturnType<typeof loadConfig>;

/** A setting has a bad value. `setting` is what the user wrote: the env var or the `--flag`. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly setting: string,
    readonly expected: string,
    /** The value given; `undefined` for secrets, which are never echoed. */
    readonly value: RawSettingValue,
  ) {
    // A URL's userinfo and query values are not shown either: a bad endpoint may still carry a password.
    super(
      `${setting}: expected ${expected}, got ${value === undefined ? 'an invalid value (not shown)' : redactUrls(JSON.stringify(value))}`,
    );
  }
}

export interface LoadConfigOptions {
  /** @default process.env */
  env?: Readonly<Record<string, string | undefined>>;
  /** CLI flags by setting key; they override the environment. @default {} */
  flags?: ConfigFlags;
}

function isSet(value: RawSettingValue): value is string | number | boolean {
  return value !== undefined && !(typeof value === 'string' && value.trim() === '');
}

/** The raw values (a flag wins over the environment; blank counts as unset) and who gave each. */
function rawSettings(keys: readonly SettingKey[], { env = process.env, flags = {} }: LoadConfigOptions) {
  const raw: Partial<Record<SettingKey, RawSettingValue>> = {};
  const source: Partial<Record<SettingKey, string>> = {};
  const flagValues: Partial<Record<string, RawSettingValue>> = flags;
  for (const key of keys) {
    const flag = flagOf(key);
    const fromFlag = flag === undefined ? undefined : flagValues[key];
    const [value, from] = isSet(fromFlag) ? [fromFlag, `--${flag}`] : [env[envOf(key)], envOf(key)];
    raw[key] = isSet(value) ? value : undefined; // so the parsed configuration has every key
    if (isSet(value)) source[key] = from;
  }
  return { raw, source };
}

type RawSettings = ReturnType<typeof rawSettings>;

/** Parses `keys` of the raw values, or throws a ConfigError naming the first bad one. */
function parseSettings<K extends SettingKey>(keys: readonly K[], { raw, source }: RawSettings): Pick<SettingValues, K> {
  const mask: Partial<Record<SettingKey, true>> = Object.fromEntries(keys.map((key) => [key, true] as const));
  const parsed = configSchema.pick(mask).safeParse(raw);
  if (parsed.success) return parsed.data;
  const key = parsed.error.issues.map((issue) => issue.path[0]).find(isSettingKey);
  if (key === undefined) throw new ConfigError('configuration', 'valid settings', undefined);
  throw settingError(key, { raw, source });
}

/** A ConfigError naming `key` as the user gave it, and its value unless it is a secret. */
function settingError(key: SettingKey, { raw, source }: RawSettings, expected?: string): ConfigError {
  const setting: Setting = settings[key];
  const value = setting.secret === true ? undefined : raw[key];
  return new ConfigError(source[key] ?? envOf(key), expected ?? setting.expected, value);
}

/** Reads some settings only, for code that must not fail over an unrelated bad setting. @throws ConfigError */
export function readSettings<K extends SettingKey>(
  keys: readonly K[],
  options: LoadConfigOptions = {},
): Pick<SettingValues, K> {
  return parseSettings(keys, rawSettings(keys, options));
}

/**
 * Reads the configuration from the environment and CLI flags (flags win; a blank value counts as
 * unset, as `KEY=` in a compose file means), applies the defaults and validates every setting.
 * @throws ConfigError naming the first bad setting as the user wrote it (env var or `--flag`).
 */
export function loadConfig(options: LoadConfigOptions = {}) {
  const given = rawSettings(SETTING_KEYS, options);
  const values = parseSettings(SETTING_KEYS, given);
  if (values.summarizer === 'openai' && values.openaiApiKey === undefined && values.openaiBaseUrl === undefined) {
    const expected = '"auto" or "extractive" when neither OPENAI_API_KEY nor OPENAI_BASE_URL is set';
    throw settingError('summarizer', given, expected);
  }
  const {
    shutdownGraceTime,
    summarizerTimeout,
    chatTimeout,
    codecKey,
    codecKeyId,
    codecOldKeys,
    summarizerTaskQueue,
    ...unchanged
  } = values;
  let codecKeyring: Keyring | undefined;
  try {
    codecKeyring = keyringFromSettings({ key: codecKey, keyId: codecKeyId, oldKeys: codecOldKeys });
  } catch (error) {
    if (!(error instanceof KeyFormatError)) throw error;
    const key = SETTING_KEYS.find((candidate) => envOf(candidate) === error.setting) ?? 'codecKey';
    throw settingError(key, given, error.expected);
  }
  return {
    ...unchanged,
    /** The queue summarize activities run on; equals `taskQueue` unless configured apart. */
    summarizerTaskQueue: summarizerTaskQueue ?? values.taskQueue,
    shutdownGraceMs: shutdownGraceTime,
    summarizerTimeoutMs: summarizerTimeout,
    chatTimeoutMs: chatTimeout,
    /** The codec keys (current and retired); `undefined`: no encryption. Secret: never print it. */
    codecKeyring,
  };
}

/** A setting's variable: its key in SNAKE_CASE, prefixed `COMPACTOR_` unless it is Temporal's or OpenAI's own. */
function envOf(key: SettingKey): string {
  const name = key.replace(/[A-Z]/g, (letter) => `_${letter}`).toUpperCase();
  return /^(TEMPORAL|OPENAI)_/.test(name) ? name : `COMPACTOR_${name}`;
}

/** The CLI flag without `--`; undefined for secrets. */
function flagOf(key: SettingKey): string | undefined {
  const setting: Setting = settings[key];
  return setting.secret === true ? undefined : key.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);
}

function isSettingKey(value: unknown): value is SettingKey {
  return typeof value === 'string' && Object.hasOwn(settings, value);
}

/** Secrets the libraries we configure read from the environment themselves (AWS, OpenTelemetry, envconfig). */
export const LIBRARY_SECRET_VARIABLES = [
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
  'TEMPORAL_TLS_CLIENT_KEY_DATA',
] as const;

export function secretVariables(): string[] {
  const secrets = SETTING_KEYS.filter((key) => (settings[key] as Setting).secret === true);
  return [...secrets.map(envOf), ...LIBRARY_SECRET_VARIABLES];
}

/** Shorter values are not treated as secrets: placeholders such as `unused` would be replaced everywhere. */
const MIN_SECRET_LENGTH = 8;
/** A part of a secret list is redacted alone from this length: a short part may be an ordinary word. */
const MIN_SECRET_PART_LENGTH = 16;

/** A secret's value as it could be quoted: whole, and each long enough entry of a list, its value and its words. */
function quotableParts(value: string): string[] {
  const entries = value.split(',').map((entry) => entry.trim());
  const parts = entries.flatMap((entry) => {
    const equals = entry.indexOf('=');
    const colon = entry.lastIndexOf(':');
    const values = [equals < 0 ? '' : entry.slice(equals + 1), colon < 0 ? '' : entry.slice(colon + 1)];
    return [entry, ...values, ...values.flatMap((part) => part.split(/\s+/))].map((part) => part.trim());
  });
  return [value.trim(), ...parts.filter((part) => part.length >= MIN_SECRET_PART_LENGTH)];
}

/** The secret values to keep out of failures and logs: those of `env`, plus `extra` (a client's own key). */
export function workerSecrets(
  extra: ReadonlyArray<string | null | undefined> = [],
  env: Readonly<Record<string, string | undefined>> = process.env,
): string[] {
  const values = [
    ...secretVariables().flatMap((name) => quotableParts(env[name] ?? '')),
    ...extra.map((value) => value?.trim()),
  ];
  return [
    ...new Set(values.filter((value): value is string => value !== undefined && value.length >= MIN_SECRET_LENGTH)),
  ];
}

export function configParseArgsOptions(): Record<string, { type: 'string' }> {
  const names = SETTING_KEYS.flatMap((key) => flagOf(key) ?? []);
  return Object.fromEntries(names.map((name) => [name, { type: 'string' as const }]));
}

/** Picks the configuration flags out of `parseArgs` values (kebab-case keys); other flags are ignored. */
export function configFlagsFromArgs(values: Readonly<Record<string, unknown>>): ConfigFlags {
  const given = SETTING_KEYS.map((key) => [key, values[flagOf(key) ?? '']] as const);
  const isValue = (entry: (typeof given)[number]): entry is [SettingKey, RawSettingValue & {}] =>
    ['string', 'number', 'boolean'].includes(typeof entry[1]);
  return Object.fromEntries(given.filter(isValue));
}

export const TEMPORAL_SETTING_KEYS = ['temporalAddress', 'temporalNamespace', 'temporalApiKey', 'temporalTls'] as const;

/** How to reach Temporal: a whole configuration, or just these settings (`readSettings(TEMPORAL_SETTING_KEYS)`). */
export type TemporalSettings = Pick<CompactorConfig, (typeof TEMPORAL_SETTING_KEYS)[number]>;

/**
 * Environment for `@temporalio/envconfig` carrying the configuration over `env`'s other variables;
 * blank ones are dropped (envconfig reads a blank `TEMPORAL_API_KEY` as a key).
 */
export function temporalEnvVars(
  config: TemporalSettings,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Record<string, string> {
  const ours = {
    TEMPORAL_ADDRESS: config.temporalAddress,
    TEMPORAL_NAMESPACE: config.temporalNamespace,
    TEMPORAL_API_KEY: config.temporalApiKey,
    TEMPORAL_TLS: config.temporalTls === undefined ? undefined : String(config.temporalTls),
  };
  const entries = Object.entries({ ...env, ...ours });
  return Object.fromEntries(entries.filter((entry): entry is [string, string] => (entry[1]?.trim() ?? '') !== ''));
}

/** The rows of the README's configuration table; `flag` is undefined for environment-only secrets. */
export function configTable() {
  return SETTING_KEYS.map((key) => {
    const { defaultText, description }: Setting = settings[key];
    const flag = flagOf(key);
    return {
      key,
      env: envOf(key),
      flag: flag === undefined ? undefined : `--${flag}`,
      default: defaultText,
      description,
    };
  });
}
