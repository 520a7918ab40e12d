// Sandbox-safe: the options of the workflow `compact` (docs/design.md#workflow-compact), checked once.
import type { ActivityOptions } from '@temporalio/common';
import {
  COMPACTION_OPTION_KEYS,
  resolveOptions,
  type CallOverrides,
  type CompactionOptions,
  type ResolvedOptions,
} from '../core/compaction/options.js';
import { defaultCounter } from '../core/counting/tokens.js';
import { InvalidInputError } from '../core/errors.js';
import { isRecord } from '../core/schema.js';
import { formatOption, formatView, type FormatOption } from '../core/formats/format.js';
import { DEFAULT_PAYLOAD_LIMIT_BYTES } from '../core/limits/payload-size.js';
import type { TokenCounter } from '../core/types.js';
import { assertKnownKeys, keysOf } from '../core/unknown-keys.js';
import {
  SUMMARIZE_ACTIVITY_SETTING_KEYS,
  optionalString,
  summarizeActivityOptions,
  type SummarizeActivitySettings,
} from '../shared/activity-options.js';
import { failOnInvalidInput } from '../shared/failures.js';

/** Options of the workflow `compact`: the compaction options, the per-call overrides and the activity settings. */
export interface CompactOptions extends CompactionOptions, SummarizeActivitySettings {
  /** Aim at this many tokens for this call (the hard trim, the proof and `exhausted` use it). */
  target?: number;
  /** Count with this counter (code in the workflow: it must be deterministic). @default the character estimator */
  counter?: TokenCounter;
}

export const COMPACT_OPTION_KEYS: readonly string[] = [
  ...COMPACTION_OPTION_KEYS,
  ...SUMMARIZE_ACTIVITY_SETTING_KEYS,
  ...keysOf<Omit<CompactOptions, keyof CompactionOptions | keyof SummarizeActivitySettings>>({
    target: true,
    counter: true,
  }),
  ...keysOf<FormatOption>({ format: true }),
];

/** What a pass runs with, checked once: the engine's options and how the `summarize` activity is called. */
export interface CompactionSettings {
  options: ResolvedOptions;
  activity: ActivityOptions;
  summarizerModel: string | undefined;
  maxPayloadBytes: number;
  /** Whether the worker stores payloads externally; undefined: asked (`describeWorker`) when a request is over `maxPayloadBytes`. */
  payloadStore: boolean | undefined;
  /** Which compaction of a run this is and why it runs (`#2 trigger`): its activities' summaries start with it. */
  label?: string;
}

export interface CompactionCall {
  settings: CompactionSettings;
  overrides: CallOverrides;
}

/** Checks `compact`'s options (without `format`, which the view took): the settings, and `target` and `counter` as the call's overrides. */
function compactionCallOf(options: unknown): CompactionCall {
  if (typeof options !== 'object' || options === null)
    throw new InvalidInputError('options', 'must be an object with at least contextBudget');
  assertKnownKeys(options, COMPACT_OPTION_KEYS, 'options');
  const {
    target,
    counter,
    startToCloseTimeout,
    heartbeatTimeout,
    taskQueue,
    summarizerModel,
    maxPayloadBytes,
    payloadStore,
    ...compaction
  } = options as CompactOptions;
  const resolved = resolveOptions(compaction, 'options');
  if (counter !== undefined && typeof counter?.count !== 'function')
    throw new InvalidInputError('options.counter', 'must have a count(messages) method');
  const activity = summarizeActivityOptions(resolved, { startToCloseTimeout, heartbeatTimeout, taskQueue }, 'options');
  if (maxPayloadBytes !== undefined && !(Number.isSafeInteger(maxPayloadBytes) && maxPayloadBytes >= 1024))
    throw new InvalidInputError(
      'options.maxPayloadBytes',
      `must be an integer of at least 1024, got ${JSON.stringify(maxPayloadBytes)}`,
    );
  if (payloadStore !== undefined && typeof payloadStore !== 'boolean')
    throw new InvalidInputError('options.payloadStore', 'must be true or false');
  return {
    settings: {
      options: resolved,
      activity,
      summarizerModel: optionalString(summarizerModel, 'options.summarizerModel'),
      maxPayloadBytes: maxPayloadBytes ?? DEFAULT_PAYLOAD_LIMIT_BYTES,
      payloadStore,
    },
    overrides: { target, counter },
  };
}

/**
 * The pass of a call: `options.format` checked (here, once), the conversation mapped to the engine's `messages` (in
 * workflow code: the mapping is pure, so deterministic; `view` undefined for OpenAI chat), and its options checked.
 * @throws ApplicationFailure of type `Compaction.InvalidInput` for a bad format or a malformed conversation.
 */
export function passOf(conversation: unknown, options: unknown) {
  const { format, ...rest } = isRecord(options) ? options : {};
  const view = failOnInvalidInput(() => formatView(formatOption(format, 'options.format'), conversation));
  const engineOptions: unknown = isRecord(options) ? rest : options;
  const call = (): CompactionCall => {
    const checked = compactionCallOf(engineOptions);
    if (view !== undefined) checked.overrides.counter ??= defaultCounter;
    return checked;
  };
  return { view, messages: view?.messages ?? conversation, call };
}
