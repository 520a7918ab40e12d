// Node only: the claims of the chunk store — what a history keeps in place of a stored payload.
// A claim is `{ m, k? }`: the manifest id in base64url and the key id (format 2, what every writer
// writes by default); claims of format 1, `{ manifest, keyId? }` with the id in hex, stay readable.
// Object names stay hex in both (object-format.ts): only the claim's text is shorter, by 28 bytes
// (32 with a key), which every claim in every history pays.
import { ChunkIntegrityError } from './errors.js';
import { KEY_ID_PATTERN } from './keyring.js';
import { OBJECT_ID_PATTERN } from './object-format.js';

/** 32 bytes in base64url without padding: a format-2 claim's `m`. */
const CLAIM_ID_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** What a claim of the store names, whichever format it was written in. */
export interface ClaimFields {
  /** The manifest's id in hex, as the store names objects. */
  manifestId: string;
  /** The key its objects are sealed with; undefined when they are not encrypted. */
  keyId: string | undefined;
}

/** The claim formats: 2, written by default, and 1, written before it (every reader reads both). */
export type ClaimFormat = 1 | 2;

/**
 * The claim data this driver writes. Format 2 (the default): `{ m }`, the manifest id's 32 bytes in
 * base64url without padding (43 characters instead of 64 hex digits), and `k`, the key id, when
 * encrypted; the short field names and the shorter id save 28 bytes of every claim (32 with a
 * key). Format 1: `{ manifest, keyId? }` with the id in hex, what workers from before format 2 read.
 */
export function claimDataFor({ manifestId, keyId }: ClaimFields, format: ClaimFormat = 2): Record<string, string> {
  if (format === 1) return keyId === undefined ? { manifest: manifestId } : { manifest: manifestId, keyId };
  const m = Buffer.from(manifestId, 'hex').toString('base64url');
  return keyId === undefined ? { m } : { m, k: keyId };
}

/** The fields of a claim, or why it is not one of ours. */
function parseClaim(claimData: Readonly<Record<string, unknown>>): ClaimFields | { problem: string } {
  const { m, k, manifest, keyId } = claimData;
  const formatTwo = m !== undefined || k !== undefined;
  const formatOne = manifest !== undefined || keyId !== undefined;
  // No writer ever mixed them: a claim that does was made by hand or altered, and which field wins would be a guess.
  if (formatTwo && formatOne)
    return { problem: 'mixes the fields of claim format 2 (m, k) and format 1 (manifest, keyId)' };
  let manifestId: string;
  if (formatTwo) {
    if (m === undefined) return { problem: 'has a key id (k) but no manifest id (m)' };
    const bytes = typeof m === 'string' && CLAIM_ID_PATTERN.test(m) ? Buffer.from(m, 'base64url') : undefined;
    // Round-tripping refuses the other spellings of the same bytes (the unused low bits of the last character set).
    if (bytes === undefined || bytes.toString('base64url') !== m)
      return { problem: 'has an m that is not a manifest id (43 characters of base64url without padding)' };
    manifestId = bytes.toString('hex');
  } else {
    if (manifest === undefined)
      return {
        problem:
          keyId === undefined
            ? 'has no manifest id (m, or manifest in format 1)'
            : 'has a key id (keyId) but no manifest id (manifest)',
      };
    if (typeof manifest !== 'string' || !OBJECT_ID_PATTERN.test(manifest))
      return { problem: 'has a manifest that is not a manifest id (64 lowercase hex digits)' };
    manifestId = manifest;
  }
  const key = formatTwo ? k : keyId;
  if (key !== undefined && (typeof key !== 'string' || !KEY_ID_PATTERN.test(key)))
    return {
      problem: `has a ${formatTwo ? 'k' : 'keyId'} that is not a key id (1-64 characters of A-Z, a-z, 0-9, '.', '_', '-')`,
    };
  return { manifestId, keyId: key };
}

/**
 * What a claim's data names, from either format: 2 (`{ m, k? }`, written now) or 1
 * (`{ manifest, keyId? }`, written before; readable forever).
 *
 * @throws ChunkIntegrityError naming the claim when it is neither: no manifest id, a malformed id
 * or key id, or fields of both formats at once.
 */
export function readClaim(claimData: Readonly<Record<string, unknown>>): ClaimFields {
  const parsed = parseClaim(claimData);
  if ('problem' in parsed)
    throw new ChunkIntegrityError(
      `claim ${JSON.stringify(claimData)}`,
      `is not a temporal-compactor claim: it ${parsed.problem}`,
    );
  return parsed;
}

/** The hex id of the manifest a claim's data names (format 2 or 1), or undefined when it is not a valid claim of the store. */
export function claimManifestId(claimData: Readonly<Record<string, unknown>>): string | undefined {
  const parsed = parseClaim(claimData);
  return 'problem' in parsed ? undefined : parsed.manifestId;
}
