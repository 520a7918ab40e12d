// Sandbox-safe: a token counter calibrated by what the provider billed (docs/design.md#usage-counter); state is plain JSON.
import { z } from 'zod';
import { digestJsonArray, digestMessagePrefix } from './digest.js';
import { InvalidInputError } from '../errors.js';
import { checkWith } from '../schema.js';
import { defaultCounter } from './tokens.js';
import type { ChatMessage, TokenCounter } from '../types.js';

/** What a {@link UsageCounter} carries across continue-as-new. */
export interface UsageCounterState {
  version: 1;
  /** `digest` is `digestMessagePrefix` of exactly the `messageCount` messages calibrated. */
  calibration: { messageCount: number; digest: string; billedPromptTokens: number } | null;
}

export interface UsageCounterOptions {
  /** Counts what the calibration does not cover. @default the character estimator (`counters.chars()`) */
  estimator?: TokenCounter;
}

const usageCounterStateSchema = z.strictObject({
  version: z.literal(1),
  calibration: z
    .strictObject({
      messageCount: z.number().int().nonnegative(),
      digest: z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex digits'),
      billedPromptTokens: z.number().int().nonnegative(),
    })
    .nullable(),
});

/** A message copied as plain JSON data (strings shared), so no later change by a caller reaches it; keys in JSON order. */
type Snapshot = string | number | boolean | null | Snapshot[] | ObjectSnapshot;

class ObjectSnapshot {
  constructor(
    readonly keys: string[],
    readonly values: Snapshot[],
  ) {}
}

function isHarnessFlag(key: string): boolean {
  return key === 'sticky' || key === 'depth';
}

function isPlainArray(value: object): value is unknown[] {
  return Array.isArray(value) && Object.getPrototypeOf(value) === Array.prototype;
}

function isPlainObject(value: object): value is Record<string, unknown> {
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** Snapshot of plain JSON data; undefined for anything JSON would transform (Dates, NaN, functions, holes, ...). */
function snapshotOf(value: unknown, topLevel: boolean): Snapshot | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : undefined;
    case 'object': {
      if (value === null) return null;
      if (isPlainArray(value)) return allSnapshots(Array.from(value, (element) => snapshotOf(element, false)));
      if (!isPlainObject(value)) return undefined;
      const keys: string[] = [];
      const values: Snapshot[] = [];
      for (const key of Object.keys(value)) {
        if (topLevel && isHarnessFlag(key)) continue;
        const field = value[key];
        if (field === undefined) continue;
        const snapshot = snapshotOf(field, false);
        if (snapshot === undefined) return undefined;
        keys.push(key);
        values.push(snapshot);
      }
      return new ObjectSnapshot(keys, values);
    }
    default:
      return undefined;
  }
}

/** The snapshots, or undefined when one value had none (a hole counts as none). */
function allSnapshots(snapshots: (Snapshot | undefined)[]): Snapshot[] | undefined {
  return snapshots.includes(undefined) ? undefined : (snapshots as Snapshot[]);
}

function snapshotMessages(messages: readonly ChatMessage[], count: number): Snapshot[] | undefined {
  return allSnapshots(messages.slice(0, count).map((message) => snapshotOf(message, true)));
}

function serializeSnapshot(snapshot: Snapshot): string {
  if (snapshot === null || typeof snapshot !== 'object') return JSON.stringify(snapshot);
  if (Array.isArray(snapshot)) return `[${snapshot.map(serializeSnapshot).join(',')}]`;
  let json = '{';
  for (let i = 0; i < snapshot.keys.length; i++) {
    if (i > 0) json += ',';
    json += `${JSON.stringify(snapshot.keys[i])}:${serializeSnapshot(snapshot.values[i] ?? null)}`;
  }
  return `${json}}`;
}

/** Whether `value` serializes as the data `snapshot` was taken from; 'unknown' when it is not plain JSON data. */
type Verdict = 'same' | 'different' | 'unknown';

function compareToSnapshot(value: unknown, snapshot: Snapshot, topLevel: boolean): Verdict {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value === snapshot ? 'same' : 'different';
    case 'number':
      if (!Number.isFinite(value)) return 'unknown';
      return value === snapshot ? 'same' : 'different';
    case 'object': {
      if (value === null) return snapshot === null ? 'same' : 'different';
      if (Array.isArray(value)) {
        if (!isPlainArray(value)) return 'unknown';
        if (!Array.isArray(snapshot) || snapshot.length !== value.length) return 'different';
        for (let i = 0; i < value.length; i++) {
          const verdict = compareToSnapshot(value[i], snapshot[i] ?? null, false);
          if (verdict !== 'same') return verdict;
        }
        return 'same';
      }
      if (!isPlainObject(value)) return 'unknown';
      if (!(snapshot instanceof ObjectSnapshot)) return 'different';
      let index = 0;
      for (const key of Object.keys(value)) {
        if (topLevel && isHarnessFlag(key)) continue;
        const field = value[key];
        if (field === undefined) continue;
        const kind = typeof field;
        if (kind === 'function' || kind === 'symbol' || kind === 'bigint') return 'unknown';
        if (index >= snapshot.keys.length || snapshot.keys[index] !== key) return 'different';
        const verdict = compareToSnapshot(field, snapshot.values[index] ?? null, false);
        if (verdict !== 'same') return verdict;
        index++;
      }
      return index === snapshot.keys.length ? 'same' : 'different';
    }
    default:
      return 'unknown';
  }
}

function comparePrefix(messages: readonly ChatMessage[], snapshots: readonly Snapshot[]): Verdict {
  let verdict: Verdict = 'same';
  // A hole in `messages` is 'unknown' (not plain data); a later message that differs still settles it.
  for (let i = 0; i < snapshots.length; i++) {
    const messageVerdict = compareToSnapshot(messages[i], snapshots[i] ?? null, true);
    if (messageVerdict === 'different') return 'different';
    if (messageVerdict === 'unknown') verdict = 'unknown';
  }
  return verdict;
}

interface Calibration {
  messageCount: number;
  billedPromptTokens: number;
  digest: string | undefined;
  /** Plain-JSON copies of the calibrated messages; undefined when not plain JSON, or after `fromJSON` until a count verifies the prefix. */
  snapshots: Snapshot[] | undefined;
}

/**
 * A counter calibrated by what the provider billed (docs/design.md#usage-counter): for messages that start with the
 * calibrated ones, the billed tokens plus an estimate of the rest; else the estimator's count.
 */
export class UsageCounter implements TokenCounter {
  private readonly estimator: TokenCounter;
  private calibration: Calibration | undefined;

  constructor({ estimator = defaultCounter }: UsageCounterOptions = {}) {
    this.estimator = estimator;
  }

  /** Restores a counter from its `toJSON` state; an `InvalidInputError` names the offending field. */
  static fromJSON(state: unknown, estimator: TokenCounter = defaultCounter): UsageCounter {
    const { calibration } = checkWith(usageCounterStateSchema, state, 'state');
    const counter = new UsageCounter({ estimator });
    if (calibration !== null) counter.calibration = { ...calibration, snapshots: undefined };
    return counter;
  }

  /** Records a billed request: exactly the messages sent and its `usage.prompt_tokens`. */
  calibrate(messagesSent: readonly ChatMessage[], billedPromptTokens: number): void {
    if (!Array.isArray(messagesSent)) throw new InvalidInputError('messagesSent', 'must be an array of messages');
    if (!Number.isSafeInteger(billedPromptTokens) || billedPromptTokens < 0)
      throw new InvalidInputError(
        'billedPromptTokens',
        `must be a non-negative integer, got ${String(billedPromptTokens)}`,
      );
    const snapshots = snapshotMessages(messagesSent, messagesSent.length);
    this.calibration = {
      messageCount: messagesSent.length,
      billedPromptTokens,
      digest: snapshots === undefined ? digestMessagePrefix(messagesSent) : undefined,
      snapshots,
    };
  }

  reset(): void {
    this.calibration = undefined;
  }

  count(messages: readonly ChatMessage[]): number {
    const calibration = this.calibration;
    if (calibration === undefined || !this.startsWithCalibrated(messages, calibration))
      return this.estimator.count(messages);
    if (messages.length === calibration.messageCount) return calibration.billedPromptTokens;
    const rest = messages.slice(calibration.messageCount);
    return calibration.billedPromptTokens + Math.max(0, this.estimator.count(rest) - this.estimator.count([]));
  }

  /** `UsageCounter.fromJSON(JSON.parse(JSON.stringify(counter)))` counts identically. */
  toJSON(): UsageCounterState {
    const calibration = this.calibration;
    if (calibration === undefined) return { version: 1, calibration: null };
    const { messageCount, billedPromptTokens } = calibration;
    return { version: 1, calibration: { messageCount, digest: digestOf(calibration), billedPromptTokens } };
  }

  private startsWithCalibrated(messages: readonly ChatMessage[], calibration: Calibration): boolean {
    if (messages.length < calibration.messageCount) return false;
    if (calibration.snapshots !== undefined) {
      const verdict = comparePrefix(messages, calibration.snapshots);
      if (verdict !== 'unknown') return verdict === 'same';
    }
    const matches = digestMessagePrefix(messages, calibration.messageCount) === digestOf(calibration);
    if (matches) calibration.snapshots ??= snapshotMessages(messages, calibration.messageCount);
    return matches;
  }
}

function digestOf(calibration: Calibration): string {
  if (calibration.digest === undefined) {
    if (calibration.snapshots === undefined)
      throw new Error('UsageCounter: a calibration without digest nor snapshots');
    calibration.digest = digestJsonArray(calibration.snapshots, calibration.snapshots.length, serializeSnapshot);
  }
  return calibration.digest;
}
