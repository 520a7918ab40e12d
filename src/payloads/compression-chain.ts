// Node only: the chain of contexts a driver deflates against: every pack and manifest against the
// window of the one it stored before under the same key (its id binds it). An object is a context
// only while younger than half the refresh period, so gc never takes one a store is about to name.
import { chainRoot, windowAfter, type SealContext } from './sealed-object.js';

/** A chain of objects deflated each against the one before is this long at most (then an object starts a new one). */
const WRITTEN_CONTEXT_DEPTH = 63;

export class CompressionChain {
  /** The last pack or manifest stored under each key id (''): the context of the next one. */
  private readonly links = new Map<string, SealContext & { at: number }>();

  constructor(
    private readonly clock: {
      now: () => number;
      refreshAfterMs: number;
      isGone: (id: string) => boolean;
    },
  ) {}

  /** The last pack or manifest stored under the key, when recent enough and its chain is not at its length. */
  contextFor(keyId: string | undefined): SealContext | undefined {
    const link = this.links.get(keyId ?? '');
    if (link === undefined || link.depth + 1 > WRITTEN_CONTEXT_DEPTH || this.clock.isGone(link.id)) return undefined;
    return this.clock.now() - link.at < this.clock.refreshAfterMs / 2 ? link : undefined;
  }

  /** What a manifest is deflated against: its payload's new pack when it has one (written just before it), else {@link contextFor}. */
  manifestContext(
    pack: { id: string; plaintext: Uint8Array | undefined; context?: SealContext | undefined } | undefined,
    keyId: string | undefined,
  ): SealContext | undefined {
    if (pack?.plaintext === undefined) return this.contextFor(keyId);
    const depth = pack.context === undefined ? 0 : pack.context.depth + 1;
    if (depth + 1 > WRITTEN_CONTEXT_DEPTH) return undefined;
    const window = windowAfter(pack.context?.window ?? chainRoot(), pack.plaintext);
    return { id: pack.id, kind: 'chunk', depth, window };
  }

  /** Makes a stored pack or manifest the next object's context: it was deflated against `context` (undefined: none) and its window is `window`. */
  extend(
    keyId: string | undefined,
    stored: { id: string; kind: 'chunk' | 'manifest' },
    context: SealContext | undefined,
    window: Uint8Array,
  ): void {
    const depth = context === undefined ? 0 : context.depth + 1;
    this.links.set(keyId ?? '', { ...stored, depth, window, at: this.clock.now() });
  }
}
