// Node only: the errors of the payload codec and the chunk store. Each names what it is about
// (the key id, the object key) so an operator can act on the message alone.

/** A payload encoded by our codec cannot be decoded: tampered, truncated, or encrypted with another key. */
export class PayloadDecodeError extends Error {
  override readonly name = 'PayloadDecodeError';
}

/**
 * A payload or stored object was encrypted with a key this process does not hold. Add the key
 * (as `COMPACTOR_CODEC_KEY`, or to `COMPACTOR_CODEC_OLD_KEYS` after a rotation).
 */
export class PayloadKeyMissingError extends Error {
  override readonly name = 'PayloadKeyMissingError';
  constructor(
    readonly keyId: string,
    where: string,
  ) {
    super(
      `${where} is encrypted with key id ${JSON.stringify(keyId)}, which is not configured: set it as COMPACTOR_CODEC_KEY (with COMPACTOR_CODEC_KEY_ID) or add it to COMPACTOR_CODEC_OLD_KEYS`,
    );
  }
}

/** Larger than the codec or the store may carry; raised at encoding, so nothing a reader would refuse is written. */
export class PayloadTooLargeError extends Error {
  override readonly name = 'PayloadTooLargeError';
  /** `what` was too large, e.g. `a payload to encrypt inline`. */
  constructor(what: string, bytes: number, limit: number, advice: string) {
    super(`${what} is ${bytes} bytes, more than the ${limit} it may have: ${advice}`);
  }
}

/** A stored object does not hold what its name promises: corrupted, truncated, replaced, or not ours. */
export class ChunkIntegrityError extends Error {
  override readonly name = 'ChunkIntegrityError';
  constructor(
    /** The object's key in the store, e.g. `v1/chunks/3f/a2/3fa2…`. */
    readonly objectKey: string,
    reason: string,
  ) {
    super(`payload store object ${objectKey}: ${reason}`);
  }
}

/** A stored object a claim needs is not in the store (deleted too early, or another store configured). */
export class ChunkMissingError extends Error {
  override readonly name = 'ChunkMissingError';
  constructor(
    readonly objectKey: string,
    readonly store: string,
  ) {
    super(
      `payload store object ${objectKey} is missing from ${store}: was it deleted, or does this process point at another store (COMPACTOR_PAYLOAD_STORE)?`,
    );
  }
}
