// Node only: what a stored object needs to stay readable — the objects a garbage collector
// (gc.ts) must keep while it keeps this one: a manifest's base, the nodes it lists and the packs
// and manifests it lists slices of, a node's entries, and every object's context.
import type { Keyring } from './keyring.js';
import { decodeNode, nodeLevel, objectKey, parseManifest, type Entry, type ObjectKind } from './object-format.js';
import type { ObjectReader } from './object-reader.js';
import { sealedKeyId, unsealObject } from './sealed-object.js';

/** An object a stored object needs (a garbage collector follows these): what it lists, its base manifest, its context. */
export interface ListedChild {
  kind: ObjectKind;
  id: string;
}

/** What a stored object needs, as {@link inspectObject} reads it (a pack: the object it was deflated against, if any). */
export interface InspectedObject {
  /** A node's level; a manifest's highest node level (0: it lists no node); a chunk: 0. */
  level: number;
  /** A manifest's depth: 0, or 1 + its base manifest's. Nodes: 0. A chunk's context depth (0: none). */
  depth: number;
  children: ListedChild[];
}

const referenced = (entries: Entry[]): ListedChild[] =>
  entries.flatMap((entry): ListedChild[] =>
    entry.kind === 'node'
      ? [{ kind: 'node', id: entry.id }]
      : entry.kind === 'slice'
        ? [{ kind: entry.of === 'manifest' ? 'manifest' : 'chunk', id: entry.id }]
        : [],
  );

/** What a stored object needs, read with whichever configured key sealed it (a pack: from its header only). Not cached. */
export async function inspectObject(
  reader: ObjectReader,
  keyring: Keyring | undefined,
  kind: ObjectKind,
  id: string,
  signal?: AbortSignal,
): Promise<InspectedObject> {
  const key = objectKey(kind, id);
  const sealed = await reader.fetch(key, signal);
  const keyId = sealedKeyId(sealed, key);
  const { context } = unsealObject(sealed, key, keyId, keyring);
  const contextChild: ListedChild[] = context === undefined ? [] : [{ kind: context.kind, id: context.id }];
  if (kind === 'chunk') return { level: 0, depth: context?.depth ?? 0, children: contextChild };
  const { plaintext } = await reader.open(sealed, kind, id, keyId, signal);
  if (kind === 'manifest') {
    const manifest = parseManifest(plaintext, key);
    const base: ListedChild[] = manifest.base === undefined ? [] : [{ kind: 'manifest', id: manifest.base.id }];
    return {
      level: Math.max(0, ...manifest.entries.map((entry) => (entry.kind === 'node' ? entry.level : 0))),
      depth: manifest.base?.depth ?? 0,
      children: [...base, ...referenced(manifest.entries), ...contextChild],
    };
  }
  const level = nodeLevel(plaintext, key);
  return { level, depth: 0, children: [...referenced(decodeNode(plaintext, level, key)), ...contextChild] };
}
