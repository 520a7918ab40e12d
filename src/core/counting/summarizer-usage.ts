// Sandbox-safe: what the summarizer was billed (or an estimate) for one compaction's summaries, for both drivers.
import { defaultCounter } from './tokens.js';
import type { ChatMessage, Usage } from '../types.js';

export interface SummarizerUsage {
  /** Requests answered with a summary (retried failures are not billed). */
  requests: number;
  promptTokens: number;
  completionTokens: number;
  /** True when at least one request's numbers are an estimate (characters / 4), its backend not saying. */
  estimated: boolean;
}

/** `usage` with one more answered request: the backend's numbers, else an estimate from `sent()`. */
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
