// Node (test support): OpenAI chat conversations converted to AI SDK messages (`ModelMessage`), for
// the tests that hold the `ai-sdk` format to the engine's own, and random AI SDK conversations.
import fc from 'fast-check';
import type { ChatMessage, ContentPart } from '../../src/index.js';
import type { AiSdkMessage, AiSdkPart } from '../../src/core/formats/ai-sdk-schema.js';

function parsedInput(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return { raw: text };
  }
}

function partsOf(content: ChatMessage['content']): AiSdkPart[] {
  if (content === null) return [];
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  return content.map((part: ContentPart) => ({ ...part }));
}

/**
 * An OpenAI chat conversation (no harness flags; arguments as `normalizeArguments` leaves them)
 * as AI SDK messages: the tool results of one turn one `tool` message of `tool-result` parts with
 * text outputs, the tool calls `tool-call` parts.
 */
export function toAiSdk(messages: readonly ChatMessage[]): AiSdkMessage[] {
  const out: AiSdkMessage[] = [];
  const names = new Map<string, string>();
  let results: AiSdkPart[] | undefined;
  for (const message of messages) {
    if (message.sticky !== undefined || message.depth !== undefined)
      throw new Error('toAiSdk: harness flags have no AI SDK form');
    if (message.role === 'tool') {
      const id = message.tool_call_id ?? '';
      const part: AiSdkPart = {
        type: 'tool-result',
        toolCallId: id,
        toolName: names.get(id) ?? 'tool',
        output: { type: 'text', value: typeof message.content === 'string' ? message.content : '' },
      };
      if (results === undefined) {
        results = [part];
        out.push({ role: 'tool', content: results });
      } else results.push(part);
      continue;
    }
    results = undefined;
    if (message.role === 'system' || message.role === 'developer') {
      out.push({ role: 'system', content: typeof message.content === 'string' ? message.content : '' });
      continue;
    }
    if (message.role === 'assistant' && (message.tool_calls ?? []).length > 0) {
      for (const call of message.tool_calls ?? []) names.set(call.id, call.function.name);
      out.push({
        role: 'assistant',
        content: [
          ...partsOf(message.content),
          ...(message.tool_calls ?? []).map((call): AiSdkPart => ({
            type: 'tool-call',
            toolCallId: call.id,
            toolName: call.function.name,
            input: parsedInput(call.function.arguments),
          })),
        ],
      });
      continue;
    }
    out.push({
      role: message.role === 'assistant' ? 'assistant' : 'user',
      content:
        typeof message.content === 'string' || message.content === null
          ? (message.content ?? '')
          : partsOf(message.content),
    });
  }
  return out;
}

const FILLER = 'the quick brown fox jumps over the lazy dog; '.repeat(1000);
const text = (tag: string, size: number): string => `⟨${tag}⟩${FILLER.slice(0, size)}`;

interface RoundSpec {
  calls: Array<{ size: number; output: 'text' | 'json' | 'error-text' | 'content' }>;
  reasoning: boolean;
  unknownPart: boolean;
  approval: boolean;
  userAfter: boolean;
  textSize: number;
}

const roundArb: fc.Arbitrary<RoundSpec> = fc.record({
  calls: fc.array(
    fc.record({
      size: fc.oneof(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 2000, max: 9000 })),
      output: fc.constantFrom<'text' | 'json' | 'error-text' | 'content'>('text', 'json', 'error-text', 'content'),
    }),
    { maxLength: 3 },
  ),
  reasoning: fc.boolean(),
  unknownPart: fc.boolean(),
  approval: fc.boolean(),
  userAfter: fc.boolean(),
  textSize: fc.integer({ min: 0, max: 600 }),
});

/** Provider-valid AI SDK messages: a system message, a task, then rounds of tool use with reasoning, media and approvals. */
export const aiSdkMessagesArb: fc.Arbitrary<AiSdkMessage[]> = fc
  .record({ system: fc.boolean(), rounds: fc.array(roundArb, { minLength: 1, maxLength: 14 }), pending: fc.boolean() })
  .map(({ system, rounds, pending }) => {
    const messages: AiSdkMessage[] = [];
    if (system) messages.push({ role: 'system', content: 'You fix bugs. Be brief.' });
    messages.push({ role: 'user', content: [{ type: 'text', text: 'Fix the failing test in app.py.' }] });
    let next = 0;
    rounds.forEach((round, index) => {
      const content: AiSdkPart[] = [];
      if (round.reasoning) content.push({ type: 'reasoning', text: text(`think${index}`, 200) });
      if (round.textSize > 0 || round.calls.length === 0)
        content.push({ type: 'text', text: text(`a${index}`, Math.max(1, round.textSize)) });
      if (round.unknownPart)
        content.push({ type: 'source', sourceType: 'url', id: `src${index}`, url: 'https://x.test' });
      const ids = round.calls.map(() => `call_${next++}`);
      const names = round.calls.map((_, position) => (position % 2 === 0 ? 'read_file' : 'bash'));
      round.calls.forEach((_, position) =>
        content.push({
          type: 'tool-call',
          toolCallId: ids[position] ?? '',
          toolName: names[position] ?? 'bash',
          input: { path: `f${position}.py` },
        }),
      );
      messages.push({ role: 'assistant', content });
      const last = index === rounds.length - 1;
      if (round.calls.length > 0 && !(last && pending)) {
        const results: AiSdkPart[] = round.calls.map((call, position) => ({
          type: 'tool-result',
          toolCallId: ids[position] ?? '',
          toolName: names[position] ?? 'bash',
          output:
            call.output === 'json'
              ? { type: 'json', value: { lines: text(`r${index}.${position}`, call.size) } }
              : call.output === 'content'
                ? {
                    type: 'content',
                    value: [
                      { type: 'text', text: text(`r${index}.${position}`, call.size) },
                      { type: 'media', data: 'iVBORw0KGgo'.repeat(40), mediaType: 'image/png' },
                    ],
                  }
                : { type: call.output, value: text(`r${index}.${position}`, call.size) },
        }));
        if (round.approval)
          results.unshift({ type: 'tool-approval-response', approvalId: `ap${index}`, approved: true });
        messages.push({ role: 'tool', content: results });
      }
      if (round.userAfter && !(last && pending)) messages.push({ role: 'user', content: text(`v${index}`, 80) });
    });
    return messages;
  });
