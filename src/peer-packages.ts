// Node only: what must be installed beside this package. The optional peer dependencies — packages
// a user installs only for the part that needs them (the S3 payload store, OpenTelemetry tracing) —
// are loaded when a setting asks for that part, never before; one that is missing then is a
// MissingPeerError naming the packages, the setting and the install command, at start rather than
// at first use. And the payload store needs the Temporal SDK's packages to share one protobufjs.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { decodeReferencePayload, encodeReferencePayload } from '@temporalio/common/lib/internal-non-workflow/index.js';

const require = createRequire(import.meta.url);

/** Loads a CommonJS module by name from where this package is installed (so from the user's node_modules). */
const load: <T>(name: string) => T = require;

/** The version ranges of our optional peers, from the package.json this module was installed with. */
function peerRanges(): Record<string, string> {
  try {
    const manifest: unknown = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    const peers: unknown =
      typeof manifest === 'object' && manifest !== null ? Reflect.get(manifest, 'peerDependencies') : undefined;
    if (typeof peers !== 'object' || peers === null) return {};
    return Object.fromEntries(
      Object.entries(peers).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
    );
  } catch {
    return {};
  }
}

/** What is installed beside this package cannot serve what the configuration asks for (exit 2 on the command line, as a bad setting). */
export abstract class InstallError extends Error {}

/** A setting asked for a part whose optional peer dependencies are not installed. */
export class MissingPeerError extends InstallError {
  override readonly name = 'MissingPeerError';
  constructor(
    /** The packages that are missing. */
    readonly packages: readonly string[],
    /** The setting that asked for them, as the user gave it (`COMPACTOR_TRACING=otlp`). */
    readonly setting: string,
  ) {
    const ranges = peerRanges();
    const install = packages.map((name) => (ranges[name] === undefined ? name : `${name}@${ranges[name]}`));
    super(
      `${setting} needs ${packages.join(', ')}, not installed beside temporal-compactor: npm install ${install.map((spec) => (/[\s<>^|*]/.test(spec) ? `'${spec}'` : spec)).join(' ')}`,
    );
  }
}

/** True when `name` resolves from where this package is installed. */
function installed(name: string): boolean {
  try {
    require.resolve(name);
    return true;
  } catch {
    return false;
  }
}

/** @throws MissingPeerError naming every one of `packages` that is not installed, and `setting`. */
export function assertPeersInstalled(packages: readonly string[], setting: string): void {
  const missing = packages.filter((name) => !installed(name));
  if (missing.length > 0) throw new MissingPeerError(missing, setting);
}

/**
 * The CommonJS module `name`, one of the optional peers `setting` needs (`group`, checked together
 * so the error names every missing one).
 *
 * @throws MissingPeerError when one of them is not installed.
 */
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
 * The Temporal SDK's packages load more than one protobufjs, so the SDK cannot write or read a
 * payload store's claims. With SDK 1.23 and newer, `@grpc/grpc-js` brings protobufjs 7 to the top
 * of `node_modules` and `@temporalio/common`, `@temporalio/proto` and `@temporalio/worker` each get a
 * protobufjs 8 of their own; a project that depends on protobufjs 8 itself has one copy at the top,
 * which they share.
 */
export class ProtobufCopiesError extends InstallError {
  override readonly name = 'ProtobufCopiesError';
  constructor(
    /** The setting that turned the payload store on (`COMPACTOR_PAYLOAD_STORE=file:...`). */
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

/**
 * Encodes and decodes one claim as the SDK's External Storage does, once per process.
 *
 * @throws ProtobufCopiesError when the SDK's packages load different copies of protobufjs.
 */
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
