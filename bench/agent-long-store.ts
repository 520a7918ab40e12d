// The store settings of a `bench:agent-long` side, shared by the parent (its client) and the worker
// process, so both build the same payload converter.

/** A side's settings: the store off, or the file store at `directory` with `threshold` bytes (undefined: the default). */
export function storeEnvironment(directory: string | undefined, threshold: number | undefined): Record<string, string> {
  if (directory === undefined) return { COMPACTOR_PAYLOAD_STORE: 'off' };
  return {
    COMPACTOR_PAYLOAD_STORE: `file:${directory}`,
    ...(threshold === undefined ? {} : { COMPACTOR_PAYLOAD_THRESHOLD: String(threshold) }),
  };
}
