// Node only: bounded concurrency for the store's bulk work (gc's phases, the codec server's payloads).

/** Runs `work` over `items` (which `work` may extend) with at most `concurrency` at once; the first error stops it. */
export async function drain<T>(items: T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let failure: { error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (failure === undefined) {
      const item = items.pop();
      if (item === undefined) return;
      try {
        await work(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  // Workers that found the list empty while others still add to it would end early: run rounds until it stays empty.
  while (items.length > 0 && failure === undefined) await Promise.all(Array.from({ length: concurrency }, worker));
  if (failure !== undefined) throw failure.error;
}
