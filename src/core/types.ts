// Sandbox-safe: plain types shared by every layer (core, workflows, activities, drivers).

/** A text part or any other content part a provider accepts (images, audio, ...). */
export interface TextPart {
  type: 'text';
  text: string;
}
export interface OtherPart {
  type: string;
  [key: string]: unknown;
}
export type ContentPart = TextPart | OtherPart;

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
  [key: string]: unknown;
}

export type Role = 'system' | 'developer' | 'user' | 'assistant' | 'tool';

/**
 * An OpenAI chat-completions message plus two optional harness flags that never reach a
 * provider (`toProviderMessages` strips them):
 * - `sticky`: keep this message exactly where it is through every compaction;
 * - `depth`: an injection at a fixed depth (also sticky).
 * Unknown provider fields (`reasoning_content`, `refusal`, ...) are preserved verbatim.
 */
export interface ChatMessage {
  role: Role;
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

/**
 * What the compactor sends to a summarizer (docs/design.md#summarizer-request): one chat completion,
 * no tools. A model is sent `summarizerMessages(request)`: the instruction as the system message and
 * the middle's transcript as the user message. In a workflow, this is the `summarize` activity's input.
 */
export interface SummarizeRequest {
  /** The instruction: the system message a model is sent. */
  instruction: string;
  /**
   * The messages to summarize, cut as the transcript cuts them (tool results and tool-call
   * arguments at `toolResultCap`; only role, content, tool calls and tool result ids kept).
   * Rendered, they are the transcript a model reads; a summarizer that works on structure (the
   * extractive one) reads them instead of the text. A message already in that shape is the
   * caller's own object, not a copy: read it, never change it.
   */
  middle: ChatMessage[];
  /**
   * The caller's `summaryInstructions` (docs/design.md#summary-instructions), also added to
   * `instruction`: for a summarizer that works on structure (the extractive one keeps what matches
   * them first). Absent when none were given.
   */
  instructions?: string;
  /**
   * The task, when the compaction keeps it in place rather than summarizing it
   * (docs/design.md#task-survives): the text of the first user message, sticky or kept by
   * `keepTask`, cut at `toolResultCap`; also added to `instruction`. For a summarizer that works on
   * structure (the extractive one ranks first what the results of the files it names hold). Absent
   * when the task is in the middle, or there is none.
   */
  task?: string;
  /**
   * The most tokens the summary may take (docs/design.md#summary-length): what the summary has room
   * for in the compacted conversation, in the summarizer's tokens as the calibration scales them,
   * at most the window's output share and {@link MAX_SUMMARY_TOKENS}. The OpenAI summarizer sends it
   * as its max tokens unless its own `maxTokens` (COMPACTOR_SUMMARIZER_MAX_TOKENS) overrides it.
   */
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
  /**
   * Only for a message whose content is parts: the whole new content — for an image elision
   * (`keepImages`), each elided image replaced by a text part holding its stub; for a truncation,
   * its longest text part cut middle-out.
   */
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

/**
 * Why a compaction ended in the hard trim (docs/design.md#hard-trim): `summarizer-failed` — a
 * request failed its last attempt or was refused (`message` holds the summarizer's error, its
 * endpoint named, credentials redacted); `empty-summary` — the summarizer answered nothing;
 * `summary-too-long` — neither the summary nor its tighter retry passed the proof;
 * `over-summarizer-window` — the middle could not be cut to `summarizerContextWindow`;
 * `cancelled` — the caller cancelled the summary.
 */
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
  /**
   * Present only when a summary left the conversation over its low-water mark (docs/design.md#window-gives-way,
   * `recentWindowGivesWay`): the mark, and why — `'recent-window'`: the sticky messages and the
   * last complete turn alone leave no room for a summary under it; `'summary-length'`: the
   * summary was longer than the room left for it.
   */
  aboveMark?: { mark: number; reason: 'recent-window' | 'summary-length' };
  /**
   * Present only when messages were cut middle-out to fit (`truncateOversized`): which, and how
   * much. Each is also an elision of its position.
   */
  truncations?: Truncation[];
  /**
   * Present when a summary was kept and `summaryCoverage` is on (docs/design.md#coverage): how many
   * identifiers the summary had to keep (those the replaced middle shares with the kept
   * messages), how many it holds, how many of those only its carried-facts line holds, and the
   * ones still missing.
   */
  coverage?: Coverage;
  /**
   * Present only when a summary was kept and it took more than one summarizer request: the middle
   * did not fit `summarizerContextWindow` and was summarized in this many pieces, as a fold
   * (docs/design.md#summarizer-window).
   */
  summaryPieces?: number;
  /**
   * Present only for a hard trim in an agent run with `compaction.recall` (docs/design.md#recall):
   * the content of the message that stands where the dropped messages stood, naming their
   * transcript ids (`[recall ids: m3..m9]`).
   */
  trimMarker?: string;
  /**
   * Present only with `keepUserMessages` when the compaction replaced or dropped messages
   * (docs/design.md#user-words): how many of the middle's user messages it kept verbatim in place
   * (`kept`, at input positions `keptAt`, ascending) and how many it summarized (`summarized`:
   * replaced by the summary, or dropped by the hard trim).
   */
  userMessages?: UserMessagesKept;
}

/** What a compaction with `keepUserMessages` did with the user messages it could replace (docs/design.md#user-words). */
export interface UserMessagesKept {
  kept: number;
  summarized: number;
  /** Input positions of the kept ones, ascending. */
  keptAt: number[];
}

/**
 * What `planCompaction` says of a conversation now (docs/design.md#needs-compaction): `needed` is
 * what `needsCompaction` answers, and `summaryPieces` how many summarizer requests the summary of
 * the middle a compaction would replace would take.
 */
export interface CompactionPlan {
  needed: boolean;
  /**
   * Present only when `needed`, `summarizerContextWindow` is set and that middle's one request would
   * not fit it: the pieces it would be summarized in, as a fold (docs/design.md#summarizer-window).
   * Absent when one request fits, when the window is unset, or when the compaction would not
   * summarize (elision alone is enough, nothing to replace, or an instruction too long for the window).
   */
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
