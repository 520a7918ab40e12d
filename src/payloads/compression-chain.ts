// Node only: the chain of contexts a driver deflates against. Every pack and manifest it stores is
// deflated against the window of the pack or manifest it stored before under the same key (the last
// 32 KiB of content: the chat request's copy of the model's reply compresses against the reply's
// manifest), and its id binds that context (sealed-object.ts). A chain is at most
// WRITTEN_CONTEXT_DEPTH long, and an object is a context only while it is younger than half the
// refresh period, so a gc, whose grace period is at least twice that, never takes a context a
// store is about to name.
import { chainRoot, windowAfter, type SealContext } from './sealed-object.js';

/** A chain of objects deflated each against the one before is this long at most (then an object starts a new one). */
const WRITTEN_CONTEXT_DEPTH = 63;

/** A pack about to be written, which its manifest is deflated against. */
export interface PlannedPack {
  id: string;
  plaintext: Uint8Array;
  context?: SealContext | undefined;
}

export class CompressionChain {
  /** The last pack or manifest stored under each key id (''): the context of the next one. */
  private readonly links = new Map<string, SealContext & { at: number }>();

  constructor(
    private readonly clock: {
      now: () => number;
      refreshAfterMs: number;
      /** Whether a stored object was found gone from the store. */
      isGone: (id: string) => boolean;
    },
  ) {}

  /**
   * What a new pack or manifest is deflated against: the last one stored under the key, when that
   * was lately (so a gc keeps it: younger than half the refresh period) and its chain is not at its length.
   */
  contextFor(keyId: string | undefined): SealContext | undefined {
    const link = this.links.get(keyId ?? '');
    if (link === undefined || link.depth + 1 > WRITTEN_CONTEXT_DEPTH || this.clock.isGone(link.id)) return undefined;
    return this.clock.now() - link.at < this.clock.refreshAfterMs / 2 ? link : undefined;
  }

  /** What a manifest is deflated against: its payload's new pack when it has one (written just before it), else {@link contextFor}. */
  manifestContext(pack: PlannedPack | undefined, keyId: string | undefined): SealContext | undefined {
    if (pack === undefined) return this.contextFor(keyId);
    const depth = pack.context === undefined ? 0 : pack.context.depth + 1;
    if (depth + 1 > WRITTEN_CONTEXT_DEPTH) return undefined;
    return {
      id: pack.id,
      kind: 'chunk',
      depth,
      window: windowAfter(pack.context?.window ?? chainRoot(), pack.plaintext),
    };
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
