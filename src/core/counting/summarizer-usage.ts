// Sandbox-safe: what the summarizer was billed (or, when its backend does not say, an estimate) for
// the summaries one compaction asked for. Both drivers add it the same way, so their results stay
// byte-identical.
import { defaultCounter } from './tokens.js';
import type { ChatMessage, Usage } from '../types.js';

/** The summarizer's tokens for one compaction: every request that came back with a summary. */
export interface SummarizerUsage {
  /** Requests answered with a summary (retried failures are not billed by a provider, and not counted). */
  requests: number;
  promptTokens: number;
  completionTokens: number;
  /** True when at least one request's numbers are an estimate (characters / 4), its backend not saying. */
  estimated: boolean;
}

/**
 * `usage` with one more answered request: the backend's numbers when it reported them, else an
 * estimate (`sent`: the messages the request was rendered into, asked only then).
 */
export function addSummarizerRequest(
  usage: SummarizerUsage | undefined,
  sent: () => ChatMessage[],
  text: string,
  reported: Usage | undefined,
): SummarizerUsage {
  const known = typeof reported?.promptTokens === 'number' && typeof reported.completionTokens === 'number';
  const promptTokens = known ? (reported?.promptTokens ?? 0) : defaultCounter.count(sent());
  const completionTokens = known ? (reported?.completionTokens ?? 0) : Math.ceil(text.length / 4);
  return {
    requests: (usage?.requests ?? 0) + 1,
    promptTokens: (usage?.promptTokens ?? 0) + promptTokens,
    completionTokens: (usage?.completionTokens ?? 0) + completionTokens,
    estimated: (usage?.estimated ?? false) || !known,
  };
}
