// Node (test support): tiny images written byte by byte — only the headers the size reader looks at, then
// filler — so the tests need no image files and no image library.

function be16(value: number): number[] {
  return [(value >>> 8) & 0xff, value & 0xff];
}
function be32(value: number): number[] {
  return [(value >>> 24) & 0xff, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff];
}
function le16(value: number): number[] {
  return [value & 0xff, (value >>> 8) & 0xff];
}
function le24(value: number): number[] {
  return [value & 0xff, (value >>> 8) & 0xff, (value >>> 16) & 0xff];
}
function ascii(text: string): number[] {
  return [...text].map((char) => char.charCodeAt(0));
}

/** A PNG: signature and IHDR (width, height, 8-bit RGB), then `filler` bytes standing for the image data. */
export function pngBytes(width: number, height: number, filler = 16): Uint8Array {
  return Uint8Array.from([
    0x89,
    ...ascii('PNG\r\n\x1a\n'),
    ...be32(13),
    ...ascii('IHDR'),
    ...be32(width),
    ...be32(height),
    8,
    2,
    0,
    0,
    0,
    ...be32(0x12345678), // CRC, not checked
    ...new Array<number>(filler).fill(0x42),
  ]);
}

/** A GIF87a or GIF89a logical screen descriptor. */
export function gifBytes(width: number, height: number, version: '87a' | '89a' = '89a'): Uint8Array {
  return Uint8Array.from([...ascii(`GIF${version}`), ...le16(width), ...le16(height), 0xf7, 0, 0, 1, 2, 3]);
}

/**
 * A JPEG: SOI, a JFIF APP0, an APP1 of `exifBytes` bytes (the EXIF block a camera writes before
 * the frame header), a DQT, then the frame header `sof` (0xc0 baseline, 0xc2 progressive, ...).
 */
export function jpegBytes(width: number, height: number, { exifBytes = 0, sof = 0xc0 } = {}): Uint8Array {
  const segment = (marker: number, body: number[]): number[] => [0xff, marker, ...be16(body.length + 2), ...body];
  return Uint8Array.from([
    0xff,
    0xd8,
    ...segment(0xe0, [...ascii('JFIF\0'), 1, 1, 0, 0, 1, 0, 1, 0, 0]),
    ...(exifBytes > 0 ? segment(0xe1, new Array<number>(exifBytes).fill(0x45)) : []),
    ...segment(0xdb, new Array<number>(65).fill(1)),
    ...segment(sof, [8, ...be16(height), ...be16(width), 3, 1, 0x11, 0, 2, 0x11, 1, 3, 0x11, 1]),
    ...segment(0xda, [3, 1, 0, 2, 0x11, 3, 0x11, 0, 0x3f, 0]),
    0x12,
    0x34,
    0xff,
    0xd9,
  ]);
}

function riff(chunk: string, body: number[]): Uint8Array {
  const payload = [...ascii('WEBP'), ...ascii(chunk), ...[body.length, 0, 0, 0], ...body];
  return Uint8Array.from([
    ...ascii('RIFF'),
    ...[payload.length & 0xff, (payload.length >>> 8) & 0xff, 0, 0],
    ...payload,
  ]);
}

/** A lossy WebP (VP8): frame tag, start code, 14-bit width and height. */
export function webpLossyBytes(width: number, height: number): Uint8Array {
  return riff('VP8 ', [0x30, 0x01, 0x00, 0x9d, 0x01, 0x2a, ...le16(width), ...le16(height), 0, 0, 0, 0]);
}

/** A lossless WebP (VP8L): signature 0x2f, then width − 1 and height − 1 in 14 bits each. */
export function webpLosslessBytes(width: number, height: number): Uint8Array {
  const bits = (width - 1) | ((height - 1) << 14);
  return riff('VP8L', [0x2f, bits & 0xff, (bits >>> 8) & 0xff, (bits >>> 16) & 0xff, (bits >>> 24) & 0xff, 0, 0]);
}

/** An extended WebP (VP8X): flags, then canvas width − 1 and height − 1 in 24 bits each. */
export function webpExtendedBytes(width: number, height: number): Uint8Array {
  return riff('VP8X', [0x10, 0, 0, 0, ...le24(width - 1), ...le24(height - 1)]);
}

export function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('base64');
}

/** A base64 data URL; `padTo` pads the image with filler to about that many characters of URL. */
export function dataUrl(bytes: Uint8Array, mediaType = 'image/png', padTo = 0): string {
  const filler = Math.max(0, Math.ceil(((padTo - bytes.length * (4 / 3)) * 3) / 4));
  const whole = new Uint8Array(bytes.length + filler);
  whole.set(bytes);
  whole.fill(0x42, bytes.length);
  return `data:${mediaType};base64,${base64(whole)}`;
}
