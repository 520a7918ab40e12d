// Node only: the claims of the chunk store — what a history keeps in place of a stored payload.
// A claim is `{ m, k? }`: the manifest id's 32 bytes in base64url without padding (43 characters
// instead of 64 hex digits: every claim in every history pays for its length) and, when its objects
// are encrypted, the key id. Object names stay hex (object-format.ts).
import { ChunkIntegrityError } from './errors.js';
import { KEY_ID_PATTERN } from './keyring.js';

/** 32 bytes in base64url without padding: a claim's `m`. */
const CLAIM_ID_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export interface ClaimFields {
  /** The manifest's id in hex, as the store names objects. */
  manifestId: string;
  /** The key its objects are sealed with; undefined when they are not encrypted. */
  keyId: string | undefined;
}

/** The claim data of a manifest: `{ m }`, and `k` when its objects are encrypted. */
export function claimDataFor({ manifestId, keyId }: ClaimFields): Record<string, string> {
  const m = Buffer.from(manifestId, 'hex').toString('base64url');
  return keyId === undefined ? { m } : { m, k: keyId };
}

function parseClaim(claimData: Readonly<Record<string, unknown>>): ClaimFields | { problem: string } {
  const { m, k, ...rest } = claimData;
  const unknown = Object.keys(rest).sort();
  if (unknown.length > 0) return { problem: `has fields other than m and k (${unknown.join(', ')})` };
  if (m === undefined)
    return { problem: k === undefined ? 'has no manifest id (m)' : 'has a key id (k) but no manifest id (m)' };
  const bytes = typeof m === 'string' && CLAIM_ID_PATTERN.test(m) ? Buffer.from(m, 'base64url') : undefined;
  // Round-tripping refuses the other spellings of the same bytes (the unused low bits of the last character set).
  if (bytes === undefined || bytes.toString('base64url') !== m)
    return { problem: 'has an m that is not a manifest id (43 characters of base64url without padding)' };
  if (k !== undefined && (typeof k !== 'string' || !KEY_ID_PATTERN.test(k)))
    return { problem: "has a k that is not a key id (1-64 characters of A-Z, a-z, 0-9, '.', '_', '-')" };
  return { manifestId: bytes.toString('hex'), keyId: k };
}

/** What a claim's data names; a ChunkIntegrityError names the claim when it is not one. */
export function readClaim(claimData: Readonly<Record<string, unknown>>): ClaimFields {
  const parsed = parseClaim(claimData);
  if ('problem' in parsed)
    throw new ChunkIntegrityError(
      `claim ${JSON.stringify(claimData)}`,
      `is not a temporal-compactor claim: it ${parsed.problem}`,
    );
  return parsed;
}

/** The hex id of the manifest a claim's data names, or undefined when it is not a valid claim of the store. */
export function claimManifestId(claimData: Readonly<Record<string, unknown>>): string | undefined {
  const parsed = parseClaim(claimData);
  return 'problem' in parsed ? undefined : parsed.manifestId;
}
