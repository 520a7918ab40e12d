// One stored object, sealed and opened (src/payloads/sealed-object.ts): the preset dictionary, a
// context's window, the names that bind a context, and what a reader refuses in a header.
import { createDecipheriv, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { deflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ChunkIntegrityError } from '../../src/payloads/errors.js';
import { codecKey } from '../../src/payloads/keyring.js';
import { keyringOf } from '../support/keyring.js';
import { objectKey } from '../../src/payloads/object-format.js';
import { PRESET_DICTIONARIES } from '../../src/payloads/dictionary.js';
import {
  chainRoot,
  contextualId,
  inflateObject,
  MAX_CONTEXT_DEPTH,
  objectId,
  sealObject,
  unsealObject,
  windowAfter,
  WINDOW_BYTES,
} from '../../src/payloads/sealed-object.js';

/** Numbered lines of code, `from` to `to`: text a later object shares part of. */
const lines = (from: number, to: number): Buffer =>
  Buffer.from(
    Array.from(
      { length: to - from },
      (_, index) => `${from + index}\tdef handler_${from + index}(self): return ${(from + index) * 7}\n`,
    ).join(''),
  );

/** Opens an object without a context. */
function open(sealed: Uint8Array, kind: 'chunk' | 'node' | 'manifest', id: string): Buffer {
  const key = objectKey(kind, id);
  return Buffer.from(
    inflateObject(unsealObject(sealed, key, undefined, undefined), kind, id, key, undefined).plaintext,
  );
}

describe('a sealed object', () => {
  it('is deflated with preset dictionary 1 (its number first in the body), smaller than deflated alone', () => {
    const message = Buffer.from(
      JSON.stringify({
        message: {
          role: 'assistant',
          content: 'Let me run the tests again.',
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'bash', arguments: '{"command":"pytest -x"}' } },
          ],
        },
        finishReason: 'tool_calls',
      }),
    );
    const id = objectId(message, undefined);
    const { sealed } = sealObject(message, undefined);
    expect(sealed[4]).toBe(1);
    expect(sealed[5]).toBe(1);
    expect(open(sealed, 'chunk', id)).toEqual(message);
    // The same bytes deflated without the dictionary: header, and the raw deflate alone.
    expect(sealed.length).toBeLessThan(5 + deflateRawSync(message).length);
    // Too small to gain: stored as it is (flags 0).
    const tiny = Buffer.from('{"role":"user"}');
    const tinySealed = sealObject(tiny, undefined).sealed;
    expect(tinySealed[4]).toBe(0);
    expect(open(tinySealed, 'chunk', objectId(tiny, undefined))).toEqual(tiny);
  });

  it('deflated against a context opens only with that window, named by the context (a node by its plaintext)', () => {
    const rootText = lines(0, 200);
    const rootId = objectId(rootText, undefined);
    const root = sealObject(rootText, undefined);
    expect(root.context).toBeUndefined();
    const rootWindow = windowAfter(root.before, rootText);
    expect(rootWindow.subarray(rootWindow.length - rootText.length)).toEqual(rootText);
    // Half of it is the root's last lines: what a file read again looks like.
    const text = lines(100, 300);
    const id = contextualId(text, { id: rootId, kind: 'chunk' }, undefined);
    expect(id).not.toBe(objectId(text, undefined));
    const context = { id: rootId, kind: 'chunk' as const, depth: 0, window: rootWindow };
    const sealed = sealObject(text, undefined, { context });
    expect(sealed.context?.id).toBe(rootId);
    // Flags: deflated against a context; then dictionary 1, depth 1 and the context's id.
    expect(sealed.sealed[4]).toBe(1 | 4);
    expect([...sealed.sealed.subarray(5, 7)]).toEqual([1, 1]);
    expect(Buffer.from(sealed.sealed.subarray(7, 39)).toString('hex')).toBe(rootId);
    const unsealed = unsealObject(sealed.sealed, 'v1/chunks/x', undefined, undefined);
    expect(unsealed.context).toEqual({ id: rootId, depth: 1, kind: 'chunk' });
    expect(Buffer.from(inflateObject(unsealed, 'chunk', id, 'v1/chunks/x', rootWindow).plaintext)).toEqual(text);
    // Named by its plaintext alone it is refused: a chunk's id binds its context.
    expect(() => inflateObject(unsealed, 'chunk', objectId(text, undefined), 'v1/chunks/x', rootWindow)).toThrow(
      /hash mismatch/,
    );
    // Smaller than against the preset dictionary alone: the context holds most of it.
    expect(sealed.sealed.length).toBeLessThan(sealObject(text, undefined).sealed.length);
    expect(() => inflateObject(unsealed, 'chunk', id, 'v1/chunks/x', chainRoot())).toThrow(ChunkIntegrityError);
    expect(() => inflateObject(unsealed, 'chunk', id, 'v1/chunks/x', undefined)).toThrow(/its window is needed/);
    // A manifest as the context: bit 3, and the id names the context's kind.
    const manifestContext = { ...context, kind: 'manifest' as const };
    const againstManifest = sealObject(text, undefined, {
      context: manifestContext,
    });
    expect(againstManifest.sealed[4]).toBe(1 | 4 | 8);
    expect(unsealObject(againstManifest.sealed, 'v1/manifests/x', undefined, undefined).context?.kind).toBe('manifest');
    // A node keeps the id of its plaintext, and takes the context only when that is smaller.
    const node = sealObject(text, undefined, { context, contextIfSmaller: true });
    expect(node.context?.id).toBe(rootId);
    const unsealedNode = unsealObject(node.sealed, 'v1/nodes/x', undefined, undefined);
    expect(
      Buffer.from(inflateObject(unsealedNode, 'node', objectId(text, undefined), 'v1/nodes/x', rootWindow).plaintext),
    ).toEqual(text);
    const unrelated = randomBytes(40);
    expect(sealObject(unrelated, undefined, { context, contextIfSmaller: true }).context).toBeUndefined();
  });

  it('has a window of the last 32 KiB of what it follows and its plaintext', () => {
    const before = Buffer.alloc(WINDOW_BYTES, 1);
    expect(windowAfter(before, Buffer.alloc(10, 2))).toEqual(
      Buffer.concat([Buffer.alloc(WINDOW_BYTES - 10, 1), Buffer.alloc(10, 2)]),
    );
    expect(windowAfter(before, Buffer.alloc(WINDOW_BYTES + 5, 3))).toEqual(Buffer.alloc(WINDOW_BYTES, 3));
  });

  it('is refused, naming it, when its header says what no writer writes', () => {
    const text = lines(0, 40);
    const id = objectId(text, undefined);
    const { sealed } = sealObject(text, undefined);
    const withFlags = (flags: number): Buffer =>
      Buffer.concat([sealed.subarray(0, 4), Uint8Array.of(flags), sealed.subarray(5)]);
    const refusals: Array<[Buffer, RegExp]> = [
      [withFlags(1 | 16), /has header flags 17 this version does not know/],
      [withFlags(1 | 8), /says what its context is but names none/],
      [withFlags(4), /names a context but is not deflated/],
      [
        Buffer.concat([sealed.subarray(0, 5), Uint8Array.of(9), sealed.subarray(6)]),
        /preset dictionary 9, which this version does not know/,
      ],
      [Buffer.from('cpz\u0001\u0000'), /not a temporal-compactor object/],
    ];
    for (const [bytes, message] of refusals) {
      expect(() => open(bytes, 'chunk', id)).toThrow(ChunkIntegrityError);
      expect(() => open(bytes, 'chunk', id)).toThrow(message);
    }
    // A depth past the readers' limit is refused from the header.
    const rootWindow = windowAfter(chainRoot(), text);
    const deep = Buffer.from(
      sealObject(text, undefined, {
        context: { id, kind: 'chunk', depth: 0, window: rootWindow },
      }).sealed,
    );
    deep[6] = MAX_CONTEXT_DEPTH + 1;
    expect(() => unsealObject(deep, 'v1/chunks/y', undefined, undefined)).toThrow(/chain of 65 contexts/);
  });

  it('encrypted, names its key and is refused under another key or none', () => {
    const key = codecKey(randomBytes(32), 'k1');
    const text = lines(0, 40);
    const id = objectId(text, key);
    const { sealed } = sealObject(text, key);
    expect(sealed[4]).toBe(1 | 2);
    expect(Buffer.from(sealed.subarray(6, 8)).toString('ascii')).toBe('k1');
    const keyring = keyringOf(key);
    const unsealed = unsealObject(sealed, 'v1/chunks/x', 'k1', keyring);
    expect(Buffer.from(inflateObject(unsealed, 'chunk', id, 'v1/chunks/x', undefined).plaintext)).toEqual(text);
    expect(() => unsealObject(sealed, 'v1/chunks/x', undefined, keyring)).toThrow(
      /sealed with key id "k1", but its payload was stored without encryption/,
    );
    expect(() => unsealObject(sealed, 'v1/chunks/x', 'k1', keyringOf(codecKey(randomBytes(32), 'k1')))).toThrow(
      /failed authentication under key id "k1"/,
    );
  });

  it('interop/python/compactor_payloads.py holds preset dictionary 1 byte for byte', () => {
    const python = readFileSync(new URL('../../interop/python/compactor_payloads.py', import.meta.url), 'utf8');
    const literal = /\n {4}1: base64\.b64decode\(\n((?: {8}"[A-Za-z0-9+/=]+"\n)+) {4}\)/.exec(python)?.[1] ?? '';
    const bytes = Buffer.from(literal.replace(/[\s"]/g, ''), 'base64');
    expect(bytes.length).toBeGreaterThan(1000);
    expect(bytes).toEqual(PRESET_DICTIONARIES.get(1));
  });
});

describe('a sealed object under a key', () => {
  /** The nonce, ciphertext (tag removed) and GCM plaintext (the body) of a sealed object. */
  function opened(sealed: Buffer, key: ReturnType<typeof codecKey>) {
    const headerLength = 6 + (sealed[5] ?? 0) + 12;
    const nonce = sealed.subarray(headerLength - 12, headerLength);
    const ciphertext = sealed.subarray(headerLength, sealed.length - 16);
    const decipher = createDecipheriv('aes-256-gcm', key.chunkKey, nonce);
    decipher.setAAD(sealed.subarray(0, headerLength));
    decipher.setAuthTag(sealed.subarray(sealed.length - 16));
    const body = Buffer.concat([decipher.update(ciphertext), decipher.final()]);
    return { nonce, ciphertext, body };
  }
  const xor = (a: Buffer, b: Buffer): Buffer =>
    Buffer.from(Array.from({ length: Math.min(a.length, b.length) }, (_, index) => (a[index] ?? 0) ^ (b[index] ?? 0)));

  it('(regression) never encrypts two different bodies with one nonce: one node deflated against two contexts', () => {
    const key = codecKey(randomBytes(32), 'k1');
    // A node is named by its plaintext, whatever it was deflated against: one name, two bodies.
    const text = lines(100, 300);
    const id = objectId(text, key);
    const contexts = [lines(0, 200), lines(150, 400)].map((before) => ({
      id: objectId(before, key),
      kind: 'chunk' as const,
      depth: 0,
      window: windowAfter(chainRoot(), before),
    }));
    const [one, two] = contexts.map((context) => sealObject(text, key, { context, contextIfSmaller: true }).sealed) as [
      Buffer,
      Buffer,
    ];
    const [first, second] = [opened(one, key), opened(two, key)];
    expect(first.body.equals(second.body)).toBe(false);
    expect(first.nonce.equals(second.nonce)).toBe(false);
    // With one nonce the keystream repeats: the ciphertexts' XOR would be the bodies'.
    expect(xor(first.ciphertext, second.ciphertext).equals(xor(first.body, second.body))).toBe(false);
    // Both open to the node's plaintext under its one name.
    for (const [sealed, context] of [
      [one, contexts[0]],
      [two, contexts[1]],
    ] as const)
      expect(
        Buffer.from(
          inflateObject(
            unsealObject(sealed, 'v1/nodes/x', 'k1', keyringOf(key)),
            'node',
            id,
            'v1/nodes/x',
            context?.window,
          ).plaintext,
        ),
      ).toEqual(text);
  });

  it('(regression) never encrypts two different bodies with one nonce: one manifest at two compression levels', () => {
    const key = codecKey(randomBytes(32), 'k1');
    const text = lines(0, 120);
    const [fast, small] = [1, 9].map((compressionLevel) =>
      opened(sealObject(text, key, { compressionLevel }).sealed, key),
    );
    if (fast === undefined || small === undefined) throw new Error('two objects expected');
    expect(fast.body.equals(small.body)).toBe(false);
    expect(fast.nonce.equals(small.nonce)).toBe(false);
  });

  it('seals equal bodies to equal bytes (dedup by name still holds)', () => {
    const key = codecKey(randomBytes(32), 'k1');
    const text = lines(0, 120);
    expect(sealObject(text, key).sealed.equals(sealObject(text, key).sealed)).toBe(true);
  });
});
