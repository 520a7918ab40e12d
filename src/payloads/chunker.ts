// Node only (pure): where to cut a payload into chunks so that consecutive payloads of an agent run
// share almost all their chunks, and a message shares its chunks wherever it appears (chat input,
// tool result, transcript line). The cuts follow the JSON:
// - An object of `soloElement` bytes or more is cut at its own first and last byte, so its chunks
//   depend on its bytes alone, not on what surrounds it.
// - Between those, candidates are the ends of array elements that are objects or arrays, chosen by
//   rules that look only at the bytes since the last cut: a prefix always gets the same cuts, and
//   only its last open group is written again when it grows.
// - Inside a stretch too big for one chunk a gear rolling hash picks content-defined cuts.
// Bytes that are not JSON are cut by the rolling hash alone.
import { createHash } from 'node:crypto';

export interface ChunkerLimits {
  /** No cut makes a chunk smaller than this (the last chunk excepted). @default 512 */
  minChunk: number;
  /** An object at least this long is cut at its first and last byte, wherever it sits; an array element at least this long ends its chunk. @default 512 */
  soloElement: number;
  /** A run of small elements is cut once its chunk reaches this many bytes. @default 8192 */
  groupMax: number;
  /** A chunk longer than this is cut by the rolling hash (and at this length at the latest). @default 16384 */
  maxChunk: number;
  /** The rolling hash does not cut before this many bytes. @default 2048 */
  hashMin: number;
  /** Bits of the rolling hash that must be zero to cut: about one cut every 2^bits bytes past `hashMin`. @default 12 */
  hashBits: number;
}

export const DEFAULT_CHUNKER_LIMITS: ChunkerLimits = {
  minChunk: 512,
  soloElement: 512,
  groupMax: 8192,
  maxChunk: 16_384,
  hashMin: 2048,
  hashBits: 12,
};

// The gear table: 256 fixed pseudo-random words. Derived from a hash so it is the same in every
// process and version (changing it would move every cut and lose all dedup with older chunks).
const GEAR = (() => {
  const table = new Uint32Array(256);
  for (let index = 0; index < 256; index += 1)
    table[index] = createHash('sha256').update(`temporal-compactor gear ${index}`).digest().readUInt32BE(0);
  return table;
})();

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
// Deeper nesting is not followed (no candidates there): it bounds the scanner's memory on hostile input.
const MAX_DEPTH = 64;
// Element ends whose rolling hash has these top bits zero are content-defined cuts in a run of
// small elements (one in eight), so runs resynchronise after an edit without a big element.
const GROUP_HASH_SHIFT = 29;

interface OpenContainer {
  isArray: boolean;
  /** Offset of its opening brace or bracket. */
  start: number;
  /** Offset where the array element now being read began, or -1. */
  elementStart: number;
  /** Index in `ends` of this array's previous element, or -1. */
  previous: number;
}

/** The end of an array element, with what the cut rules need to know about it. */
interface ElementEnd {
  end: number;
  length: number;
  /** The last element of its array. */
  last: boolean;
  /** The rolling hash over the bytes just before `end`. */
  gear: number;
}

/** Where array elements that are objects or arrays end, and objects of `soloElement` bytes or more begin and end. */
function jsonShape(data: Uint8Array, soloElement: number): { ends: ElementEnd[]; soloCuts: number[] } {
  const ends: ElementEnd[] = [];
  const soloCuts: number[] = [];
  const stack: OpenContainer[] = [];
  let inString = false;
  let escaped = false;
  let gear = 0;
  for (let index = 0; index < data.length; index += 1) {
    const byte = data[index] ?? 0;
    gear = ((gear << 1) + (GEAR[byte] ?? 0)) >>> 0;
    if (inString) {
      if (escaped) escaped = false;
      else if (byte === BACKSLASH) escaped = true;
      else if (byte === QUOTE) inString = false;
      continue;
    }
    if (byte === QUOTE) {
      inString = true;
    } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      const parent = stack[stack.length - 1];
      if (parent !== undefined && parent.isArray && parent.elementStart < 0) parent.elementStart = index;
      if (stack.length < MAX_DEPTH)
        stack.push({ isArray: byte === OPEN_BRACKET, start: index, elementStart: -1, previous: -1 });
    } else if ((byte === CLOSE_BRACE || byte === CLOSE_BRACKET) && stack.length > 0) {
      const closed = stack.pop();
      const lastEnd = closed?.isArray === true ? ends[closed.previous] : undefined;
      if (lastEnd !== undefined) lastEnd.last = true;
      if (closed !== undefined && !closed.isArray && index + 1 - closed.start >= soloElement)
        soloCuts.push(closed.start, index + 1);
      const parent = stack[stack.length - 1];
      if (parent !== undefined && parent.isArray && parent.elementStart >= 0) {
        const end: ElementEnd = { end: index + 1, length: index + 1 - parent.elementStart, last: false, gear };
        parent.previous = ends.push(end) - 1;
        parent.elementStart = -1;
      }
    }
  }
  // Objects close inner first: the starts and ends of nested ones interleave.
  soloCuts.sort((a, b) => a - b);
  return { ends, soloCuts };
}

function hashCuts(data: Uint8Array, start: number, end: number, limits: ChunkerLimits): number[] {
  const cuts: number[] = [];
  const mask = limits.hashBits >= 32 ? 0xffffffff : ~(0xffffffff >>> limits.hashBits) >>> 0;
  let chunkStart = start;
  while (end - chunkStart > limits.maxChunk) {
    let gear = 0;
    let cut = chunkStart + limits.maxChunk;
    // The hash needs a window of history; start it 32 bytes before the first place a cut may fall.
    const from = Math.max(chunkStart, chunkStart + limits.hashMin - 32);
    for (let index = from; index < chunkStart + limits.maxChunk; index += 1) {
      gear = ((gear << 1) + (GEAR[data[index] ?? 0] ?? 0)) >>> 0;
      if (index + 1 - chunkStart >= limits.hashMin && (gear & mask) === 0) {
        cut = index + 1;
        break;
      }
    }
    cuts.push(cut);
    chunkStart = cut;
  }
  cuts.push(end);
  return cuts;
}

/** The end offsets of the chunks of `data`, ascending (the last is `data.length`). Deterministic. */
export function chunkBoundaries(data: Uint8Array, limits: ChunkerLimits = DEFAULT_CHUNKER_LIMITS): number[] {
  const { ends, soloCuts } = jsonShape(data, limits.soloElement);
  const structural: number[] = [];
  let start = 0;
  let solo = 0;
  const cutAt = (offset: number): void => {
    if (offset <= start || offset >= data.length) return;
    structural.push(offset);
    start = offset;
  };
  for (const element of ends) {
    // A big object's first and last byte are cuts whatever came before: its chunks are its own.
    while (solo < soloCuts.length && (soloCuts[solo] ?? 0) <= element.end) cutAt(soloCuts[solo++] ?? 0);
    const length = element.end - start;
    if (length < limits.minChunk) continue;
    if (
      element.last ||
      element.length >= limits.soloElement ||
      element.gear >>> GROUP_HASH_SHIFT === 0 ||
      length >= limits.groupMax
    )
      cutAt(element.end);
  }
  while (solo < soloCuts.length) cutAt(soloCuts[solo++] ?? 0);
  if (start < data.length) structural.push(data.length);
  return structural.flatMap((end, index) => hashCuts(data, structural[index - 1] ?? 0, end, limits));
}
