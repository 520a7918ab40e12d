// Sandbox-safe: what the counters charge for a content part that is not text (docs/design.md#count-parts).
import {
  ANTHROPIC_UNKNOWN_IMAGE_TOKENS,
  anthropicImageTokens,
  imageSizeOfBase64,
  imageSizeOfDataUrl,
  OPENAI_LOW_DETAIL_TOKENS,
  OPENAI_UNKNOWN_IMAGE_TOKENS,
  openaiImageTokens,
  type ImageSize,
  type OpenAiImageDetail,
} from './image-size.js';
import { isRecord } from '../schema.js';
import type { ContentPart } from '../types.js';

export interface ImagePartInfo {
  url: string;
  detail: OpenAiImageDetail;
  size: ImageSize | undefined;
}

/** The image of an `image_url` part; undefined for any other part. */
export function imagePartInfo(part: ContentPart): ImagePartInfo | undefined {
  if (part.type !== 'image_url') return undefined;
  const image: unknown = Reflect.get(part, 'image_url');
  if (!isRecord(image) || typeof image.url !== 'string') return undefined;
  const detail = image.detail === 'low' || image.detail === 'high' ? image.detail : 'auto';
  return { url: image.url, detail, size: imageSizeOfDataUrl(image.url) };
}

export function imagePartTokens(image: ImagePartInfo): number {
  if (image.detail === 'low') return OPENAI_LOW_DETAIL_TOKENS;
  return image.size === undefined
    ? OPENAI_UNKNOWN_IMAGE_TOKENS
    : openaiImageTokens(image.size.width, image.size.height, image.detail);
}

/** Tokens of an image by its provider's rule: an `image_url` part, an Anthropic `image` block, an AI SDK `image` part. */
export function imageTokens(part: ContentPart): number | undefined {
  const info = imagePartInfo(part);
  if (info !== undefined) return imagePartTokens(info);
  if (part.type !== 'image') return undefined;
  const source: unknown = Reflect.get(part, 'source');
  if (isRecord(source)) {
    const size =
      source.type === 'base64' && typeof source.data === 'string' ? imageSizeOfBase64(source.data) : undefined;
    return size === undefined ? ANTHROPIC_UNKNOWN_IMAGE_TOKENS : anthropicImageTokens(size.width, size.height);
  }
  const image: unknown = Reflect.get(part, 'image');
  if (image === undefined) return undefined;
  const size =
    typeof image !== 'string' || /^https?:/i.test(image)
      ? undefined
      : image.startsWith('data:')
        ? imageSizeOfDataUrl(image)
        : imageSizeOfBase64(image);
  return size === undefined ? OPENAI_UNKNOWN_IMAGE_TOKENS : openaiImageTokens(size.width, size.height, 'auto');
}

/** Levels of nesting a part's size is measured to (a cycle is not counted). */
const MAX_PART_DEPTH = 32;

/** The length of a part's JSON, escapes not counted; walked, so a cycle cannot throw. */
export function partJsonChars(value: unknown, depth = 0): number {
  if (typeof value === 'string') return value.length + 2;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value).length;
  if (value === null) return 4;
  if (typeof value !== 'object' || depth > MAX_PART_DEPTH) return 0;
  if (Array.isArray(value)) {
    let chars = 2 + Math.max(0, value.length - 1);
    for (const item of value) chars += partJsonChars(item, depth + 1);
    return chars;
  }
  let chars = 2;
  let fields = 0;
  for (const [key, field] of Object.entries(value)) {
    if (field === undefined || typeof field === 'function' || typeof field === 'symbol') continue;
    chars += key.length + 3 + partJsonChars(field, depth + 1);
    fields += 1;
  }
  return chars + Math.max(0, fields - 1);
}

/** An image by its provider's rule; anything else `⌈JSON length / charsPerToken⌉`, never 0. */
export function nonTextPartTokens(part: ContentPart, charsPerToken: number): number {
  return imageTokens(part) ?? Math.max(1, Math.ceil(partJsonChars(part) / charsPerToken));
}

export function isTextPart(part: ContentPart): part is { type: 'text'; text: string } {
  return part.type === 'text' && typeof part.text === 'string';
}

/** `1234567` → `1,234,567`, rounded, without `Intl` (a locale must not change what a workflow writes). */
export function groupDigits(value: number): string {
  return (value < 0 ? '-' : '') + String(Math.abs(Math.round(value))).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

export function imageSizeLabel(image: ImagePartInfo): string | undefined {
  return image.size === undefined ? undefined : `${image.size.width}×${image.size.height} ${image.size.format}`;
}

/** `[image elided: 1280×800 png, ~1,105 tokens]` (Latin-1 only, like the transcript's markers). */
export function imageStub(image: ImagePartInfo): string {
  return described('image elided', [imageSizeLabel(image), `~${groupDigits(imagePartTokens(image))} tokens`]);
}

/** A non-text part as the summarizer's transcript shows it, never its data: `[audio: wav, 48,000 bytes]`. */
export function describeNonTextPart(part: ContentPart): string {
  const image = imagePartInfo(part);
  if (image !== undefined) return described('image', [imageSizeLabel(image)]);
  const body: unknown = Reflect.get(part, part.type);
  if (part.type === 'input_audio' && isRecord(body))
    return described('audio', [stringOf(body.format), bytesOf(body.data)]);
  if (part.type === 'file' && isRecord(body))
    return described('file', [stringOf(body.filename) ?? stringOf(body.file_id), bytesOf(body.file_data)]);
  return `[${part.type}]`;
}

function described(kind: string, details: readonly (string | undefined)[]): string {
  const shown = details.filter((detail) => detail !== undefined);
  return shown.length === 0 ? `[${kind}]` : `[${kind}: ${shown.join(', ')}]`;
}

function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** The bytes base64 `data` holds, e.g. `48,000 bytes`. */
function bytesOf(data: unknown): string | undefined {
  if (typeof data !== 'string') return undefined;
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return `${groupDigits(Math.max(0, Math.floor((data.length * 3) / 4) - padding))} bytes`;
}
