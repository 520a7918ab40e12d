// Sandbox-safe: a recorded trajectory (a JSON array of chat messages) cut into what the replay provider
// plays back: the opening messages, then one assistant turn per chat call with what followed it.
import { InvalidInputError } from '../errors.js';
import { validateMessages } from '../schema.js';
import type { ChatMessage } from '../types.js';

/** One recorded assistant turn and what the recording says happened after it. */
export interface RecordedTurn {
  message: ChatMessage;
  /** Recorded results by tool-call id. */
  results: Map<string, ChatMessage>;
  /** Tool calls the recording never answered (a run cut off at its last call). */
  unanswered: string[];
  /** Messages after this turn's results and before the next assistant turn (a user's reply). */
  userMessages: ChatMessage[];
}

/** A trajectory ready to be played: its opening messages and its assistant turns in order. */
export interface ReplayScript {
  opening: ChatMessage[];
  turns: RecordedTurn[];
  /** Every recorded tool result by call id (a result may be asked for by a run whose turns drifted). */
  results: Map<string, ChatMessage>;
}

/** Cuts a trajectory into a {@link ReplayScript}; `InvalidInputError` when it has no assistant turn or a bad message. */
export function replayScript(trajectory: unknown): ReplayScript {
  const messages = validateMessages(trajectory, 'trajectory');
  const first = messages.findIndex((message) => message.role === 'assistant');
  if (first < 0) throw new InvalidInputError('trajectory', 'has no assistant turn to replay');
  const turns: RecordedTurn[] = [];
  const results = new Map<string, ChatMessage>();
  for (const message of messages.slice(first)) {
    const current = turns.at(-1);
    const callId = message.role === 'tool' ? message.tool_call_id : undefined;
    if (callId !== undefined) results.set(callId, message);
    // A tool result right after its turn is that turn's; after a user's message, it is part of what follows.
    if (message.role === 'assistant') turns.push({ message, results: new Map(), unanswered: [], userMessages: [] });
    else if (callId !== undefined && current?.userMessages.length === 0) current.results.set(callId, message);
    else current?.userMessages.push(message);
  }
  for (const turn of turns)
    turn.unanswered = (turn.message.tool_calls ?? []).map((call) => call.id).filter((id) => !results.has(id));
  return { opening: messages.slice(0, first), turns, results };
}

export function openingMessages(trajectory: unknown): ChatMessage[] {
  return replayScript(trajectory).opening;
}
