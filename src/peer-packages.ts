// Node only: what must be installed beside this package. Optional peers (S3 store, OpenTelemetry) are
// loaded when a setting asks for their part; a missing one fails at start naming the install command.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { decodeReferencePayload, encodeReferencePayload } from '@temporalio/common/lib/internal-non-workflow/index.js';
import { isRecord } from './core/schema.js';

const require = createRequire(import.meta.url);

/** Loads a CommonJS module from where this package is installed (the user's node_modules). */
const load: <T>(name: string) => T = require;

/** The version ranges of our optional peers, from the package.json this module was installed with. */
function peerRanges(): Record<string, unknown> {
  try {
    const manifest: unknown = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    return isRecord(manifest) && isRecord(manifest.peerDependencies) ? manifest.peerDependencies : {};
  } catch {
    return {};
  }
}

/** What is installed cannot serve what the configuration asks for (exit 2, as a bad setting). */
export abstract class InstallError extends Error {}

/** A setting asked for a part whose optional peer dependencies are not installed. */
export class MissingPeerError extends InstallError {
  override readonly name = 'MissingPeerError';
  constructor(
    readonly packages: readonly string[],
    /** As the user gave it (`COMPACTOR_TRACING=otlp`). */
    readonly setting: string,
  ) {
    const ranges = peerRanges();
    const install = packages.map((name) => (typeof ranges[name] === 'string' ? `${name}@${ranges[name]}` : name));
    super(
      `${setting} needs ${packages.join(', ')}, not installed beside temporal-compactor: npm install ${install.map((spec) => (/[\s<>^|*]/.test(spec) ? `'${spec}'` : spec)).join(' ')}`,
    );
  }
}

function installed(name: string): boolean {
  try {
    require.resolve(name);
    return true;
  } catch {
    return false;
  }
}

/** @throws MissingPeerError naming every one of `packages` that is not installed. */
export function assertPeersInstalled(packages: readonly string[], setting: string): void {
  const missing = packages.filter((name) => !installed(name));
  if (missing.length > 0) throw new MissingPeerError(missing, setting);
}

/** The CommonJS module `name`, one of the optional peers `group` that `setting` needs. @throws MissingPeerError */
export function requirePeer<T>(name: string, setting: string, group: readonly string[] = [name]): T {
  assertPeersInstalled(group, setting);
  return load<T>(name);
}

/** The resolved path of `request` in an optional peer (`setting` needs `packageName`). */
export function resolvePeer(request: string, packageName: string, setting: string): string {
  assertPeersInstalled([packageName], setting);
  return require.resolve(request);
}

/**
 * The SDK's packages load several protobufjs, so it cannot encode claims: with SDK 1.23+, `@grpc/grpc-js`
 * hoists protobufjs 7 and each `@temporalio/*` gets its own 8, unless the project depends on 8 itself.
 */
export class ProtobufCopiesError extends InstallError {
  override readonly name = 'ProtobufCopiesError';
  constructor(
    readonly setting: string,
    options?: { cause?: unknown },
  ) {
    super(
      `${setting} needs the Temporal SDK's packages to share one protobufjs, and they load several here (npm ls protobufjs), so the SDK cannot encode a payload store's claims: add it to your project (npm install protobufjs@^8.8.1, for Temporal SDK 1.23 and newer)`,
      options,
    );
  }
}

let claimsChecked = false;

/** Encodes and decodes one claim as the SDK's External Storage does, once per process. @throws ProtobufCopiesError */
export function assertSdkEncodesClaims(setting: string): void {
  if (claimsChecked) return;
  try {
    const payload = encodeReferencePayload({ driverName: 'check', claim: { claimData: { key: 'k' } }, sizeBytes: 1 });
    if (decodeReferencePayload(payload).claimData.key !== 'k') throw new Error('the claim did not read back');
  } catch (error) {
    throw new ProtobufCopiesError(setting, { cause: error });
  }
  claimsChecked = true;
}
