// Sandbox-safe: the token counters, as the one object a caller picks from (docs/compaction.md#counting).
import { createBpeCounter } from './bpe-counter.js';
import { withRequestFraming } from './request-counter.js';
import { createCharCounter } from './tokens.js';
import { UsageCounter, type UsageCounterOptions } from './usage-counter.js';
import type { TokenCounter } from '../types.js';

/** The counters a compaction may count with: `compact(messages, { contextBudget, counter: counters.bpe() })`. */
export const counters = {
  /** Characters / 4 plus 4 per message: the counter a compaction uses when it is given none. */
  chars: createCharCounter,
  /** A real `o200k_base` (default) or `cl100k_base` tokenizer, in pure JS. */
  bpe: createBpeCounter,
  /** A counter calibrated by the prompt tokens a provider billed (`calibrate`), over an estimator. */
  usage: (options?: UsageCounterOptions): UsageCounter => new UsageCounter(options),
  /** A usage counter restored from its `toJSON()` state (after a continue-as-new, a query, `JSON.parse`). */
  usageFromJSON: (state: unknown, estimator?: TokenCounter): UsageCounter => UsageCounter.fromJSON(state, estimator),
  /** A counter of whole requests: the messages plus a backend's tool declarations and per-request framing. */
  withRequestFraming,
} as const;
