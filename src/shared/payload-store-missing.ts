// Sandbox-safe (it imports nothing): what a client, the CLI or the codec server says when it meets a
// claim — a payload the run's worker put in its payload store — with no store configured.

/** A claim met by a process with no payload store: the message says which setting to give. */
export class PayloadStoreNotConfiguredError extends Error {
  override readonly name = 'PayloadStoreNotConfiguredError';
  constructor(
    /** Who met the claim: `this command`, `this codec server`, `this client`. */
    who: string,
    /** The claim's storage driver, as its reference payload names it. */
    driver: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(
      `the run's payloads are in a payload store (claims${driver === undefined ? '' : ` of driver ${JSON.stringify(driver)}`}) and ${who} was given none: set COMPACTOR_PAYLOAD_STORE to the store the run's worker uses, as its start line names it (e.g. COMPACTOR_PAYLOAD_STORE=file:/var/lib/compactor or COMPACTOR_PAYLOAD_STORE=s3://bucket/prefix), with COMPACTOR_CODEC_KEY when the worker has one`,
      options,
    );
  }
}

/**
 * The {@link PayloadStoreNotConfiguredError} an error stands for, when among its causes the SDK met a
 * storage reference without External Storage (which a client wraps in "Unexpected error while making gRPC request").
 */
export function payloadStoreMissing(error: unknown, who: string): PayloadStoreNotConfiguredError | undefined {
  const seen = new Set<unknown>();
  for (let current: unknown = error; current instanceof Error && !seen.has(current); current = current.cause) {
    seen.add(current);
    if (current instanceof PayloadStoreNotConfiguredError) return current;
    // By name and code: the class is the SDK's, and a peer dependency of another version is another class.
    if (current.name === 'ExternalStorageNotConfiguredError' || current.message.includes('[TMPRL1105]'))
      return new PayloadStoreNotConfiguredError(who, undefined, { cause: error });
  }
  return undefined;
}
