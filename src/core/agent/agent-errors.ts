// Sandbox-safe: failure types of the agent loop (`agentRun`), its `chat` activity and its tools.
import { FailureType } from '../errors.js';

/** Failure types raised by the `chat` activity. List `Chat.Rejected` in `nonRetryableErrorTypes`. */
export const ChatFailureType = {
  /** The provider answered 400-404 (bad request, auth, payment, permission, unknown model). Never retried. */
  Rejected: 'Chat.Rejected',
  /** Anything that may heal: 408, 409, 422, 429, 5xx, network errors, timeouts. Retried (`Retry-After` honoured). */
  Transient: 'Chat.Transient',
  /** A 200 response without a usable assistant message (no choices, malformed body). Retried. */
  Malformed: 'Chat.Malformed',
} as const;
export type ChatFailureType = (typeof ChatFailureType)[keyof typeof ChatFailureType];

/** Failure types raised by the replay provider (a recorded trajectory played back). Never retried. */
export const ReplayFailureType = {
  /** The trajectory named in the model config is not on the worker (or is outside its trajectory directory). */
  TrajectoryNotFound: 'Replay.TrajectoryNotFound',
  /** The trajectory file is not a JSON array of chat messages. */
  BadTrajectory: 'Replay.BadTrajectory',
  /** The run asked for an assistant turn or a tool result the recording does not have. */
  NotRecorded: 'Replay.NotRecorded',
} as const;
export type ReplayFailureType = (typeof ReplayFailureType)[keyof typeof ReplayFailureType];

/** Failure types raised by the built-in tools. The loop turns any tool failure into a tool result the model reads. */
export const ToolFailureType = {
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
} as const;
export type ToolFailureType = (typeof ToolFailureType)[keyof typeof ToolFailureType];

/** Why an `addUserMessage` update is refused (besides `Compaction.InvalidInput` for a bad message). */
export const UpdateFailureType = {
  /** The run has finished: nothing would read the message. */
  Finished: 'AgentRun.Finished',
} as const;
export type UpdateFailureType = (typeof UpdateFailureType)[keyof typeof UpdateFailureType];

/** How an `agentRun` fails. All are non-retryable workflow failures. */
export const RunFailureType = {
  /** The conversation could not be made to fit any backend, even after compaction (docs/design.md#exhaustion); the transcript is written first. */
  ContextExhausted: FailureType.ContextExhausted,
  /** Every backend of the chain failed the same round after its retries. */
  BackendsFailed: 'RunFailed.BackendsFailed',
  /**
   * Something the run had to send (a chat request, the state it continues as new with, its result)
   * is larger than a payload the server accepts inline, and the worker stores no payloads
   * externally (COMPACTOR_PAYLOAD_STORE is off). The details name the payload, its size and the
   * limit; the transcript is written first.
   */
  PayloadTooLarge: 'RunFailed.PayloadTooLarge',
} as const;
export type RunFailureType = (typeof RunFailureType)[keyof typeof RunFailureType];
