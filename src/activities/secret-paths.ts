// Node only (activities, and grep's search thread, which loads it beside itself: no imports): the
// files the built-in tools never read unless allowed by name (docs/agent-runs.md#secret-files). What a
// tool reads goes to history and the provider, and a prompt injection can ask for anything.

/** One rule: a pattern of path segments (`*` within a segment), and what such files hold. */
export interface SecretPathRule {
  /** One segment (`.env`, `*.pem`) or consecutive segments (`.config/gcloud`), matched anywhere in a path, case-insensitively. */
  pattern: string;
  holds: string;
}

const rules = (holds: string, patterns: readonly string[]): SecretPathRule[] =>
  patterns.map((pattern) => ({ pattern, holds }));

/** A path matches when consecutive segments of it match a rule's: `.git` refuses `.git/config`. */
export const SECRET_PATH_RULES: readonly SecretPathRule[] = [
  ...rules('dotenv files', ['.env', '.env.*', '*.env', '.envrc']),
  ...rules('version control metadata and credentials', ['.git', '.git-credentials']),
  ...rules('SSH and GPG keys', ['.ssh', '.gnupg', 'id_rsa*', 'id_dsa*', 'id_ecdsa*', 'id_ed25519*']),
  ...rules('private keys and key stores', [
    '*.pem',
    '*.key',
    '*.p12',
    '*.pfx',
    '*.jks',
    '*.keystore',
    '*.ppk',
    '*.kdbx',
  ]),
  ...rules('package registry credentials', ['.npmrc', '.yarnrc.yml', '.pypirc']),
  ...rules('login credentials', ['.netrc', '_netrc', '.pgpass', '.htpasswd', '.vault-token']),
  ...rules('cloud credentials', [
    '.aws',
    '.azure',
    '.config/gcloud',
    '.docker/config.json',
    '.kube/config',
    '.s3cfg',
    '.boto',
    'credentials',
    'credentials.json',
  ]),
  ...rules('infrastructure state', ['*.tfstate', '*.tfstate.backup']),
];

const segmentsOf = (path: string): string[] =>
  path.split(/[\\/]+/).filter((segment) => segment !== '' && segment !== '.');

const globPattern = (segment: string): RegExp =>
  new RegExp(`^${segment.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`, 'i');

const COMPILED = SECRET_PATH_RULES.map((rule) => ({ rule, segments: segmentsOf(rule.pattern).map(globPattern) }));

/**
 * The rule `path` (relative to the tool root) matches, unless `allow` lets it through: an entry is a
 * rule's pattern (that rule no longer applies) or a path relative to the root (it and what is under it).
 */
export function secretRuleFor(path: string, allow: readonly string[] = []): SecretPathRule | undefined {
  const segments = segmentsOf(path);
  if (allow.some((entry) => startsWith(segments, segmentsOf(entry)))) return undefined;
  for (const { rule, segments: pattern } of COMPILED) {
    if (allow.includes(rule.pattern)) continue;
    for (let start = 0; start + pattern.length <= segments.length; start += 1)
      if (pattern.every((segment, offset) => segment.test(segments[start + offset] ?? ''))) return rule;
  }
  return undefined;
}

/** Whether `allow` names a path under the directory `path` (relative to the root): a walk must then enter it. */
export function allowsBeneath(path: string, allow: readonly string[]): boolean {
  const segments = segmentsOf(path);
  return allow.some((entry) => {
    const allowed = segmentsOf(entry);
    return allowed.length > segments.length && startsWith(allowed, segments);
  });
}

function startsWith(segments: readonly string[], prefix: readonly string[]): boolean {
  return (
    prefix.length > 0 && prefix.length <= segments.length && prefix.every((part, index) => segments[index] === part)
  );
}
