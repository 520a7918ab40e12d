// Sandbox-safe: plain types shared by every layer (core, workflows, activities, drivers).

/** A text part or any other content part a provider accepts (images, audio, ...). */
export type ContentPart = { type: 'text'; text: string } | { type: string; [key: string]: unknown };

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
  [key: string]: unknown;
}

/**
 * An OpenAI chat message plus the harness flags `sticky` (kept in place) and `depth` (an injection at a fixed depth,
 * sticky too), which `toProviderMessages` strips. Unknown provider fields are preserved verbatim.
 */
export interface ChatMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content: string | null | ContentPart[];
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  name?: string;
  sticky?: boolean;
  depth?: number;
  [key: string]: unknown;
}

/** Anything that turns a conversation into a number of tokens. Must be pure and deterministic. */
export interface TokenCounter {
  count(messages: readonly ChatMessage[]): number;
}

export interface Usage {
  promptTokens?: number;
  completionTokens?: number;
  totalTokens?: number;
}

/** What a summarizer is sent (docs/design.md#summarizer-request), the `summarize` activity's input; a model gets `summarizerMessages(request)`. */
export interface SummarizeRequest {
  /** The instruction: the system message a model is sent. */
  instruction: string;
  /** The messages to summarize, cut at `toolResultCap`, only role, content, calls and ids. May be the caller's: never change them. */
  middle: ChatMessage[];
  /** The caller's `summaryInstructions`, also in `instruction`, for a summarizer that works on structure. */
  instructions?: string;
  /** The text of the task when the compaction keeps it in place (docs/design.md#task-survives), also in `instruction`. */
  task?: string;
  /** The most tokens the summary may take: its room in the compacted conversation (docs/design.md#summary-length). */
  maxTokens?: number;
}

export interface SummarizeResponse {
  text: string;
  usage?: Usage;
}

/** What a summarizer backend implements. Throw an error carrying a numeric `status` to classify it. */
export interface Summarizer {
  summarize(request: SummarizeRequest, options?: { signal?: AbortSignal }): Promise<SummarizeResponse>;
}

export interface Elision {
  /** Position in the input array. */
  index: number;
  /** The whole new content of that message; for an image elision, the text of its stubs (one a line). */
  stub: string;
  /** Only for a message whose content is parts: its whole new content. */
  content?: ContentPart[];
}

/** One message cut middle-out because the conversation did not fit otherwise (docs/design.md#truncation). */
export interface Truncation {
  /** Position in the input array (its elision holds the new content). */
  index: number;
  /** Characters of the text that was cut, before. */
  chars: number;
  /** Characters of it kept (head and tail), besides the marker. */
  kept: number;
}

/** Why a compaction ended in the hard trim (docs/design.md#hard-trim). */
export interface FallbackReason {
  cause: 'summarizer-failed' | 'empty-summary' | 'summary-too-long' | 'over-summarizer-window' | 'cancelled';
  /** The same in words, for a log or a table. */
  message: string;
}

/** The result of one compaction (docs/design.md#result). */
export interface CompactionResult {
  messages: ChatMessage[];
  /** Messages removed from the conversation (replaced by the summary or trimmed). */
  dropped: number;
  tokensBefore: number;
  tokensAfter: number;
  /** True exactly when `messages` came from the hard trim. */
  fallback: boolean;
  /** Present exactly when `fallback` is true: why the summary was not used. */
  fallbackReason?: FallbackReason;
  /** True when the result is still over `contextBudget` (or the call's `target`). */
  exhausted: boolean;
  elisions: Elision[];
  /** The whole content of the synthetic summary message, or null when there is none. */
  summary: string | null;
  /** Input index of the last message replaced or dropped; -1 when none was. */
  cutIndex: number;
  /** Present only when a summary left the conversation over its low-water mark (docs/design.md#window-gives-way). */
  aboveMark?: { mark: number; reason: 'recent-window' | 'summary-length' };
  /** Present only when messages were cut middle-out to fit (`truncateOversized`); each is also an elision. */
  truncations?: Truncation[];
  /** Present when a summary was kept and `summaryCoverage` is on (docs/design.md#coverage). */
  coverage?: Coverage;
  /** Present only when the kept summary took this many summarizer requests, as a fold (docs/design.md#summarizer-window). */
  summaryPieces?: number;
  /** Present only for a hard trim with `compaction.recall`: the marker naming the dropped ids (docs/design.md#recall). */
  trimMarker?: string;
  /** Present only with `keepUserMessages` when messages were replaced or dropped (docs/design.md#user-words). */
  userMessages?: UserMessagesKept;
}

/** What a compaction with `keepUserMessages` did with the user messages it could replace (docs/design.md#user-words). */
export interface UserMessagesKept {
  kept: number;
  summarized: number;
  /** Input positions of the kept ones, ascending. */
  keptAt: number[];
}

/** What `planCompaction` says of a conversation now (docs/design.md#needs-compaction). */
export interface CompactionPlan {
  needed: boolean;
  /** Present only when the summary would take more than one request of `summarizerContextWindow`: how many. */
  summaryPieces?: number;
}

/** What a summary kept of the identifiers it had to keep (docs/design.md#coverage). */
export interface Coverage {
  /** Identifiers in the replaced middle that the kept messages use too. */
  required: number;
  /** Of those, how many the summary message holds (its carried-facts line included). */
  kept: number;
  /** Of those, how many only the carried-facts line holds: the summarizer left them out. */
  carried: number;
  /** The required identifiers the summary message does not hold, in the order the middle first used them. */
  missing: string[];
}
