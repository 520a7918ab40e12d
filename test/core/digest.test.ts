import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Sha256, digestMessagePrefix, serializeMessage, sha256Hex } from '../../src/core/counting/digest.js';
import type { ChatMessage } from '../../src/core/types.js';

/** Node's own SHA-256 of the UTF-8 of a string (Buffer.from replaces lone surrogates with U+FFFD, as TextEncoder does). */
function nodeSha256(text: string): string {
  return createHash('sha256').update(Buffer.from(text, 'utf8')).digest('hex');
}

/** Strings of raw UTF-16 code units, rich in surrogates (paired, lone, reversed). */
const codeUnitStrings = fc
  .array(fc.oneof(fc.integer({ min: 0, max: 0xffff }), fc.integer({ min: 0xd7f0, max: 0xe00f })), { maxLength: 300 })
  .map((codes) => String.fromCharCode(...codes));

describe('sha256Hex', () => {
  it('matches the FIPS 180-2 / NIST test vectors', () => {
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256Hex('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq')).toBe(
      '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1',
    );
    expect(
      sha256Hex(
        'abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu',
      ),
    ).toBe('cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1');
    expect(sha256Hex('a'.repeat(1_000_000))).toBe('cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0');
  });

  it('hashes the UTF-8 encoding of non-ASCII text', () => {
    for (const text of [
      'é',
      'héllo wörld',
      '日本語のテキスト',
      '🎉 emoji 👩‍💻',
      'Ω≈ç√∫',
      '\u0800\uffff',
      '𝄞'.repeat(1000),
    ]) {
      expect(sha256Hex(text)).toBe(nodeSha256(text));
    }
    // 'é' is two bytes in UTF-8: the digest is not the one of the Latin-1 byte.
    expect(sha256Hex('é')).toBe(
      createHash('sha256')
        .update(Uint8Array.from([0xc3, 0xa9]))
        .digest('hex'),
    );
  });

  it('encodes lone surrogates as U+FFFD, like TextEncoder', () => {
    for (const text of ['\ud800', 'x\udc00y', '\udbff\ud800', 'a\ud83d', '\ude00b']) {
      expect(sha256Hex(text)).toBe(nodeSha256(text));
      expect(sha256Hex(text)).toBe(createHash('sha256').update(new TextEncoder().encode(text)).digest('hex'));
    }
  });

  it('handles every length around the block and chunk boundaries', () => {
    for (const length of [55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 4091, 4092, 4093, 4095, 4096, 4097, 8192, 8200]) {
      expect(sha256Hex('x'.repeat(length))).toBe(nodeSha256('x'.repeat(length)));
      // a 4-byte character straddling the chunk flush
      expect(sha256Hex(`${'x'.repeat(length)}🎉`)).toBe(nodeSha256(`${'x'.repeat(length)}🎉`));
    }
  });

  it('agrees with node:crypto on arbitrary strings, including lone surrogates', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 300 }), codeUnitStrings), (text) => {
        expect(sha256Hex(text)).toBe(nodeSha256(text));
      }),
      { numRuns: 300 },
    );
  });

  it('is incremental: update in pieces equals one update when no surrogate pair is split', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'grapheme', maxLength: 200 }), { maxLength: 20 }), (pieces) => {
        const hash = new Sha256();
        for (const piece of pieces) hash.update(piece);
        expect(hash.digestHex()).toBe(nodeSha256(pieces.join('')));
      }),
      { numRuns: 200 },
    );
  });

  it('refuses to be used after it is finished', () => {
    const hash = new Sha256().update('abc');
    hash.digestHex();
    expect(() => hash.update('more')).toThrow(/after digestHex/);
    expect(() => hash.digestHex()).toThrow(/twice/);
  });
});

describe('digestMessagePrefix', () => {
  const conversation: ChatMessage[] = [
    { role: 'system', content: 'You are terse.', sticky: true },
    { role: 'user', content: 'Read ä file' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read', arguments: '{"path":"a.txt"}' } }],
    },
    { role: 'tool', tool_call_id: 'call_1', content: [{ type: 'text', text: 'contents 🎉' }] },
    { role: 'user', content: 'thanks', depth: 2 },
  ];

  it('is the SHA-256 of the JSON of the messages as a provider sees them (flags stripped)', () => {
    const providerMessages = conversation.map(({ sticky: _sticky, depth: _depth, ...rest }) => rest);
    expect(digestMessagePrefix(conversation)).toBe(nodeSha256(JSON.stringify(providerMessages)));
    expect(digestMessagePrefix([])).toBe(nodeSha256('[]'));
  });

  it('ignores the harness flags sticky and depth, and nothing else', () => {
    const unflagged = conversation.map(({ sticky: _sticky, depth: _depth, ...rest }) => rest);
    expect(digestMessagePrefix(unflagged)).toBe(digestMessagePrefix(conversation));
    const edited = conversation.map((message, index) =>
      index === 1 ? { ...message, content: 'Read a file' } : message,
    );
    expect(digestMessagePrefix(edited)).not.toBe(digestMessagePrefix(conversation));
    const named = conversation.map((message, index) => (index === 1 ? { ...message, name: 'bob' } : message));
    expect(digestMessagePrefix(named)).not.toBe(digestMessagePrefix(conversation));
  });

  it('depends on key order (documented: our code preserves it)', () => {
    const a: ChatMessage = { role: 'user', content: 'x' };
    const b: ChatMessage = { content: 'x', role: 'user' };
    expect(serializeMessage(a)).not.toBe(serializeMessage(b));
    expect(digestMessagePrefix([a])).not.toBe(digestMessagePrefix([b]));
  });

  it('digestMessagePrefix equals the digest of the slice', () => {
    for (let count = 0; count <= conversation.length; count++) {
      expect(digestMessagePrefix(conversation, count)).toBe(digestMessagePrefix(conversation.slice(0, count)));
    }
    expect(digestMessagePrefix(conversation, 99)).toBe(digestMessagePrefix(conversation));
    expect(digestMessagePrefix(conversation, -1)).toBe(digestMessagePrefix([]));
  });
});
