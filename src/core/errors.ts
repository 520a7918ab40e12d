// Sandbox-safe: typed errors, failure type strings and the status classification (docs/design.md#failures).

/** Every failure type, as an `ApplicationFailure`'s `type`: `FailureType.Chat.Rejected` is `'Chat.Rejected'` (docs/design.md#failure-types). */
export const FailureType = {
  /** `compact`, `compactConversation` and every boundary that validates input. */
  Compaction: {
    /** Structurally invalid input: a message or an option. Never retried. */
    InvalidInput: 'Compaction.InvalidInput',
    /** `compactConversation`: its result is over the inline payload limit and no payload store is set. Never retried. */
    PayloadTooLarge: 'Compaction.PayloadTooLarge',
    /** An undo that cannot apply; the details say why (docs/design.md#undo). Never retried. */
    UndoRefused: 'Compaction.UndoRefused',
  },
  /** The `summarize` activity. */
  Summarizer: {
    /** The summarizer answered 400-404: a configuration or account problem. Never retried. */
    Rejected: 'Summarizer.Rejected',
    /** The summarizer answered with an empty summary. Retried. */
    Empty: 'Summarizer.Empty',
    /** Anything else that may heal: 408, 409, 422, 429, 5xx, network errors, malformed bodies. Retried. */
    Transient: 'Summarizer.Transient',
    /** The request is over the summarizer's context window; the compaction cuts it smaller (docs/design.md#summarizer-overflow). */
    ContextOverflow: 'Summarizer.ContextOverflow',
    /** The request passed the summarizer's deadline; the compaction sends it in smaller pieces. */
    Deadline: 'Summarizer.Deadline',
  },
  /** The `chat` activity of `agentRun`. List `Chat.Rejected` in `nonRetryableErrorTypes`. */
  Chat: {
    /** The provider answered 400-404 (bad request, auth, payment, permission, unknown model). Never retried. */
    Rejected: 'Chat.Rejected',
    /** Anything that may heal: 408, 409, 422, 429, 5xx, network errors, timeouts. Retried (`Retry-After` honoured). */
    Transient: 'Chat.Transient',
    /** A 200 response without a usable assistant message (no choices, malformed body). Retried. */
    Malformed: 'Chat.Malformed',
  },
  /** The replay provider (a recorded trajectory played back). Never retried. */
  Replay: {
    /** The trajectory named in the model config is not on the worker (or is outside its trajectory directory). */
    TrajectoryNotFound: 'Replay.TrajectoryNotFound',
    /** The trajectory file is not a JSON array of chat messages. */
    BadTrajectory: 'Replay.BadTrajectory',
    /** The run asked for an assistant turn or a tool result the recording does not have. */
    NotRecorded: 'Replay.NotRecorded',
  },
  /** The built-in tools. The loop turns any tool failure into a tool result the model reads. */
  Tool: {
    /** A path that resolves outside the configured tool root. Never retried. */
    PathOutsideRoot: 'Tool.PathOutsideRoot',
    /** Arguments that do not match the tool's parameters. Never retried. */
    InvalidArguments: 'Tool.InvalidArguments',
    /** A file or directory that does not exist. Never retried. */
    NotFound: 'Tool.NotFound',
    /** A path a secret-file rule refuses (dotenv files, `.git`, keys, credentials) and the worker does not allow. Never retried. */
    SecretPath: 'Tool.SecretPath',
    /** The worker has no tool root (or cannot read it): the built-in tools read nothing. Never retried. */
    NoRoot: 'Tool.NoRoot',
  },
  /** Why an `agentRun` update is refused (besides `Compaction.InvalidInput` for a bad message). */
  AgentRun: {
    /** The run has finished: nothing would read the message. */
    Finished: 'AgentRun.Finished',
  },
  /** How an `agentRun` fails. All are non-retryable workflow failures. */
  RunFailed: {
    /** The conversation could not be made to fit any backend, even after compaction (docs/design.md#exhaustion); the transcript is written first. */
    ContextExhausted: 'RunFailed.ContextExhausted',
    /** Every backend of the chain failed the same round after its retries. */
    BackendsFailed: 'RunFailed.BackendsFailed',
    /** Something the run had to send is over the inline payload limit and no payload store is set; the details name it. */
    PayloadTooLarge: 'RunFailed.PayloadTooLarge',
  },
} as const;

type FailureTypes = typeof FailureType;
/** One failure type string, of any group. */
export type FailureType = {
  [Group in keyof FailureTypes]: FailureTypes[Group][keyof FailureTypes[Group]];
}[keyof FailureTypes];
/** A failure type of the `summarize` activity. */
export type SummarizerFailureType = FailureTypes['Summarizer'][keyof FailureTypes['Summarizer']];

/** 400-404 will not heal by retrying: abort; any other status, or none, retries (docs/design.md#failures). */
export function classifyStatus(status: number | undefined): 'abort' | 'retry' {
  return status !== undefined && status >= 400 && status <= 404 ? 'abort' : 'retry';
}

function numberField(error: unknown, key: string, valid: (value: number) => boolean): number | undefined {
  const value: unknown = typeof error === 'object' && error !== null ? Reflect.get(error, key) : undefined;
  return typeof value === 'number' && valid(value) ? value : undefined;
}

/** Reads the numeric `status` an error carries (as openai's `APIError` does), if any. */
export function statusOf(error: unknown): number | undefined {
  return numberField(error, 'status', Number.isInteger);
}

/** Reads a `retryAfterMs` hint an error carries (set by our OpenAI summarizer from `Retry-After`). */
export function retryAfterOf(error: unknown): number | undefined {
  return numberField(error, 'retryAfterMs', (ms) => Number.isFinite(ms) && ms >= 0);
}

/** Structurally invalid input. `field` is the full path, e.g. `messages[12].tool_call_id`. */
export class InvalidInputError extends Error {
  override readonly name = 'InvalidInputError';
  readonly type = FailureType.Compaction.InvalidInput;
  constructor(
    readonly field: string,
    readonly reason: string,
    /** Index of the offending message, when the error is about one. */
    readonly index?: number,
  ) {
    super(`${field}: ${reason}`);
  }
}

/** Why an undo is refused (docs/design.md#undo). */
export type UndoRefusal = 'window' | 'later-compactions' | 'undone' | 'none' | 'transcript';

/** What an `UndoRefused` failure carries in its details, and {@link UndoRefusedError} in its fields. */
export interface UndoRefusedDetails {
  reason: UndoRefusal;
  /** The number of the compaction asked for (its `#` in the history); null when none was named and none is in effect. */
  compactionId: number | null;
  /** With `later-compactions`: the compactions in effect after it, the last first (the order to undo them in). */
  later?: number[];
  /** With `window`: the restored conversation's tokens, and the room it would have to fit. */
  tokens?: number;
  room?: number;
}

/** An undo that cannot apply (`Compaction.UndoRefused`); `reason` says why (docs/design.md#undo). */
export class UndoRefusedError extends Error {
  override readonly name = 'UndoRefusedError';
  readonly type = FailureType.Compaction.UndoRefused;
  constructor(
    readonly details: UndoRefusedDetails,
    message: string,
  ) {
    super(message);
  }

  get reason(): UndoRefusal {
    return this.details.reason;
  }
}

export type SummarizerFailureKind = 'rejected' | 'empty' | 'transient';

/** A summarizer failure with its kind and a `Retry-After` hint; backends may also throw any error with a numeric `status`. */
export class SummarizerError extends Error {
  override readonly name = 'SummarizerError';
  constructor(
    message: string,
    readonly kind: SummarizerFailureKind,
    readonly status?: number,
    readonly retryAfterMs?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  get type(): SummarizerFailureType {
    return FailureType.Summarizer[
      this.kind === 'rejected' ? 'Rejected' : this.kind === 'empty' ? 'Empty' : 'Transient'
    ];
  }
}

/** Classifies any thrown value from a summarizer: typed errors by kind, others by `status`. */
export function classifyError(error: unknown): 'abort' | 'retry' {
  if (error instanceof SummarizerError) return error.kind === 'rejected' ? 'abort' : 'retry';
  return classifyStatus(statusOf(error));
}
