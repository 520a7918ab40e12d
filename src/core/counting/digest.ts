// Sandbox-safe: a pure-JS SHA-256 over the UTF-8 of strings, and the digest of a conversation.
import type { ChatMessage } from '../types.js';

/** SHA-256 round constants (FIPS 180-4 §4.2.2). */
const ROUND_CONSTANTS = Int32Array.from([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
]);

/** SHA-256 initial hash value (FIPS 180-4 §5.3.3). */
const INITIAL_HASH = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

const BLOCK_BYTES = 64;
const CHUNK_BYTES = 64 * BLOCK_BYTES;
const FLUSH_AT = CHUNK_BYTES - 4;
const TWO_POW_29 = 0x20000000;

/** An incremental SHA-256 over UTF-8 as `TextEncoder` writes it (a lone surrogate becomes U+FFFD), for the workflow sandbox. */
export class Sha256 {
  private readonly chunk = new Uint8Array(CHUNK_BYTES + 2 * BLOCK_BYTES);
  private readonly chunkView = new DataView(this.chunk.buffer);
  private readonly schedule = new Int32Array(64);
  private readonly hash = Int32Array.from(INITIAL_HASH);
  private buffered = 0;
  private compressedBytes = 0;
  private finished = false;

  update(text: string): this {
    if (this.finished) throw new Error('Sha256.update called after digestHex');
    const chunk = this.chunk;
    const length = text.length;
    let at = this.buffered;
    for (let i = 0; i < length; i++) {
      if (at > FLUSH_AT) at = this.compressChunk(at);
      let code = text.charCodeAt(i);
      if (code < 0x80) {
        chunk[at++] = code;
      } else if (code < 0x800) {
        chunk[at++] = 0xc0 | (code >> 6);
        chunk[at++] = 0x80 | (code & 0x3f);
      } else {
        if (code >= 0xd800 && code < 0xe000) {
          const next = i + 1 < length ? text.charCodeAt(i + 1) : 0;
          if (code < 0xdc00 && next >= 0xdc00 && next < 0xe000) {
            const codePoint = 0x10000 + ((code - 0xd800) << 10) + (next - 0xdc00);
            i++;
            chunk[at++] = 0xf0 | (codePoint >> 18);
            chunk[at++] = 0x80 | ((codePoint >> 12) & 0x3f);
            chunk[at++] = 0x80 | ((codePoint >> 6) & 0x3f);
            chunk[at++] = 0x80 | (codePoint & 0x3f);
            continue;
          }
          code = 0xfffd;
        }
        chunk[at++] = 0xe0 | (code >> 12);
        chunk[at++] = 0x80 | ((code >> 6) & 0x3f);
        chunk[at++] = 0x80 | (code & 0x3f);
      }
    }
    this.buffered = at;
    return this;
  }

  digestHex(): string {
    if (this.finished) throw new Error('Sha256.digestHex called twice');
    this.finished = true;
    let at = this.compressChunk(this.buffered);
    const totalBytes = this.compressedBytes + at;
    const chunk = this.chunk;
    chunk[at++] = 0x80;
    while (at % BLOCK_BYTES !== BLOCK_BYTES - 8) chunk[at++] = 0;
    this.chunkView.setUint32(at, Math.floor(totalBytes / TWO_POW_29));
    this.chunkView.setUint32(at + 4, (totalBytes % TWO_POW_29) * 8);
    at += 8;
    for (let offset = 0; offset < at; offset += BLOCK_BYTES) this.compressBlock(offset);
    let hex = '';
    for (const word of this.hash) hex += (word >>> 0).toString(16).padStart(8, '0');
    return hex;
  }

  private compressChunk(length: number): number {
    const complete = length - (length % BLOCK_BYTES);
    for (let offset = 0; offset < complete; offset += BLOCK_BYTES) this.compressBlock(offset);
    this.chunk.copyWithin(0, complete, length);
    this.compressedBytes += complete;
    return length - complete;
  }

  private compressBlock(offset: number): void {
    const words = this.schedule;
    const view = this.chunkView;
    for (let t = 0; t < 16; t++) words[t] = view.getInt32(offset + 4 * t);
    for (let t = 16; t < 64; t++) {
      const w15 = words[t - 15] ?? 0;
      const w2 = words[t - 2] ?? 0;
      const sigma0 = ((w15 >>> 7) | (w15 << 25)) ^ ((w15 >>> 18) | (w15 << 14)) ^ (w15 >>> 3);
      const sigma1 = ((w2 >>> 17) | (w2 << 15)) ^ ((w2 >>> 19) | (w2 << 13)) ^ (w2 >>> 10);
      words[t] = (sigma1 + (words[t - 7] ?? 0) + sigma0 + (words[t - 16] ?? 0)) | 0;
    }
    const hash = this.hash;
    let [a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0, h = 0] = hash;
    for (let t = 0; t < 64; t++) {
      const bigSigma1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const choose = (e & f) ^ (~e & g);
      const temp1 = (h + bigSigma1 + choose + (ROUND_CONSTANTS[t] ?? 0) + (words[t] ?? 0)) | 0;
      const bigSigma0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const majority = (a & b) ^ (a & c) ^ (b & c);
      const temp2 = (bigSigma0 + majority) | 0;
      h = g;
      g = f;
      f = e;
      e = (d + temp1) | 0;
      d = c;
      c = b;
      b = a;
      a = (temp1 + temp2) | 0;
    }
    [a, b, c, d, e, f, g, h].forEach((word, index) => (hash[index] = (hash[index] ?? 0) + word));
  }
}

export function sha256Hex(text: string): string {
  return new Sha256().update(text).digestHex();
}

/** `JSON.stringify` of the message without the harness flags (they change no billed token); key order counts. */
export function serializeMessage(message: ChatMessage): string {
  const { sticky: _sticky, depth: _depth, ...providerMessage } = message;
  return JSON.stringify(providerMessage);
}

/** `sha256Hex(JSON.stringify(toProviderMessages(messages.slice(0, count))))`; a spurious difference costs a `UsageCounter` only a fallback. */
export function digestMessagePrefix(messages: readonly ChatMessage[], count: number = messages.length): string {
  return digestJsonArray(messages, Math.max(0, Math.min(count, messages.length)), serializeMessage);
}

/** SHA-256 of the JSON array of `items[0..end)`, each serialized on its own: the whole array is never one string. */
export function digestJsonArray<T>(items: readonly T[], end: number, serialize: (item: T) => string): string {
  const hash = new Sha256().update('[');
  for (let i = 0; i < end; i++) {
    if (i > 0) hash.update(',');
    const item = items[i];
    hash.update(item === undefined ? 'null' : serialize(item));
  }
  return hash.update(']').digestHex();
}
