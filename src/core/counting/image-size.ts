// Sandbox-safe: an image's size from the first bytes of its base64 data (no Buffer, no atob), and what providers charge.
import { InvalidInputError } from '../errors.js';

export type ImageFormat = 'png' | 'jpeg' | 'gif' | 'webp';

export interface ImageSize {
  width: number;
  height: number;
  format: ImageFormat;
}

const BASE64_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
/** Character code → 6-bit value; -1 for anything else. URL-safe `-` and `_` are accepted. */
const SEXTETS: Int8Array = (() => {
  const table = new Int8Array(128).fill(-1);
  for (let index = 0; index < BASE64_ALPHABET.length; index += 1) table[BASE64_ALPHABET.charCodeAt(index)] = index;
  table['-'.charCodeAt(0)] = 62;
  table['_'.charCodeAt(0)] = 63;
  return table;
})();

/** Markers a JPEG walk passes before giving up: real files reach their frame header within a dozen. */
const JPEG_MAX_SEGMENTS = 256;

/** The bytes of base64 text, read without decoding what precedes them; whitespace sets `wrapped` (strip, read again). */
class Base64Bytes {
  private group = -1;
  private readonly bytes = [0, 0, 0];
  private valid = 0;
  private scanned = 0;
  wrapped = false;

  constructor(private readonly text: string) {}

  at(offset: number): number {
    const group = Math.floor(offset / 3);
    if (group !== this.group) this.load(group);
    const index = offset - group * 3;
    return index < this.valid ? (this.bytes[index] ?? -1) : -1;
  }

  /** The unsigned integer of `size` bytes at `offset`, big-endian unless `little`; -1 past the end. */
  uint(offset: number, size: number, little = false): number {
    let value = 0;
    for (let index = 0; index < size; index += 1) {
      const byte = this.at(offset + (little ? size - 1 - index : index));
      if (byte < 0) return -1;
      value = value * 256 + byte;
    }
    return value;
  }

  matches(offset: number, ascii: string): boolean {
    for (let index = 0; index < ascii.length; index += 1)
      if (this.at(offset + index) !== ascii.charCodeAt(index)) return false;
    return true;
  }

  private load(group: number): void {
    this.group = group;
    const start = group * 4;
    for (const end = Math.min(start + 4, this.text.length); this.scanned < end; this.scanned += 1) {
      const code = this.text.charCodeAt(this.scanned);
      if (code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09) this.wrapped = true;
    }
    let bits = 0;
    let sextets = 0;
    for (let index = start; index < start + 4 && index < this.text.length; index += 1) {
      const code = this.text.charCodeAt(index);
      const value = code < 128 ? (SEXTETS[code] ?? -1) : -1;
      if (value < 0) break;
      bits = bits * 64 + value;
      sextets += 1;
    }
    bits *= 64 ** (4 - sextets);
    for (let index = 0; index < 3; index += 1) this.bytes[index] = (bits >>> (16 - 8 * index)) & 255;
    this.valid = Math.max(0, sextets - 1);
  }
}

function sized(width: number, height: number, format: ImageFormat): ImageSize | undefined {
  return width > 0 && height > 0 ? { width, height, format } : undefined;
}

function pngSize(bytes: Base64Bytes): ImageSize | undefined {
  // Signature, then the IHDR chunk first: length (4), "IHDR", width (4), height (4).
  if (!(bytes.at(0) === 0x89 && bytes.matches(1, 'PNG\r\n\x1a\n') && bytes.matches(12, 'IHDR'))) return undefined;
  return sized(bytes.uint(16, 4), bytes.uint(20, 4), 'png');
}

function gifSize(bytes: Base64Bytes): ImageSize | undefined {
  if (!(bytes.matches(0, 'GIF87a') || bytes.matches(0, 'GIF89a'))) return undefined;
  return sized(bytes.uint(6, 2, true), bytes.uint(8, 2, true), 'gif');
}

function webpSize(bytes: Base64Bytes): ImageSize | undefined {
  if (!(bytes.matches(0, 'RIFF') && bytes.matches(8, 'WEBP'))) return undefined;
  if (bytes.matches(12, 'VP8 ')) {
    // Lossy: a 3-byte frame tag, the start code 9d 01 2a, then 14-bit width and height.
    if (!(bytes.at(23) === 0x9d && bytes.at(24) === 0x01 && bytes.at(25) === 0x2a)) return undefined;
    const width = bytes.uint(26, 2, true);
    const height = bytes.uint(28, 2, true);
    return width < 0 || height < 0 ? undefined : sized(width & 0x3fff, height & 0x3fff, 'webp');
  }
  if (bytes.matches(12, 'VP8L')) {
    // Lossless: the signature 0x2f, then width − 1 and height − 1 in 14 bits each, little-endian.
    if (bytes.at(20) !== 0x2f) return undefined;
    const [b0, b1, b2, b3] = [bytes.at(21), bytes.at(22), bytes.at(23), bytes.at(24)];
    if (b0 < 0 || b1 < 0 || b2 < 0 || b3 < 0) return undefined;
    return sized(1 + (b0 | ((b1 & 0x3f) << 8)), 1 + ((b1 >> 6) | (b2 << 2) | ((b3 & 0x0f) << 10)), 'webp');
  }
  // Extended: flags (4), then canvas width − 1 and height − 1 in 24 bits each (-1 past the end: a zero side).
  return bytes.matches(12, 'VP8X')
    ? sized(bytes.uint(24, 3, true) + 1, bytes.uint(27, 3, true) + 1, 'webp')
    : undefined;
}

/** Start-of-frame markers: every coding process (baseline, progressive, lossless, arithmetic) but DHT, JPG and DAC. */
function isStartOfFrame(marker: number): boolean {
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
}

function jpegSize(bytes: Base64Bytes): ImageSize | undefined {
  if (!(bytes.at(0) === 0xff && bytes.at(1) === 0xd8)) return undefined;
  let offset = 2;
  for (let segment = 0; segment < JPEG_MAX_SEGMENTS; segment += 1) {
    if (bytes.at(offset) !== 0xff) return undefined;
    let marker = bytes.at(offset + 1);
    // Fill bytes: any number of 0xff before a marker (bounded by the segment budget).
    while (marker === 0xff && segment < JPEG_MAX_SEGMENTS) {
      offset += 1;
      segment += 1;
      marker = bytes.at(offset + 1);
    }
    if (marker < 0 || marker === 0xff) return undefined;
    if ((marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) {
      offset += 2; // RSTn, TEM: no length
      continue;
    }
    // The end of the image, or the scan data, before any frame header: nothing to read.
    if (marker === 0xd9 || marker === 0xda) return undefined;
    const length = bytes.uint(offset + 2, 2);
    if (length < 2) return undefined;
    // A frame header: length (2), precision (1), height (2), width (2).
    if (isStartOfFrame(marker)) return sized(bytes.uint(offset + 7, 2), bytes.uint(offset + 5, 2), 'jpeg');
    offset += 2 + length;
  }
  return undefined;
}

/** The size and format of a PNG, JPEG, GIF or WebP from its base64 header; undefined otherwise or for a zero side. */
export function imageSizeOfBase64(data: string): ImageSize | undefined {
  const bytes = new Base64Bytes(data);
  const size = readSize(bytes);
  return bytes.wrapped ? readSize(new Base64Bytes(data.replace(/[\t\n\r ]+/g, ''))) : size;
}

function readSize(bytes: Base64Bytes): ImageSize | undefined {
  return pngSize(bytes) ?? jpegSize(bytes) ?? gifSize(bytes) ?? webpSize(bytes);
}

const DATA_URL_HEADER_MAX = 256;

/** The image in a base64 `data:` URL, read from its own header (the media type is not trusted). */
export function imageSizeOfDataUrl(url: string): ImageSize | undefined {
  if (url.slice(0, 5).toLowerCase() !== 'data:') return undefined;
  const comma = url.indexOf(',');
  if (comma < 0 || comma > DATA_URL_HEADER_MAX) return undefined;
  if (!/;base64$/i.test(url.slice(5, comma))) return undefined;
  return imageSizeOfBase64(url.slice(comma + 1));
}

function assertDimensions(width: number, height: number): void {
  for (const [name, value] of Object.entries({ width, height }))
    if (!(Number.isFinite(value) && value > 0))
      throw new InvalidInputError(name, `must be a positive number of pixels, got ${value}`);
}

export type OpenAiImageDetail = 'low' | 'high' | 'auto';

/** OpenAI's charge for a `detail: 'low'` image, whatever its size (and the base of every high-detail one). */
export const OPENAI_LOW_DETAIL_TOKENS = 85;
export const OPENAI_TILE_TOKENS = 170;
export const OPENAI_UNKNOWN_IMAGE_TOKENS = OPENAI_LOW_DETAIL_TOKENS + 8 * OPENAI_TILE_TOKENS;

/** OpenAI's tile rule: fit 2048², shorter side to 768, then 85 + 170 per 512-pixel tile; `'low'` costs 85. */
export function openaiImageTokens(width: number, height: number, detail: OpenAiImageDetail = 'auto'): number {
  assertDimensions(width, height);
  if (detail === 'low') return OPENAI_LOW_DETAIL_TOKENS;
  let scale = Math.min(1, 2048 / Math.max(width, height));
  scale *= Math.min(1, 768 / (Math.min(width, height) * scale));
  const scaledWidth = Math.max(1, Math.round(width * scale));
  const scaledHeight = Math.max(1, Math.round(height * scale));
  return OPENAI_LOW_DETAIL_TOKENS + OPENAI_TILE_TOKENS * Math.ceil(scaledWidth / 512) * Math.ceil(scaledHeight / 512);
}

export const ANTHROPIC_MAX_EDGE = 1568;
export const ANTHROPIC_MAX_IMAGE_TOKENS = 1600;
export const ANTHROPIC_UNKNOWN_IMAGE_TOKENS = ANTHROPIC_MAX_IMAGE_TOKENS;

/** Anthropic: ⌈width × height / 750⌉ after scaling down to a long edge of 1568 and at most ~1,600 tokens. */
export function anthropicImageTokens(width: number, height: number): number {
  assertDimensions(width, height);
  let scale = Math.min(1, ANTHROPIC_MAX_EDGE / Math.max(width, height));
  const pixels = width * height * scale * scale;
  const maxPixels = ANTHROPIC_MAX_IMAGE_TOKENS * 750;
  if (pixels > maxPixels) scale *= Math.sqrt(maxPixels / pixels);
  const scaledPixels = Math.max(1, Math.round(width * scale)) * Math.max(1, Math.round(height * scale));
  return Math.min(ANTHROPIC_MAX_IMAGE_TOKENS, Math.ceil(scaledPixels / 750));
}
