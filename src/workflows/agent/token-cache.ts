// Sandbox-safe: the token counts an agent run knows, by text, per BPE encoding of its chain
// (docs/design.md#count-tokens), carried across continue-as-new so a run need not count again.
import { proxyActivities } from '@temporalio/workflow';
import type { CompactorActivities } from '../../activities/index.js';
import type { ResolvedBackend } from '../../core/agent/agent-input.js';
import { groupDigits } from '../../core/agent/compaction-history.js';
import type { SessionEntry } from '../../core/agent/session.js';
import { messageTexts, type BpeEncodingName } from '../../core/counting/bpe-counter.js';
import { utf8Length } from '../../core/limits/payload-size.js';
import type { ChatMessage } from '../../core/types.js';
import { BOOKKEEPING_ACTIVITY } from '../../shared/activity-options.js';

/**
 * Characters of new text the workflow may tokenize itself per round; more is counted by the `countTokens` activity:
 * pure-JS BPE runs at a few MB/s, and an activation must stay far below the SDK's 2 s deadlock timeout, on replay too.
 */
export const WORKFLOW_COUNT_CHARS = 200_000;

/** Token counts by text, per BPE encoding of the chain (the character estimator needs none). */
export class TokenCache {
  private readonly known = new Map<BpeEncodingName, Map<string, number>>();

  constructor(backends: readonly ResolvedBackend[]) {
    for (const { tokenizer } of backends) if (tokenizer !== 'chars') this.known.set(tokenizer, new Map());
  }

  /** The counts of one encoding, which its backends' counters read and fill. */
  countsFor(tokenizer: ResolvedBackend['tokenizer']): Map<string, number> | undefined {
    return tokenizer === 'chars' ? undefined : this.known.get(tokenizer);
  }

  /** The counts a continued run was handed (see `AgentRunCarried.tokenCounts`), for the encodings this chain uses. */
  remember(live: readonly SessionEntry[], counts: Record<string, Array<number | null>>): void {
    const texts = live.flatMap((entry) => messageTexts(entry.message));
    for (const [encoding, known] of this.known) {
      const list = counts[encoding];
      if (list === undefined) continue;
      texts.forEach((text, index) => {
        const count = list[index];
        if (typeof count === 'number') known.set(text, count);
      });
    }
  }

  /** The live conversation's counts, to carry: a continued run need not count again. */
  toCarry(messages: readonly ChatMessage[]): Record<string, Array<number | null>> {
    const texts = messages.flatMap((message) => messageTexts(message));
    return Object.fromEntries(
      [...this.known].map(([encoding, known]) => [encoding, texts.map((text) => known.get(text) ?? null)]),
    );
  }

  /** Forgets texts no longer in the conversation: the cache stays bounded by the live context. */
  forgetAllBut(messages: readonly ChatMessage[]): void {
    const live = new Set(messages.flatMap((message) => messageTexts(message)));
    for (const known of this.known.values()) {
      for (const text of known.keys()) if (!live.has(text)) known.delete(text);
    }
  }

  /** Over {@link WORKFLOW_COUNT_CHARS} of new text, `countTokens` counts it (`batchBytes` a request). */
  async countNewText(messages: readonly ChatMessage[], batchBytes: number): Promise<void> {
    const all = [...new Set(messages.flatMap((message) => messageTexts(message)))];
    for (const [encoding, known] of this.known) {
      const texts = all.filter((text) => !known.has(text));
      if (texts.reduce((chars, text) => chars + text.length, 0) <= WORKFLOW_COUNT_CHARS) continue;
      for (let start = 0; start < texts.length;) {
        let bytes = 0;
        let end = start;
        while (end < texts.length && (end === start || bytes + utf8Length(texts[end] ?? '') <= batchBytes)) {
          bytes += utf8Length(texts[end] ?? '');
          end += 1;
        }
        const batch = texts.slice(start, end);
        start = end;
        const { countTokens } = proxyActivities<CompactorActivities>({
          ...BOOKKEEPING_ACTIVITY,
          summary: `count ${groupDigits(batch.reduce((sum, text) => sum + text.length, 0))} chars of new text (${encoding})`,
        });
        const { tokens } = await countTokens({ encoding, texts: batch });
        batch.forEach((text, index) => {
          const count = tokens[index];
          if (typeof count === 'number' && Number.isSafeInteger(count) && count >= 0) known.set(text, count);
        });
      }
    }
  }
}
