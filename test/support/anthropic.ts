// Node (test support): OpenAI chat conversations converted to Anthropic Messages, for the tests that
// hold the `anthropic` format to the engine's own (a corpus trajectory compacts to the converted
// form of what its OpenAI form compacts to), and random Anthropic conversations for property tests.
import fc from 'fast-check';
import type { ChatMessage, ContentPart } from '../../src/index.js';
import type {
  AnthropicBlock,
  AnthropicMessage,
  AnthropicRequest,
  AnthropicTextBlock,
} from '../../src/core/formats/anthropic-schema.js';

/** Arguments as Anthropic holds them: parsed. Non-object arguments are wrapped, so every call converts. */
function parsedArguments(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return { ...value };
    return { value };
  } catch {
    return { raw: text };
  }
}

/**
 * The OpenAI conversation as it reads once it has been Anthropic or AI SDK messages: arguments
 * re-serialised from their parsed form (those formats keep no argument text), an assistant's empty
 * content beside tool calls as null. Compacting this and its {@link toAnthropic} form (or `toAiSdk`) must agree.
 */
export function normalizeArguments(messages: readonly ChatMessage[]): ChatMessage[] {
  return messages.map((message) => {
    if (message.tool_calls === undefined || message.tool_calls.length === 0) return message;
    return {
      ...message,
      content: message.content === '' ? null : message.content,
      tool_calls: message.tool_calls.map((call) => ({
        ...call,
        function: { ...call.function, arguments: JSON.stringify(parsedArguments(call.function.arguments)) },
      })),
    };
  });
}

function blocksOf(content: ChatMessage['content']): AnthropicBlock[] {
  if (content === null) return [];
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  return content.map((part: ContentPart) => ({ ...part }));
}

/**
 * An OpenAI chat conversation (leading system messages, then user, assistant and tool messages;
 * no harness flags) as an Anthropic request body: the system messages become `system`, the tool
 * results of one turn one user message of `tool_result` blocks, the tool calls `tool_use` blocks.
 */
export function toAnthropic(messages: readonly ChatMessage[]): AnthropicRequest {
  const system: AnthropicTextBlock[] = [];
  const out: AnthropicMessage[] = [];
  let results: AnthropicMessage | undefined;
  for (const message of messages) {
    if (message.sticky !== undefined || message.depth !== undefined)
      throw new Error('toAnthropic: harness flags have no Anthropic form');
    if (message.role === 'system' || message.role === 'developer') {
      if (out.length > 0) throw new Error('toAnthropic: a system message after the first message');
      system.push({ type: 'text', text: typeof message.content === 'string' ? message.content : '' });
      continue;
    }
    if (message.role === 'tool') {
      const block: AnthropicBlock = {
        type: 'tool_result',
        tool_use_id: message.tool_call_id ?? '',
        content:
          message.content === null
            ? ''
            : typeof message.content === 'string'
              ? message.content
              : blocksOf(message.content),
      };
      if (results === undefined) {
        results = { role: 'user', content: [block] };
        out.push(results);
      } else if (Array.isArray(results.content)) results.content.push(block);
      continue;
    }
    results = undefined;
    if (message.role === 'assistant' && (message.tool_calls ?? []).length > 0) {
      out.push({
        role: 'assistant',
        content: [
          ...blocksOf(message.content),
          ...(message.tool_calls ?? []).map((call): AnthropicBlock => ({
            type: 'tool_use',
            id: call.id,
            name: call.function.name,
            input: parsedArguments(call.function.arguments),
          })),
        ],
      });
      continue;
    }
    const role = message.role === 'assistant' ? 'assistant' : 'user';
    out.push({
      role,
      content:
        typeof message.content === 'string' || message.content === null
          ? (message.content ?? '')
          : blocksOf(message.content),
    });
  }
  const body: AnthropicRequest = { model: 'claude-sonnet-4-5', max_tokens: 4096, messages: out };
  if (system.length === 1 && system[0] !== undefined) body.system = system[0].text;
  else if (system.length > 1) body.system = system;
  return body;
}

// ---------------------------------------------------------------------------------------------
// Random Anthropic conversations
// ---------------------------------------------------------------------------------------------

const FILLER = 'the quick brown fox jumps over the lazy dog; '.repeat(1000);
const text = (tag: string, size: number): string => `⟨${tag}⟩${FILLER.slice(0, size)}`;

/** What one round of a generated conversation holds. */
interface RoundSpec {
  /** The assistant's calls (0: a text answer), each with its result size. */
  calls: Array<{ size: number; image: boolean; error: boolean }>;
  thinking: boolean;
  /** An unknown block type in the assistant message (a server tool, a type to come). */
  unknownBlock: boolean;
  /** The user's text beside the results, in the same message. */
  userText: boolean;
  /** A plain user message after the round. */
  userAfter: boolean;
  textSize: number;
}

const roundArb: fc.Arbitrary<RoundSpec> = fc.record({
  calls: fc.array(
    fc.record({
      size: fc.oneof(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 2000, max: 9000 })),
      image: fc.boolean(),
      error: fc.boolean(),
    }),
    { maxLength: 3 },
  ),
  thinking: fc.boolean(),
  unknownBlock: fc.boolean(),
  userText: fc.boolean(),
  userAfter: fc.boolean(),
  textSize: fc.integer({ min: 0, max: 600 }),
});

/** A small PNG as Anthropic takes an image (the bytes do not matter here, only that they count). */
const IMAGE_DATA = 'iVBORw0KGgo'.repeat(40);

/** A provider-valid Anthropic request body: system prompt, task, then rounds of tool use with thinking, images and unknown blocks. */
export const anthropicRequestArb: fc.Arbitrary<AnthropicRequest> = fc
  .record({
    system: fc.constantFrom<'none' | 'string' | 'blocks'>('none', 'string', 'blocks'),
    rounds: fc.array(roundArb, { minLength: 1, maxLength: 14 }),
    pending: fc.boolean(),
  })
  .map(({ system, rounds, pending }) => {
    const messages: AnthropicMessage[] = [{ role: 'user', content: 'Fix the failing test in app.py.' }];
    let next = 0;
    rounds.forEach((round, index) => {
      const content: AnthropicBlock[] = [];
      if (round.thinking)
        content.push({ type: 'thinking', thinking: text(`think${index}`, 200), signature: `sig-${index}` });
      if (round.textSize > 0 || round.calls.length === 0)
        content.push({ type: 'text', text: text(`a${index}`, Math.max(1, round.textSize)) });
      if (round.unknownBlock)
        content.push({ type: 'server_tool_use', id: `srv_${index}`, name: 'web_search', input: { q: 'x' } });
      const ids = round.calls.map(() => `toolu_${next++}`);
      round.calls.forEach((_, position) =>
        content.push({
          type: 'tool_use',
          id: ids[position] ?? '',
          name: position % 2 === 0 ? 'read_file' : 'bash',
          input: { path: `f${position}.py` },
        }),
      );
      messages.push({ role: 'assistant', content });
      const last = index === rounds.length - 1;
      if (round.calls.length > 0 && !(last && pending)) {
        const results: AnthropicBlock[] = round.calls.map((call, position) => ({
          type: 'tool_result',
          tool_use_id: ids[position] ?? '',
          ...(call.error ? { is_error: true } : {}),
          content: call.image
            ? [
                { type: 'text', text: text(`r${index}.${position}`, call.size) },
                { type: 'image', source: { type: 'base64', media_type: 'image/png', data: IMAGE_DATA } },
              ]
            : text(`r${index}.${position}`, call.size),
        }));
        if (round.userText) results.push({ type: 'text', text: text(`u${index}`, 40) });
        messages.push({ role: 'user', content: results });
      }
      if (round.userAfter && !(last && pending)) messages.push({ role: 'user', content: text(`v${index}`, 80) });
    });
    const body: AnthropicRequest = {
      model: 'claude-sonnet-4-5',
      max_tokens: 4096,
      tools: [{ name: 'bash' }],
      messages,
    };
    if (system === 'string') body.system = 'You fix bugs. Be brief.';
    if (system === 'blocks')
      body.system = [
        { type: 'text', text: 'You fix bugs.', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'Be brief.' },
      ];
    return body;
  });
