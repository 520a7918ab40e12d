// Node (tests): decompression bombs — a few kilobytes of raw deflate that inflate to many
// megabytes of zeros — built by streaming, so making one costs the test no more memory than the
// bomb itself.
import { createDeflateRaw } from 'node:zlib';

/** Raw deflate (RFC 1951) of `bytes` zero bytes, with `dictionary` when given (as the store deflates). */
export async function deflateBomb(bytes: number, dictionary?: Uint8Array): Promise<Buffer> {
  const deflate = createDeflateRaw({ level: 9, ...(dictionary === undefined ? {} : { dictionary }) });
  const parts: Buffer[] = [];
  deflate.on('data', (part: Buffer) => parts.push(part));
  const done = new Promise<void>((resolve, reject) => {
    deflate.on('end', resolve);
    deflate.on('error', reject);
  });
  const chunk = Buffer.alloc(1024 * 1024);
  for (let written = 0; written < bytes; written += chunk.length) {
    const part = written + chunk.length <= bytes ? chunk : chunk.subarray(0, bytes - written);
    if (!deflate.write(part)) await new Promise((resolve) => deflate.once('drain', resolve));
  }
  deflate.end();
  await done;
  return Buffer.concat(parts);
}
