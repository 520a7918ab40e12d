// Dev fixture (tests and benchmarks): a seeded sequence of growing chat-activity inputs, as an agent run sends
// them: each round appends an assistant turn with a tool call and a ~10 KB tool result, and now and
// then a compaction replaces the middle with a summary. Used by the chunk-store tests and by
// `npm run bench:payloads`. No vitest import.
import { fillText } from './content.js';
import { createRandom } from './random.js';

/** One round's chat input and how much of it is new since the previous round's. */
export interface ChatInputStep {
  /** The payload bytes: `JSON.stringify({ backend, messages, tools, turn })`. */
  data: Uint8Array;
  /** Bytes of the messages not in the previous input (the whole input for the first). */
  newContentBytes: number;
  /** A compaction replaced the middle with a summary before this round. */
  compacted: boolean;
}

export interface ChatInputSequenceOptions {
  /** @default 60 */
  rounds?: number;
  /** Bytes appended per round (assistant turn + tool result). @default 10_000 */
  bytesPerRound?: number;
  /** A compaction every this many rounds (0: never). @default 15 */
  compactEvery?: number;
  /** Messages kept verbatim at the end by a compaction. @default 8 */
  keepRecent?: number;
  /** @default 1 */
  seed?: number;
}

const WORDS = (
  'the function returns a value when called with the file path and the test fails because ' +
  'module import error line config build output warning trace stack error handler request ' +
  'response user agent tool result compile source patch diff commit branch index cache query ' +
  'field record schema array object string number length offset buffer stream event queue'
).split(' ');

function text(next: () => number, length: number): string {
  // Prose with now and then a line of "code": numbers and identifiers compress less than words.
  return fillText(length, () =>
    next() < 0.1
      ? `\n${Math.floor(next() * 1e9).toString(36)}_${Math.floor(next() * 1e6)}(${Math.floor(next() * 997)}) `
      : `${WORDS[Math.floor(next() * WORDS.length)] ?? 'x'} `,
  );
}

interface Message {
  role: string;
  content: string;
  tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

/** The sequence of chat inputs of a synthetic agent run. */
export function chatInputSequence({
  rounds = 60,
  bytesPerRound = 10_000,
  compactEvery = 15,
  keepRecent = 8,
  seed = 1,
}: ChatInputSequenceOptions = {}): ChatInputStep[] {
  const next = createRandom(seed).next;
  const backend = { provider: 'openai', model: 'gpt-4o', contextWindow: 128_000, maxOutputTokens: 4_096 };
  const tools = ['fs_read', 'bash', 'grep'].map((name) => ({
    type: 'function',
    function: {
      name,
      description: text(next, 300),
      parameters: {
        type: 'object',
        properties: { path: { type: 'string', description: text(next, 80) } },
        required: ['path'],
      },
    },
  }));
  let messages: Message[] = [
    { role: 'system', content: text(next, 1500) },
    { role: 'user', content: text(next, 400) },
  ];
  let previous = new Set<string>();
  const steps: ChatInputStep[] = [];
  for (let round = 1; round <= rounds; round += 1) {
    let compacted = false;
    if (compactEvery > 0 && round > 1 && round % compactEvery === 0 && messages.length > keepRecent + 3) {
      const summary: Message = { role: 'user', content: `Summary of the work so far: ${text(next, 2000)}` };
      messages = [...messages.slice(0, 2), summary, ...messages.slice(messages.length - keepRecent)];
      compacted = true;
    }
    const callId = `call_${round}_${Math.floor(next() * 1e6)}`;
    const assistantText = text(next, 200);
    messages = [
      ...messages,
      {
        role: 'assistant',
        content: assistantText,
        tool_calls: [
          {
            id: callId,
            type: 'function',
            function: { name: 'fs_read', arguments: JSON.stringify({ path: `src/${text(next, 12).trim()}.ts` }) },
          },
        ],
      },
      { role: 'tool', tool_call_id: callId, content: text(next, Math.max(100, bytesPerRound - 350)) },
    ];
    const serialized = messages.map((message) => JSON.stringify(message));
    const data = new TextEncoder().encode(JSON.stringify({ backend, messages, tools, turn: round }));
    const newContentBytes =
      round === 1
        ? data.length
        : serialized.filter((message) => !previous.has(message)).reduce((sum, message) => sum + message.length + 1, 0);
    previous = new Set(serialized);
    steps.push({ data, newContentBytes, compacted });
  }
  return steps;
}
