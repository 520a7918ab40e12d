// Sandbox-safe: what an agent run has spent and compacted (docs/design.md#cost): its compaction history with its usage,
// the request the next one's prompt cache is modelled against, and the largest context it sent.
import type { ChatActivityOutput } from '../../activities/index.js';
import type { AgentRunCarried } from '../../core/agent/carried-state.js';
import {
  addCompactionRecord,
  emptyCompactionHistory,
  type CompactionHistory,
  type CompactionRecord,
} from '../../core/agent/compaction-history.js';
import type { BackendCounter } from '../../core/agent/preflight.js';
import { requestCost, type RequestShape } from '../../core/agent/request-cost.js';
import { addRoundUsage, addSummarizerUsage, type Pricing, type RoundUsage } from '../../core/agent/run-usage.js';
import type { SummarizerUsage } from '../../core/counting/summarizer-usage.js';
import type { ChatMessage } from '../../core/types.js';

/** One answered chat request: the transcript ids it sent, the backend that answered, the run's own count. */
interface ChatRequest {
  ids: string[];
  sent: readonly ChatMessage[];
  backend: BackendCounter;
  tokens: number;
  answer: ChatActivityOutput;
}

export class UsageLedger {
  private history: CompactionHistory;
  private previousRequest: RequestShape | null;
  private peak: number;
  /** JSON sizes of message objects already measured. */
  private readonly sizes = new WeakMap<ChatMessage, number>();

  constructor(
    pricing: Pricing,
    carried: Pick<AgentRunCarried, 'compactions' | 'previousRequest' | 'peakContextTokens'> | undefined,
  ) {
    this.history = carried?.compactions ?? emptyCompactionHistory(pricing);
    this.previousRequest = carried?.previousRequest ?? null;
    this.peak = carried?.peakContextTokens ?? 0;
  }

  /** The compaction history with the run's usage (the `compactions` query). */
  get compactions(): CompactionHistory {
    return this.history;
  }

  get lastRequest(): RequestShape | null {
    return this.previousRequest;
  }

  /** The largest context a request sent, as the provider reported it (else as counted). */
  get peakContextTokens(): number {
    return this.peak;
  }

  chargeRound({ ids, sent, backend, tokens, answer }: ChatRequest): RoundUsage {
    const shape: RequestShape = { ids, sizes: sent.map((message) => this.sizeOf(message)) };
    const usage = requestCost({
      backend: backend.backend.label,
      sent,
      shape,
      previous: this.previousRequest,
      tokens,
      reported: answer.usage,
      count: (messages) => backend.usage.count(messages),
    });
    this.previousRequest = shape;
    this.history = { ...this.history, usage: addRoundUsage(this.history.usage, usage) };
    this.peak = Math.max(this.peak, answer.usage?.promptTokens ?? tokens);
    return usage;
  }

  /** The summarizer is billed even when its summary is not applied. */
  chargeSummarizer(summarizerUsage: SummarizerUsage | undefined): void {
    if (summarizerUsage !== undefined)
      this.history = { ...this.history, usage: addSummarizerUsage(this.history.usage, summarizerUsage) };
  }

  addRecord(record: CompactionRecord): void {
    this.history = addCompactionRecord(this.history, record);
  }

  private sizeOf(message: ChatMessage): number {
    let size = this.sizes.get(message);
    if (size === undefined) this.sizes.set(message, (size = JSON.stringify(message).length));
    return size;
  }
}
