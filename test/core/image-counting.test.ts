// Issue 19 item 2: every content part is counted, none is 0 — images by their provider's rule from the size
// their own header gives (PNG, JPEG, GIF, WebP, built byte by byte in test/support/images.ts),
// audio, files and unknown parts by size; hostile headers read as "unknown", never as a crash.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { countTextTokens, createBpeCounter } from '../../src/core/counting/bpe-counter.js';
import {
  ANTHROPIC_UNKNOWN_IMAGE_TOKENS,
  anthropicImageTokens,
  imageSizeOfBase64,
  imageSizeOfDataUrl,
  OPENAI_UNKNOWN_IMAGE_TOKENS,
  openaiImageTokens,
} from '../../src/core/counting/image-size.js';
import { nonTextPartTokens, partJsonChars } from '../../src/core/counting/parts.js';
import { createCharCounter, defaultCounter } from '../../src/core/counting/tokens.js';
import { needsCompactionCore } from '../../src/core/compaction/needs-compaction.js';
import { resolveOptions } from '../../src/core/compaction/options.js';
import { renderTranscript } from '../../src/core/compaction/transcript.js';
import { InvalidInputError } from '../../src/core/errors.js';
import type { ChatMessage, ContentPart } from '../../src/core/types.js';
import {
  base64,
  dataUrl,
  gifBytes,
  jpegBytes,
  pngBytes,
  webpExtendedBytes,
  webpLosslessBytes,
  webpLossyBytes,
} from '../support/images.js';

const image = (url: string, detail?: 'low' | 'high' | 'auto'): ContentPart => ({
  type: 'image_url',
  image_url: detail === undefined ? { url } : { url, detail },
});
const userWith = (...content: ContentPart[]): ChatMessage => ({ role: 'user', content });

describe('image size from the header', () => {
  it('reads PNG, GIF (87a and 89a), JPEG (baseline, progressive, behind a 60 KB EXIF block) and WebP (VP8, VP8L, VP8X)', () => {
    expect(imageSizeOfBase64(base64(pngBytes(1280, 800)))).toEqual({ width: 1280, height: 800, format: 'png' });
    expect(imageSizeOfBase64(base64(gifBytes(320, 200)))).toEqual({ width: 320, height: 200, format: 'gif' });
    expect(imageSizeOfBase64(base64(gifBytes(1, 65_535, '87a')))).toEqual({ width: 1, height: 65_535, format: 'gif' });
    expect(imageSizeOfBase64(base64(jpegBytes(1920, 1080)))).toEqual({ width: 1920, height: 1080, format: 'jpeg' });
    expect(imageSizeOfBase64(base64(jpegBytes(640, 480, { sof: 0xc2 })))).toEqual({
      width: 640,
      height: 480,
      format: 'jpeg',
    });
    expect(imageSizeOfBase64(base64(jpegBytes(4032, 3024, { exifBytes: 60_000 })))).toEqual({
      width: 4032,
      height: 3024,
      format: 'jpeg',
    });
    expect(imageSizeOfBase64(base64(webpLossyBytes(800, 600)))).toEqual({ width: 800, height: 600, format: 'webp' });
    expect(imageSizeOfBase64(base64(webpLosslessBytes(1024, 768)))).toEqual({
      width: 1024,
      height: 768,
      format: 'webp',
    });
    expect(imageSizeOfBase64(base64(webpLosslessBytes(16_384, 1)))).toEqual({
      width: 16_384,
      height: 1,
      format: 'webp',
    });
    expect(imageSizeOfBase64(base64(webpExtendedBytes(5000, 3000)))).toEqual({
      width: 5000,
      height: 3000,
      format: 'webp',
    });
  });

  it('reads a data URL by the bytes, not the media type; a remote or non-base64 URL has no size', () => {
    expect(imageSizeOfDataUrl(dataUrl(pngBytes(10, 20), 'image/jpeg'))).toEqual({
      width: 10,
      height: 20,
      format: 'png',
    });
    expect(imageSizeOfDataUrl(`DATA:image/gif;BASE64,${base64(gifBytes(3, 4))}`)).toEqual({
      width: 3,
      height: 4,
      format: 'gif',
    });
    expect(imageSizeOfDataUrl('https://example.test/shot.png')).toBeUndefined();
    expect(imageSizeOfDataUrl('data:image/svg+xml,<svg width="10" height="10"/>')).toBeUndefined();
    expect(imageSizeOfDataUrl('data:image/png;base64')).toBeUndefined();
  });

  it('reads base64 wrapped in MIME lines, and URL-safe base64', () => {
    const wrapped = base64(jpegBytes(300, 200, { exifBytes: 500 })).replace(/.{76}/g, '$&\r\n');
    expect(wrapped).toContain('\r\n');
    expect(imageSizeOfBase64(wrapped)).toEqual({ width: 300, height: 200, format: 'jpeg' });
    // a 60 KB EXIF block wrapped in lines: the reads that jumped over the whitespace are read again
    const bigWrapped = base64(jpegBytes(640, 360, { exifBytes: 60_000 })).replace(/.{76}/g, '$&\n');
    expect(imageSizeOfBase64(bigWrapped)).toEqual({ width: 640, height: 360, format: 'jpeg' });
    // whitespace after the header only: the header reads as it is
    expect(imageSizeOfBase64(`${base64(pngBytes(7, 9))}\n`)).toEqual({ width: 7, height: 9, format: 'png' });
    const urlSafe = Buffer.from(pngBytes(0xfbff, 0xffbf)).toString('base64url');
    expect(urlSafe).toMatch(/[-_]/);
    expect(imageSizeOfBase64(urlSafe)).toEqual({ width: 0xfbff, height: 0xffbf, format: 'png' });
  });

  it('decodes only the header: whatever follows it may be anything', () => {
    const header = base64(pngBytes(64, 48, 2)).replace(/=+$/, '');
    expect(imageSizeOfBase64(header.slice(0, 32) + '!'.repeat(1_000_000))).toEqual({
      width: 64,
      height: 48,
      format: 'png',
    });
  });

  it('hostile headers: truncated, zero, garbage, endless fill bytes and broken segment lengths read as unknown', () => {
    const png = base64(pngBytes(1280, 800));
    for (let length = 0; length < 32; length += 1) expect(imageSizeOfBase64(png.slice(0, length))).toBeUndefined();
    expect(imageSizeOfBase64(base64(pngBytes(0, 800)))).toBeUndefined();
    expect(imageSizeOfBase64(base64(gifBytes(0, 0)))).toBeUndefined();
    const jpeg = jpegBytes(300, 200);
    const frameHeader = jpeg.findIndex((byte, index) => byte === 0xff && jpeg[index + 1] === 0xc0);
    // Cut anywhere before the frame header's width is complete: no size.
    for (let length = 0; length < frameHeader + 9; length += 1)
      expect(imageSizeOfBase64(base64(jpeg.slice(0, length)))).toBeUndefined();
    // SOI then a million fill bytes: the walk stops at its marker budget.
    const fill = new Uint8Array(1_000_002).fill(0xff);
    fill[1] = 0xd8;
    expect(imageSizeOfBase64(base64(fill))).toBeUndefined();
    // A segment length under 2 would loop on the spot.
    expect(imageSizeOfBase64(base64(Uint8Array.from([0xff, 0xd8, 0xff, 0xe0, 0, 1, 0, 0])))).toBeUndefined();
    // Scan data before any frame header.
    expect(imageSizeOfBase64(base64(Uint8Array.from([0xff, 0xd8, 0xff, 0xda, 0, 2, 0xff, 0xd9])))).toBeUndefined();
    // A segment that says it runs past the end.
    expect(imageSizeOfBase64(base64(Uint8Array.from([0xff, 0xd8, 0xff, 0xe1, 0xff, 0xff, 1, 2])))).toBeUndefined();
    expect(imageSizeOfBase64('====')).toBeUndefined();
    expect(imageSizeOfBase64('')).toBeUndefined();
  });

  it('huge dimensions are read as they are and cost no more than the largest image of each rule', () => {
    const size = imageSizeOfBase64(base64(pngBytes(0x7fffffff, 0xffffffff)));
    expect(size).toEqual({ width: 0x7fffffff, height: 0xffffffff, format: 'png' });
    expect(openaiImageTokens(size!.width, size!.height)).toBeLessThanOrEqual(OPENAI_UNKNOWN_IMAGE_TOKENS);
    expect(anthropicImageTokens(size!.width, size!.height)).toBeLessThanOrEqual(ANTHROPIC_UNKNOWN_IMAGE_TOKENS);
  });

  it('any bytes at all: a positive size or undefined, never a throw', () => {
    const heads = fc.constantFrom(
      [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a],
      [0xff, 0xd8],
      [0x47, 0x49, 0x46, 0x38, 0x39, 0x61],
      [0x52, 0x49, 0x46, 0x46, 1, 2, 3, 4, 0x57, 0x45, 0x42, 0x50],
      [],
    );
    fc.assert(
      fc.property(heads, fc.uint8Array({ maxLength: 80 }), (head, tail) => {
        const size = imageSizeOfBase64(base64(Uint8Array.from([...head, ...tail])));
        if (size !== undefined) {
          expect(Number.isSafeInteger(size.width) && size.width > 0).toBe(true);
          expect(Number.isSafeInteger(size.height) && size.height > 0).toBe(true);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe("OpenAI's image rule", () => {
  it("matches OpenAI's worked examples and the tile arithmetic", () => {
    expect(openaiImageTokens(1024, 1024, 'high')).toBe(765); // → 768 × 768, 4 tiles
    expect(openaiImageTokens(2048, 4096, 'high')).toBe(1105); // → 1024 × 2048 → 768 × 1536, 6 tiles
    expect(openaiImageTokens(4096, 8192, 'low')).toBe(85);
    expect(openaiImageTokens(1280, 800)).toBe(1105); // auto counts as high: → 1229 × 768, 3 × 2 tiles
    expect(openaiImageTokens(512, 512)).toBe(255); // never scaled up: 1 tile
    expect(openaiImageTokens(513, 100)).toBe(425); // 2 tiles
    expect(openaiImageTokens(2048, 768)).toBe(OPENAI_UNKNOWN_IMAGE_TOKENS); // 4 × 2 tiles: the most there is
    expect(OPENAI_UNKNOWN_IMAGE_TOKENS).toBe(1445);
    expect(openaiImageTokens(100_000, 10)).toBe(85 + 4 * 170); // → 2048 × 1 (rounded up to a pixel)
  });

  it('no image costs more than the conservative figure', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 100_000 }), fc.integer({ min: 1, max: 100_000 }), (width, height) => {
        const tokens = openaiImageTokens(width, height);
        expect(tokens).toBeGreaterThanOrEqual(255);
        expect(tokens).toBeLessThanOrEqual(OPENAI_UNKNOWN_IMAGE_TOKENS);
      }),
    );
  });

  it('refuses a size that is not a positive number, naming it', () => {
    expect(() => openaiImageTokens(0, 10)).toThrow(InvalidInputError);
    expect(() => openaiImageTokens(10, Number.NaN)).toThrow(/height/);
    expect(() => anthropicImageTokens(-1, 10)).toThrow(/width/);
  });
});

describe("Anthropic's image rule (for the Anthropic format)", () => {
  it('width × height / 750 after scaling to a 1568-pixel long edge and ~1,600 tokens', () => {
    expect(anthropicImageTokens(200, 200)).toBe(54); // 40,000 / 750 = 53.3
    expect(anthropicImageTokens(1000, 1000)).toBe(1334);
    expect(anthropicImageTokens(1092, 1092)).toBe(1590); // Anthropic's largest 1:1 size
    expect(anthropicImageTokens(3136, 200)).toBe(anthropicImageTokens(1568, 100)); // long edge halved
    expect(anthropicImageTokens(1568, 100)).toBe(210);
    expect(anthropicImageTokens(4000, 3000)).toBe(1600);
    expect(ANTHROPIC_UNKNOWN_IMAGE_TOKENS).toBe(1600);
  });

  it('never over the conservative figure', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50_000 }), fc.integer({ min: 1, max: 50_000 }), (width, height) => {
        const tokens = anthropicImageTokens(width, height);
        expect(tokens).toBeGreaterThanOrEqual(1);
        expect(tokens).toBeLessThanOrEqual(ANTHROPIC_UNKNOWN_IMAGE_TOKENS);
      }),
    );
  });
});

describe('counting parts in the OpenAI chat format', () => {
  const screenshot = dataUrl(pngBytes(1280, 800), 'image/png', 100_000);
  const audio: ContentPart = { type: 'input_audio', input_audio: { data: 'UklGRg'.repeat(1000), format: 'wav' } };
  const file: ContentPart = { type: 'file', file: { filename: 'report.pdf', file_data: 'JVBERi0'.repeat(500) } };
  const unknown: ContentPart = { type: 'computer_screenshot', payload: 'x'.repeat(4000) };

  it('the character estimator: an image by its rule, other parts by JSON length / charsPerToken', () => {
    const text = userWith({ type: 'text', text: 'look' });
    const base = defaultCounter.count([text]);
    expect(defaultCounter.count([userWith({ type: 'text', text: 'look' }, image(screenshot))]) - base).toBe(1105);
    expect(defaultCounter.count([userWith({ type: 'text', text: 'look' }, image(screenshot, 'low'))]) - base).toBe(85);
    expect(
      defaultCounter.count([userWith({ type: 'text', text: 'look' }, image('https://example.test/a.png'))]) - base,
    ).toBe(1445);
    for (const part of [audio, file, unknown]) {
      const chars = 4 + JSON.stringify(part).length;
      expect(defaultCounter.count([userWith({ type: 'text', text: 'look' }, part)])).toBe(Math.ceil(chars / 4) + 4);
      expect(createCharCounter({ charsPerToken: 2 }).count([userWith(part)])).toBe(
        Math.ceil(JSON.stringify(part).length / 2) + 4,
      );
    }
    expect(createCharCounter({ perNonTextPart: 7 }).count([userWith(image(screenshot), audio)])).toBe(4 + 14);
    expect(() => createCharCounter({ perNonTextPart: -1 })).toThrow(/options\.perNonTextPart/);
  });

  it('the BPE counter: an image by its rule, other parts by JSON length / 4, text tokenized', () => {
    const counter = createBpeCounter();
    const base = counter.count([userWith({ type: 'text', text: 'look' })]);
    expect(counter.count([userWith({ type: 'text', text: 'look' }, image(screenshot))]) - base).toBe(1105);
    expect(counter.count([userWith({ type: 'text', text: 'look' }, image(screenshot, 'low'))]) - base).toBe(85);
    for (const part of [audio, file, unknown]) {
      expect(counter.count([userWith({ type: 'text', text: 'look' }, part)]) - base).toBe(
        Math.ceil(JSON.stringify(part).length / 4),
      );
    }
    // base64 is charged by size, never tokenized (which would cost more and mean nothing)
    expect(countTextTokens(JSON.stringify(unknown))).not.toBe(Math.ceil(JSON.stringify(unknown).length / 4));
  });

  it("a part's size is its JSON length (escapes aside), measured without serializing it; a cycle does not throw", () => {
    const plain = fc.dictionary(
      fc.string({ unit: fc.constantFrom('a', 'b', '_', '1') }),
      fc.oneof(
        fc.base64String(),
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.array(fc.oneof(fc.base64String(), fc.double({ noNaN: true, noDefaultInfinity: true }))),
        fc.record({ data: fc.base64String(), format: fc.constantFrom('wav', 'mp3') }),
      ),
    );
    fc.assert(
      fc.property(plain, (fields) => {
        const part = { ...fields, type: 'input_audio' } as ContentPart;
        expect(partJsonChars(part)).toBe(JSON.stringify(part).length);
      }),
    );
    const cyclic: Record<string, unknown> = { type: 'custom', data: 'AAAA' };
    cyclic.self = cyclic;
    expect(partJsonChars(cyclic as ContentPart)).toBeGreaterThan(0);
    expect(defaultCounter.count([userWith(cyclic as ContentPart)])).toBeGreaterThan(4);
  });

  it('no part counts 0', () => {
    const part = fc.oneof(
      fc.record({ type: fc.constant('image_url'), image_url: fc.record({ url: fc.string({ maxLength: 40 }) }) }),
      fc.record({ type: fc.string({ maxLength: 12 }).filter((type) => type !== 'text') }),
      fc.record({
        type: fc.constant('input_audio'),
        input_audio: fc.record({ data: fc.base64String(), format: fc.string() }),
      }),
      fc.record({ type: fc.constant('text'), text: fc.integer() }),
    );
    const bpe = createBpeCounter();
    fc.assert(
      fc.property(part, (generated) => {
        const asPart = generated as ContentPart;
        expect(nonTextPartTokens(asPart, 4)).toBeGreaterThan(0);
        expect(defaultCounter.count([userWith(asPart)])).toBeGreaterThan(defaultCounter.count([userWith()]));
        expect(bpe.count([userWith(asPart)])).toBeGreaterThan(bpe.count([userWith()]));
      }),
    );
  });

  it('a conversation of 100 KB screenshots is compacted; charged 0 each, it would not be', () => {
    const messages: ChatMessage[] = [{ role: 'system', content: 'You drive a browser.' }];
    for (let round = 0; round < 12; round += 1) {
      messages.push({ role: 'user', content: [{ type: 'text', text: `step ${round}` }, image(screenshot)] });
      messages.push({ role: 'assistant', content: `clicked ${round}` });
    }
    expect(screenshot.length).toBeGreaterThanOrEqual(100_000);
    const options = resolveOptions({ contextBudget: 16_000 });
    const counted = defaultCounter.count(messages);
    expect(counted).toBeGreaterThan(12 * 1105);
    expect(needsCompactionCore(messages, options, {}, defaultCounter)).toBe(true);
    expect(needsCompactionCore(messages, options, {}, createCharCounter({ perNonTextPart: 0 }))).toBe(false);
    expect(needsCompactionCore(messages, options, {}, createBpeCounter())).toBe(true);
  });
});

describe("the summarizer's transcript shows parts, never their data", () => {
  it('images by size and format, audio and files by name and bytes, unknown parts by type', () => {
    const transcript = renderTranscript(
      [
        userWith(
          { type: 'text', text: 'see ' },
          image(dataUrl(pngBytes(1280, 800), 'image/png', 5000)),
          image('https://example.test/remote.jpg'),
          { type: 'input_audio', input_audio: { data: 'AAAA'.repeat(12_000), format: 'wav' } },
          { type: 'file', file: { filename: 'report.pdf', file_data: 'AAA=' } },
          { type: 'file', file: { file_id: 'file-123' } },
          { type: 'refusal_like', blob: 'QUFB'.repeat(100) },
        ),
      ],
      2000,
    );
    expect(transcript).toBe(
      '[user]\nsee [image: 1280×800 png][image][audio: wav, 36,000 bytes][file: report.pdf, 2 bytes][file: file-123][refusal_like]',
    );
    expect(transcript).not.toContain('base64');
  });
});
