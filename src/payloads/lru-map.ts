// Node only, like the rest of src/payloads (it uses no Node API itself): a map bounded by a weight
// budget, forgetting the least recently used entries first (the chunk store's read cache).

/** A map that forgets its oldest entries past a budget (plaintext bytes, or entries). */
export class LruMap<V> {
  private readonly entries = new Map<string, { value: V; weight: number }>();
  private total = 0;
  constructor(
    private readonly budget: number,
    private readonly weigh: (value: V) => number,
  ) {}

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }

  set(key: string, value: V): void {
    const weight = this.weigh(value);
    if (weight > this.budget) return;
    // Deleted, not overwritten, so the entry moves to the newest end.
    this.total -= this.entries.get(key)?.weight ?? 0;
    this.entries.delete(key);
    this.entries.set(key, { value, weight });
    this.total += weight;
    for (const [oldest, entry] of this.entries) {
      if (this.total <= this.budget) break;
      this.entries.delete(oldest);
      this.total -= entry.weight;
    }
  }
}
