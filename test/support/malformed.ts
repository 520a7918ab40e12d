// Node (test support): classes of malformed workflow input for the fuzz suites. Each class is a
// fast-check arbitrary of cases that break one rule, with the field the failure must name:
// test/core/fuzz-input.test.ts checks every class many times against the pure validators, and
// test/workflows/fuzz-input.test.ts runs a sample of each class through the real workflows.
//
// A case is built from a valid input (a provider-valid conversation and valid options) with one
// thing broken, so the expected field is exact: the validators must name the first fault, and
// there is only one.
import { ApplicationFailure } from '@temporalio/common';
import fc from 'fast-check';
import type { ChatMessage, ToolCall } from '../../src/index.js';
import { agentRun } from '../../src/workflows/agent-run.js';
import { compactConversation } from '../../src/workflows/compact-conversation.js';
import { toAnthropic } from './anthropic.js';
import { toAiSdk } from './ai-sdk.js';

/** The workflows a case can be given to. */
export type FuzzWorkflow = 'compactConversation' | 'agentRun';

/** How a class of malformed input reaches a workflow. */
export type FuzzScope =
  /** A broken conversation: both workflows, the same `messages[i]...` field. */
  | 'messages'
  /** A conversation compaction accepts (docs/design.md#messages) but a provider refuses: agentRun only. */
  | 'agent-messages'
  /** A broken compaction option: `options.<key>` for compactConversation, `input.compaction.<key>` for agentRun. */
  | 'options'
  /** A broken agentRun input. */
  | 'agent-input'
  /** A broken compactConversation input. */
  | 'compact-input'
  /** A broken `addUserMessage` update argument sent to a running agentRun. */
  | 'update';

export interface MalformedCase {
  /** `messages` scopes: the conversation; `options`: the compaction options; `*-input`: the whole input; `update`: the argument. */
  value: unknown;
  /** The field the failure must name, relative to the scope (see {@link fieldFor}). */
  field: string;
  /** What the reason must say, when the class pins it. */
  reason?: RegExp;
}

export interface MalformedClass {
  /** Kebab-case, unique: the name the tests report. */
  name: string;
  scope: FuzzScope;
  /** Which workflows it applies to (options classes may concern one only). @default by scope */
  workflows?: readonly FuzzWorkflow[];
  cases: fc.Arbitrary<MalformedCase>;
}

// ---------------------------------------------------------------------------------------------
// Valid building blocks
// ---------------------------------------------------------------------------------------------

const TOOLS = ['fs_read', 'grep', 'fs_list'] as const;

/** A provider-valid conversation: a system prompt, a task, then turns whose every call is answered right after. */
export const validConversationArb: fc.Arbitrary<ChatMessage[]> = fc
  .record({
    system: fc.boolean(),
    rounds: fc.array(
      fc.record({
        calls: fc.array(
          fc.record({ tool: fc.constantFrom(...TOOLS), path: fc.constantFrom('app.py', 'src/', 'README.md') }),
          { minLength: 0, maxLength: 3 },
        ),
        resultSize: fc.integer({ min: 0, max: 400 }),
        reversed: fc.boolean(),
        userAfter: fc.boolean(),
      }),
      { minLength: 1, maxLength: 6 },
    ),
  })
  .map(({ system, rounds }) => {
    const messages: ChatMessage[] = [];
    if (system) messages.push({ role: 'system', content: 'You fix bugs. Be brief.' });
    messages.push({ role: 'user', content: 'Fix the failing test in app.py.' });
    let next = 1;
    rounds.forEach((round, roundIndex) => {
      if (round.calls.length === 0) {
        messages.push({ role: 'assistant', content: `Round ${roundIndex}: thinking.` });
      } else {
        const calls: ToolCall[] = round.calls.map((call) => ({
          id: `call_${next++}`,
          type: 'function',
          function: { name: call.tool, arguments: JSON.stringify({ path: call.path }) },
        }));
        messages.push({ role: 'assistant', content: null, tool_calls: calls });
        const answered = round.reversed ? [...calls].reverse() : calls;
        for (const call of answered)
          messages.push({
            role: 'tool',
            tool_call_id: call.id,
            content: `result of ${call.function.name}: ${'x'.repeat(round.resultSize)}`,
          });
      }
      if (round.userAfter) messages.push({ role: 'user', content: `Keep going (${roundIndex}).` });
    });
    return messages;
  });

/** Indices of messages that satisfy `predicate`. */
function indicesOf(messages: readonly ChatMessage[], predicate: (message: ChatMessage) => boolean): number[] {
  return messages.flatMap((message, index) => (predicate(message) ? [index] : []));
}

const hasCalls = (message: ChatMessage): boolean =>
  message.role === 'assistant' && (message.tool_calls ?? []).length > 0;

/** A conversation with at least one turn that calls tools, and that turn's index. */
const withTurnArb: fc.Arbitrary<{ messages: ChatMessage[]; turn: number }> = validConversationArb
  .filter((messages) => messages.some(hasCalls))
  .chain((messages) => fc.constantFrom(...indicesOf(messages, hasCalls)).map((turn) => ({ messages, turn })));

/** A conversation and one of its messages, by index. */
const withMessageArb = (
  predicate: (message: ChatMessage) => boolean = () => true,
): fc.Arbitrary<{ messages: ChatMessage[]; at: number }> =>
  validConversationArb
    .filter((messages) => messages.some(predicate))
    .chain((messages) => fc.constantFrom(...indicesOf(messages, predicate)).map((at) => ({ messages, at })));

/** `messages` with message `at` replaced by `replace(message)` (a fresh array; the original is untouched). */
function replaced(messages: readonly ChatMessage[], at: number, replace: (message: ChatMessage) => unknown): unknown[] {
  return messages.map((message, index) => (index === at ? replace(structuredClone(message)) : message));
}

function callsOf(message: ChatMessage): ToolCall[] {
  return message.tool_calls ?? [];
}

/** Numbers no count or size may be: NaN, infinities, negatives, fractions, beyond 2^53. */
const badInteger: fc.Arbitrary<unknown> = fc.constantFrom(
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  -1,
  -1000,
  1.5,
  1e300,
  2 ** 53 + 2,
  '12',
  '',
);

// ---------------------------------------------------------------------------------------------
// The classes
// ---------------------------------------------------------------------------------------------

const message = (name: string, cases: fc.Arbitrary<MalformedCase>): MalformedClass => ({
  name,
  scope: 'messages',
  cases,
});
const agentMessage = (name: string, cases: fc.Arbitrary<MalformedCase>): MalformedClass => ({
  name,
  scope: 'agent-messages',
  cases,
});
const option = (
  name: string,
  cases: fc.Arbitrary<MalformedCase>,
  workflows?: readonly FuzzWorkflow[],
): MalformedClass => ({ name, scope: 'options', cases, ...(workflows ? { workflows } : {}) });
const agentInput = (name: string, cases: fc.Arbitrary<MalformedCase>): MalformedClass => ({
  name,
  scope: 'agent-input',
  cases,
});
const compactInput = (name: string, cases: fc.Arbitrary<MalformedCase>): MalformedClass => ({
  name,
  scope: 'compact-input',
  cases,
});

/** A valid agentRun input around `messages` (the model and options do not matter to the validators). */
export function validAgentInput(
  messages: unknown[] = [{ role: 'user', content: 'Fix app.py' }],
): Record<string, unknown> {
  return {
    messages,
    model: [
      {
        provider: 'replay',
        trajectory: 'taubench_gpt4o_airline_task2_trial1',
        contextWindow: 100_000,
        maxOutputTokens: 1_000,
      },
      { provider: 'openai', model: 'gpt-4o-mini', contextWindow: 128_000, maxOutputTokens: 4_096 },
    ],
    tools: [
      'fs_read',
      {
        type: 'function',
        function: {
          name: 'lookup_order',
          description: 'Find an order.',
          parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
        },
      },
    ],
    compaction: { ageObservations: true, keepRecent: 4 },
    maxRounds: 2,
    chatActivity: { maximumAttempts: 2, initialInterval: '1s' },
  };
}

/** A valid set of compaction options for compactConversation. */
export function validCompactOptions(): Record<string, unknown> {
  // A budget no generated conversation reaches: a valid input completes without a summary.
  return { contextBudget: 1_000_000, keepRecent: 4, ageObservations: true };
}

/** agentRun input with one top-level field set to `value` (`undefined` deletes it). */
function agentWith(key: string, value: unknown): Record<string, unknown> {
  const input = validAgentInput();
  if (value === undefined) delete input[key];
  else input[key] = value;
  return input;
}

/** agentRun input whose model chain has `config` at position 1 (after a valid backend). */
function agentWithModel(
  change: (config: Record<string, unknown>) => void,
  provider: 'openai' | 'replay' = 'openai',
): Record<string, unknown> {
  const config: Record<string, unknown> =
    provider === 'openai'
      ? { provider: 'openai', model: 'gpt-4o-mini', contextWindow: 128_000, maxOutputTokens: 4_096 }
      : {
          provider: 'replay',
          trajectory: 'taubench_gpt4o_airline_task2_trial1',
          contextWindow: 100_000,
          maxOutputTokens: 1_000,
        };
  change(config);
  return {
    ...validAgentInput(),
    model: [
      {
        provider: 'replay',
        trajectory: 'taubench_gpt4o_airline_task2_trial1',
        contextWindow: 100_000,
        maxOutputTokens: 1_000,
      },
      config,
    ],
  };
}

/** agentRun input whose `tools` has `tool` after a valid built-in one. */
function agentWithTool(tool: unknown): Record<string, unknown> {
  return { ...validAgentInput(), tools: ['grep', tool] };
}

const lookupTool = (fn: Record<string, unknown>): Record<string, unknown> => ({
  type: 'function',
  function: { name: 'lookup_order', ...fn },
});

/** A valid compactConversation input in the Anthropic format: a provider-valid conversation converted, its system prompt beside it. */
export const validAnthropicInputArb: fc.Arbitrary<{
  messages: Record<string, unknown>[];
  system?: unknown;
  options: Record<string, unknown>;
}> = validConversationArb.map((conversation) => {
  const { system, messages } = toAnthropic(conversation);
  const input = {
    messages: messages.map((message) => structuredClone({ ...message })),
    options: { ...validCompactOptions(), format: 'anthropic' },
  };
  return system === undefined ? input : { ...input, system };
});

type AnthropicInput = { messages: Record<string, unknown>[]; system?: unknown; options: Record<string, unknown> };

/** Positions `[message, block]` of the blocks of `type` in an Anthropic input. */
function blocksOfType(input: AnthropicInput, type: string): Array<[number, number]> {
  return input.messages.flatMap((message, index) => {
    const content: unknown = message.content;
    if (!Array.isArray(content)) return [];
    return content.flatMap((block: unknown, position): Array<[number, number]> =>
      Reflect.get(Object(block), 'type') === type ? [[index, position]] : [],
    );
  });
}

/** An Anthropic input and one of its blocks of `type`. */
const withAnthropicBlockArb = (type: string): fc.Arbitrary<{ input: AnthropicInput; at: [number, number] }> =>
  validAnthropicInputArb
    .filter((input) => blocksOfType(input, type).length > 0)
    .chain((input) => fc.constantFrom(...blocksOfType(input, type)).map((at) => ({ input, at })));

/** The input with block `at` changed by `change` (a copy). */
function withBlock(
  input: AnthropicInput,
  [index, position]: [number, number],
  change: (block: Record<string, unknown>) => unknown,
): AnthropicInput {
  const copy = structuredClone(input);
  const content: unknown = copy.messages[index]?.content;
  if (Array.isArray(content)) content[position] = change({ ...Object(content[position]) });
  return copy;
}

const anthropicInput = (name: string, cases: fc.Arbitrary<MalformedCase>): MalformedClass =>
  compactInput(`anthropic-${name}`, cases);

/** Classes of malformed Anthropic input (options.format "anthropic"): compactConversation only. */
const ANTHROPIC_CLASSES: readonly MalformedClass[] = [
  anthropicInput(
    'orphan-tool-result',
    withAnthropicBlockArb('tool_result').map(({ input, at }) => ({
      value: withBlock(input, at, (block) => ({ ...block, tool_use_id: 'toolu_nobody' })),
      field: `messages[${at[0]}].content[${at[1]}].tool_use_id`,
      reason: /answers no tool_use/,
    })),
  ),
  anthropicInput(
    'tool-result-without-id',
    withAnthropicBlockArb('tool_result').map(({ input, at }) => ({
      value: withBlock(input, at, ({ tool_use_id: _id, ...block }) => block),
      field: `messages[${at[0]}].content[${at[1]}].tool_use_id`,
      reason: /required/,
    })),
  ),
  anthropicInput(
    'tool-use-input-not-an-object',
    fc
      .tuple(withAnthropicBlockArb('tool_use'), fc.constantFrom('{"path":"a"}', 5, null, [1]))
      .map(([{ input, at }, bad]) => ({
        value: withBlock(input, at, (block) => ({ ...block, input: bad })),
        field: `messages[${at[0]}].content[${at[1]}].input`,
      })),
  ),
  anthropicInput(
    'tool-use-without-name',
    withAnthropicBlockArb('tool_use').map(({ input, at }) => ({
      value: withBlock(input, at, (block) => ({ ...block, name: '' })),
      field: `messages[${at[0]}].content[${at[1]}].name`,
    })),
  ),
  anthropicInput(
    'block-without-type',
    fc.tuple(withAnthropicBlockArb('tool_use'), fc.constantFrom(undefined, 5, null)).map(([{ input, at }, type]) => ({
      value: withBlock(input, at, (block) => ({ ...block, type })),
      field: `messages[${at[0]}].content[${at[1]}].type`,
      reason: /required/,
    })),
  ),
  anthropicInput(
    'system-role-in-messages',
    validAnthropicInputArb.chain((input) =>
      fc.nat({ max: input.messages.length - 1 }).map((index) => {
        const copy = structuredClone(input);
        copy.messages[index] = { role: 'system', content: 'Be brief.' };
        return { value: copy, field: `messages[${index}].role`, reason: /system prompt in the request body/ };
      }),
    ),
  ),
  anthropicInput(
    'tool-role',
    validAnthropicInputArb.chain((input) =>
      fc.nat({ max: input.messages.length - 1 }).map((index) => {
        const copy = structuredClone(input);
        copy.messages[index] = { ...copy.messages[index], role: 'tool' };
        return { value: copy, field: `messages[${index}].role`, reason: /user, assistant/ };
      }),
    ),
  ),
  anthropicInput(
    'bad-system',
    fc
      .tuple(validAnthropicInputArb, fc.constantFrom(5, null, { text: 'x' }, [{ type: 'image' }]))
      .map(([input, system]) => ({
        value: { ...input, system },
        field: Array.isArray(system) ? 'system[0].type' : 'system',
      })),
  ),
  compactInput(
    'system-beside-openai-messages',
    validConversationArb.map((messages) => ({
      value: { messages, system: 'Be brief.', options: validCompactOptions() },
      field: 'system',
      reason: /only with options.format "anthropic"/,
    })),
  ),
  compactInput(
    'unknown-format',
    fc.constantFrom('gemini', 'Anthropic', '', 5, null).map((format) => ({
      value: { messages: [{ role: 'user', content: 'hi' }], options: { ...validCompactOptions(), format } },
      field: 'options.format',
      reason: /must be one of openai, anthropic/,
    })),
  ),
];

/** A valid compactConversation input in the AI SDK format: a provider-valid conversation converted. */
export const validAiSdkInputArb: fc.Arbitrary<AnthropicInput> = validConversationArb.map((conversation) => ({
  messages: toAiSdk(conversation).map((message) => structuredClone({ ...message })),
  options: { ...validCompactOptions(), format: 'ai-sdk' },
}));

/** An AI SDK input and one of its parts of `type`. */
const withAiSdkPartArb = (type: string): fc.Arbitrary<{ input: AnthropicInput; at: [number, number] }> =>
  validAiSdkInputArb
    .filter((input) => blocksOfType(input, type).length > 0)
    .chain((input) => fc.constantFrom(...blocksOfType(input, type)).map((at) => ({ input, at })));

const aiSdkInput = (name: string, cases: fc.Arbitrary<MalformedCase>): MalformedClass =>
  compactInput(`ai-sdk-${name}`, cases);

/** Classes of malformed AI SDK input (options.format "ai-sdk"): compactConversation only. */
const AI_SDK_CLASSES: readonly MalformedClass[] = [
  aiSdkInput(
    'orphan-tool-result',
    withAiSdkPartArb('tool-result').map(({ input, at }) => ({
      value: withBlock(input, at, (part) => ({ ...part, toolCallId: 'call_nobody' })),
      field: `messages[${at[0]}].content[${at[1]}].toolCallId`,
      reason: /answers no tool-call/,
    })),
  ),
  aiSdkInput(
    'tool-result-without-output',
    withAiSdkPartArb('tool-result').map(({ input, at }) => ({
      value: withBlock(input, at, ({ output: _output, ...part }) => part),
      field: `messages[${at[0]}].content[${at[1]}].output`,
      reason: /required/,
    })),
  ),
  aiSdkInput(
    'tool-call-without-id',
    withAiSdkPartArb('tool-call').map(({ input, at }) => ({
      value: withBlock(input, at, (part) => ({ ...part, toolCallId: '' })),
      field: `messages[${at[0]}].content[${at[1]}].toolCallId`,
    })),
  ),
  aiSdkInput(
    'tool-message-of-text',
    validAiSdkInputArb
      .filter((input) => input.messages.some((message) => message.role === 'tool'))
      .map((input) => {
        const index = input.messages.findIndex((message) => message.role === 'tool');
        const copy = structuredClone(input);
        copy.messages[index] = { role: 'tool', content: 'done' };
        return { value: copy, field: `messages[${index}].content`, reason: /tool-result parts/ };
      }),
  ),
  aiSdkInput(
    'unknown-role',
    fc.tuple(validAiSdkInputArb, fc.constantFrom('developer', 'function', '', 5)).chain(([input, role]) =>
      fc.nat({ max: input.messages.length - 1 }).map((index) => {
        const copy = structuredClone(input);
        copy.messages[index] = { ...copy.messages[index], role };
        return { value: copy, field: `messages[${index}].role`, reason: /system, user, assistant, tool/ };
      }),
    ),
  ),
];

export const MALFORMED_CLASSES: readonly MalformedClass[] = [
  // --- conversations (both workflows) -----------------------------------------------------
  message(
    'messages-not-a-list',
    fc
      .oneof(fc.string(), fc.integer(), fc.constant({ role: 'user', content: 'x' }), fc.constant(null))
      .map((value) => ({ value, field: 'messages', reason: /array/ })),
  ),
  message(
    'message-not-an-object',
    fc
      .tuple(withMessageArb(), fc.constantFrom(null, 7, 'hello', [{ role: 'user', content: 'x' }]))
      .map(([{ messages, at }, bad]) => ({
        value: replaced(messages, at, () => bad),
        field: `messages[${at}]`,
        reason: /must be an object/,
      })),
  ),
  message(
    'unknown-role',
    fc
      .tuple(withMessageArb(), fc.constantFrom('bot', 'function', 'SYSTEM', '', 5, null))
      .map(([{ messages, at }, role]) => ({
        value: replaced(messages, at, (found) => ({ ...found, role })),
        field: `messages[${at}].role`,
        reason: /must be one of system, developer, user, assistant, tool/,
      })),
  ),
  message(
    'missing-role',
    withMessageArb().map(({ messages, at }) => ({
      value: replaced(messages, at, ({ role: _role, ...rest }) => rest),
      field: `messages[${at}].role`,
    })),
  ),
  message(
    'content-of-wrong-type',
    fc
      .tuple(
        withMessageArb((found) => found.role !== 'assistant'),
        fc.constantFrom(5, true, { text: 'x' }),
      )
      .map(([{ messages, at }, content]) => ({
        value: replaced(messages, at, (found) => ({ ...found, content })),
        field: `messages[${at}].content`,
        reason: /must be a string, null or an array of content parts/,
      })),
  ),
  message(
    'missing-content',
    withMessageArb().map(({ messages, at }) => ({
      value: replaced(messages, at, ({ content: _content, ...rest }) => rest),
      field: `messages[${at}].content`,
      reason: /required/,
    })),
  ),
  message(
    'null-content-outside-assistant',
    withMessageArb((found) => found.role !== 'assistant').map(({ messages, at }) => ({
      value: replaced(messages, at, (found) => ({ ...found, content: null })),
      field: `messages[${at}].content`,
      reason: /must not be null for role/,
    })),
  ),
  message(
    'assistant-without-content-or-calls',
    withTurnArb.map(({ messages, turn }) => ({
      // Drop the calls and their results (so no orphan comes first), keep content null.
      value: messages
        .filter(
          (found) =>
            !(
              found.role === 'tool' &&
              callsOf(messages[turn] ?? { role: 'user', content: '' }).some((call) => call.id === found.tool_call_id)
            ),
        )
        .map((found) => (found === messages[turn] ? { role: 'assistant', content: null } : found)),
      field: `messages[${turn}].content`,
      reason: /must not be null for an assistant message without tool_calls/,
    })),
  ),
  message(
    'content-part-without-type',
    fc
      .tuple(
        withMessageArb((found) => found.role === 'user'),
        fc.constantFrom(null, 'text', { text: 'hi' }, { type: 5 }),
      )
      .map(([{ messages, at }, part]) => ({
        value: replaced(messages, at, (found) => ({ ...found, content: [{ type: 'text', text: 'ok' }, part] })),
        field: `messages[${at}].content[1].type`,
      })),
  ),
  message(
    'text-part-without-text',
    fc
      .tuple(
        withMessageArb((found) => found.role === 'user'),
        fc.constantFrom(undefined, 5, null, ['x']),
      )
      .map(([{ messages, at }, text]) => ({
        value: replaced(messages, at, (found) => ({
          ...found,
          content: [text === undefined ? { type: 'text' } : { type: 'text', text }],
        })),
        field: `messages[${at}].content[0].text`,
        reason: /must be a string for a "text" part/,
      })),
  ),
  message(
    'tool-result-without-tool_call_id',
    withMessageArb((found) => found.role === 'tool').map(({ messages, at }) => ({
      value: replaced(messages, at, ({ tool_call_id: _id, ...rest }) => rest),
      field: `messages[${at}].tool_call_id`,
      reason: /required for role "tool"/,
    })),
  ),
  message(
    'tool_call_id-outside-tool-role',
    withMessageArb((found) => found.role === 'user').map(({ messages, at }) => ({
      value: replaced(messages, at, (found) => ({ ...found, tool_call_id: 'call_1' })),
      field: `messages[${at}].tool_call_id`,
      reason: /only allowed for role "tool"/,
    })),
  ),
  message(
    'tool_calls-outside-assistant',
    withMessageArb((found) => found.role === 'user').map(({ messages, at }) => ({
      value: replaced(messages, at, (found) => ({
        ...found,
        tool_calls: [{ id: 'call_x', type: 'function', function: { name: 'f', arguments: '{}' } }],
      })),
      field: `messages[${at}].tool_calls`,
      reason: /only allowed for role "assistant"/,
    })),
  ),
  message(
    'tool-call-without-id',
    fc.tuple(withTurnArb, fc.constantFrom(undefined, '', 5, null)).map(([{ messages, turn }, id]) => ({
      value: replaced(messages, turn, (found) => ({
        ...found,
        tool_calls: callsOf(found).map((call, position) => (position === 0 ? { ...call, id } : call)),
      })),
      field: `messages[${turn}].tool_calls[0].id`,
    })),
  ),
  message(
    'tool-call-of-unknown-type',
    fc
      .tuple(withTurnArb, fc.constantFrom('retrieval', 'code_interpreter', undefined, 1))
      .map(([{ messages, turn }, type]) => ({
        value: replaced(messages, turn, (found) => ({
          ...found,
          tool_calls: callsOf(found).map((call, position) => (position === 0 ? { ...call, type } : call)),
        })),
        field: `messages[${turn}].tool_calls[0].type`,
      })),
  ),
  message(
    'tool-call-without-function-name',
    fc.tuple(withTurnArb, fc.constantFrom(undefined, '', 42)).map(([{ messages, turn }, name]) => ({
      value: replaced(messages, turn, (found) => ({
        ...found,
        tool_calls: callsOf(found).map((call, position) =>
          position === 0 ? { ...call, function: { ...call.function, name } } : call,
        ),
      })),
      field: `messages[${turn}].tool_calls[0].function.name`,
    })),
  ),
  message(
    'tool-call-arguments-not-a-string',
    fc.tuple(withTurnArb, fc.constantFrom({ path: 'app.py' }, 5, null, ['a'])).map(([{ messages, turn }, args]) => ({
      value: replaced(messages, turn, (found) => ({
        ...found,
        tool_calls: callsOf(found).map((call, position) =>
          position === 0 ? { ...call, function: { ...call.function, arguments: args } } : call,
        ),
      })),
      field: `messages[${turn}].tool_calls[0].function.arguments`,
    })),
  ),
  message(
    'duplicate-tool_call-id-in-one-turn',
    withTurnArb.map(({ messages, turn }) => {
      const calls = callsOf(messages[turn] ?? { role: 'user', content: '' });
      const first = calls[0];
      return {
        value: replaced(messages, turn, (found) => ({
          ...found,
          tool_calls: [...callsOf(found), { ...first, function: { name: 'grep', arguments: '{"pattern":"x"}' } }],
        })),
        field: `messages[${turn}].tool_calls[${calls.length}].id`,
        reason: /is also the id of tool_calls\[0\]/,
      };
    }),
  ),
  message(
    'bad-harness-flags',
    fc
      .tuple(
        withMessageArb(),
        fc.oneof(
          fc.record({ key: fc.constant('sticky'), value: fc.constantFrom('yes', 1, null) }),
          fc.record({ key: fc.constant('depth'), value: fc.constantFrom(-1, 1.5, Number.NaN, '2', null) }),
        ),
      )
      .map(([{ messages, at }, { key, value }]) => ({
        value: replaced(messages, at, (found) => ({ ...found, [key]: value })),
        field: `messages[${at}].${key}`,
      })),
  ),
  message(
    'name-not-a-string',
    fc.tuple(withMessageArb(), fc.constantFrom(5, null, { first: 'Ada' })).map(([{ messages, at }, name]) => ({
      value: replaced(messages, at, (found) => ({ ...found, name })),
      field: `messages[${at}].name`,
    })),
  ),

  // --- conversations a provider refuses (agentRun only; compaction accepts them) ------------
  agentMessage(
    'orphan-tool-result',
    fc
      .tuple(
        withMessageArb((found) => found.role === 'user'),
        fc.constantFrom('call_nobody', 'call_1'),
      )
      .map(([{ messages, at }, id]) => ({
        // Right after a user message: no turn is open, whatever id it names.
        value: [
          ...messages.slice(0, at + 1),
          { role: 'tool', tool_call_id: id, content: 'stray' },
          ...messages.slice(at + 1),
        ],
        field: `messages[${at + 1}].tool_call_id`,
        reason: /answers no tool call/,
      })),
  ),
  agentMessage(
    'tool-result-for-a-call-not-made',
    withTurnArb.map(({ messages, turn }) => ({
      value: [
        ...messages.slice(0, turn + 1),
        { role: 'tool', tool_call_id: 'call_never_made', content: 'r' },
        ...messages.slice(turn + 1),
      ],
      field: `messages[${turn + 1}].tool_call_id`,
      reason: /"call_never_made" answers no tool call of messages\[\d+\]/,
    })),
  ),
  agentMessage(
    'tool-result-answered-twice',
    withTurnArb.map(({ messages, turn }) => {
      const first = callsOf(messages[turn] ?? { role: 'user', content: '' })[0];
      return {
        value: [
          ...messages.slice(0, turn + 1),
          { role: 'tool', tool_call_id: first?.id, content: 'again' },
          ...messages.slice(turn + 1),
        ],
        // The copy comes first; the original result after it is the second answer.
        field: `messages[${messages.findIndex((found, index) => index > turn && found.role === 'tool' && found.tool_call_id === first?.id) + 1}].tool_call_id`,
        reason: /is answered twice/,
      };
    }),
  ),
  agentMessage(
    'unanswered-tool-call',
    withTurnArb.map(({ messages, turn }) => {
      const calls = callsOf(messages[turn] ?? { role: 'user', content: '' });
      const dropped = calls[calls.length - 1]?.id;
      return {
        value: messages.filter((found) => !(found.role === 'tool' && found.tool_call_id === dropped)),
        field: `messages[${turn}].tool_calls[${calls.length - 1}].id`,
        reason: /has no tool result/,
      };
    }),
  ),
  agentMessage(
    'non-json-arguments',
    fc
      .tuple(withTurnArb, fc.constantFrom('not json', '{"path": ', '', '[1,2]', '"app.py"', 'null'))
      .map(([{ messages, turn }, args]) => ({
        value: replaced(messages, turn, (found) => ({
          ...found,
          tool_calls: callsOf(found).map((call, position) =>
            position === 0 ? { ...call, function: { ...call.function, arguments: args } } : call,
          ),
        })),
        field: `messages[${turn}].tool_calls[0].function.arguments`,
        reason: /must be a JSON object/,
      })),
  ),

  // --- compaction options (both workflows) --------------------------------------------------
  option(
    'context-budget-not-a-positive-integer',
    // (null is no budget: agentRun then aims at each round's room, compactConversation asks for one.)
    fc
      .constantFrom(Number.NaN, -1, 0, 1.5, 1e300, Number.POSITIVE_INFINITY, '128k', [1000])
      .map((contextBudget) => ({ value: { ...validCompactOptions(), contextBudget }, field: 'contextBudget' })),
  ),
  option(
    'missing-context-budget',
    fc.constant({ value: { keepRecent: 4 }, field: 'contextBudget', reason: /required/ }),
    ['compactConversation'],
  ),
  option(
    'ratio-out-of-range',
    fc
      .tuple(
        fc.constantFrom('triggerRatio', 'targetRatio'),
        fc.constantFrom(0, -0.5, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '0.8'),
      )
      .map(([key, value]) => ({ value: { ...validCompactOptions(), [key]: value }, field: key })),
  ),
  option(
    'inconsistent-ratios',
    fc
      .tuple(fc.double({ min: 0.05, max: 0.9, noNaN: true }), fc.double({ min: 0.01, max: 0.5, noNaN: true }))
      .map(([trigger, gap]) => ({ trigger, target: Math.min(1, trigger + gap) }))
      .filter(({ trigger, target }) => target > trigger)
      .map(({ trigger, target }) => ({
        value: { ...validCompactOptions(), triggerRatio: trigger, targetRatio: target },
        field: 'targetRatio',
        reason: /must not exceed triggerRatio/,
      })),
  ),
  option(
    'bad-count-option',
    fc
      .tuple(fc.constantFrom('keepRecent', 'ageMinChars', 'ageReclaimMin', 'toolResultCap'), badInteger)
      .map(([key, value]) => ({ value: { ...validCompactOptions(), [key]: value }, field: key })),
  ),
  option(
    'bad-max-attempts',
    fc
      .constantFrom(0, 101, 1.5, -3, Number.NaN, '3')
      .map((maxAttempts) => ({ value: { ...validCompactOptions(), maxAttempts }, field: 'maxAttempts' })),
  ),
  option(
    'bad-duration',
    fc
      .tuple(
        fc.constantFrom('retryBackoff', 'startToCloseTimeout', 'heartbeatTimeout'),
        fc.constantFrom('soon', '-1s', '5 minutes', '1e3s', -5, Number.NaN, ''),
      )
      .map(([key, value]) => ({ value: { ...validCompactOptions(), [key]: value }, field: key })),
  ),
  option(
    'zero-timeout',
    fc
      .tuple(fc.constantFrom('startToCloseTimeout', 'heartbeatTimeout'), fc.constantFrom(0, '0s', '0ms'))
      .map(([key, value]) => ({
        value: { ...validCompactOptions(), [key]: value },
        field: key,
        reason: /longer than zero/,
      })),
  ),
  option(
    'boolean-option-of-wrong-type',
    fc
      .constantFrom('yes', 1, null, 'true')
      .map((ageObservations) => ({ value: { ...validCompactOptions(), ageObservations }, field: 'ageObservations' })),
  ),
  option(
    'bad-task-queue',
    fc
      .constantFrom('', ' ', ' agents', 'q'.repeat(1001), 'é'.repeat(501), 42)
      .map((taskQueue) => ({ value: { ...validCompactOptions(), taskQueue }, field: 'taskQueue' })),
  ),
  option(
    'bad-summarizer-model',
    fc
      .constantFrom('', 5, null, {})
      .map((summarizerModel) => ({ value: { ...validCompactOptions(), summarizerModel }, field: 'summarizerModel' })),
  ),

  // --- agentRun input -----------------------------------------------------------------------
  agentInput(
    'agent-input-not-an-object',
    fc.constantFrom(null, 'run', 7, [validAgentInput()]).map((value) => ({ value, field: 'input' })),
  ),
  agentInput(
    'missing-required-field',
    fc
      .constantFrom('messages', 'model', 'compaction')
      .map((key) => ({ value: agentWith(key, undefined), field: `input.${key}`, reason: /required/ })),
  ),
  agentInput(
    'unknown-field',
    fc
      .constantFrom('maxRound', 'tool', 'models', 'temperature', 'compactions')
      .map((key) => ({ value: agentWith(key, 3), field: `input.${key}`, reason: /unknown field/ })),
  ),
  agentInput(
    'compaction-not-an-object',
    fc
      .constantFrom(null, 'auto', 5, true)
      .map((compaction) => ({ value: agentWith('compaction', compaction), field: 'input.compaction' })),
  ),
  agentInput(
    'unknown-provider',
    fc.constantFrom('anthropic', 'OpenAI', '', undefined, 3).map((provider) => ({
      value: agentWithModel((config) => {
        if (provider === undefined) delete config.provider;
        else config.provider = provider;
      }),
      field: 'input.model[1].provider',
      reason: /must be "openai" or "replay"/,
    })),
  ),
  agentInput(
    'bad-window-numbers',
    fc.tuple(fc.constantFrom('contextWindow', 'maxOutputTokens', 'safetyMargin'), badInteger).map(([key, value]) => ({
      value: agentWithModel((config) => {
        config[key] = value;
      }),
      field: `input.model[1].${key}`,
    })),
  ),
  agentInput(
    'no-room-left',
    fc
      .record({ window: fc.integer({ min: 100, max: 200_000 }), extra: fc.integer({ min: 0, max: 5_000 }) })
      .map(({ window, extra }) => ({
        value: agentWithModel((config) => {
          config.contextWindow = window;
          config.maxOutputTokens = window + extra;
        }, 'replay'),
        field: 'input.model[1].contextWindow',
        reason: /leaves no room for the conversation/,
      })),
  ),
  agentInput(
    'empty-model-chain',
    fc.constant({ value: agentWith('model', []), field: 'input.model', reason: /must not be an empty list/ }),
  ),
  agentInput(
    'unknown-model-field',
    fc.constantFrom('max_tokens', 'apiKey', 'baseURL', 'window').map((key) => ({
      value: agentWithModel((config) => {
        config[key] = 'x';
      }),
      field: `input.model[1].${key}`,
      reason: /unknown field/,
    })),
  ),
  agentInput(
    'missing-model-name',
    fc
      .tuple(fc.constantFrom<'openai' | 'replay'>('openai', 'replay'), fc.constantFrom(undefined, '', 5))
      .map(([provider, name]) => {
        const key = provider === 'openai' ? 'model' : 'trajectory';
        return {
          value: agentWithModel((config) => {
            if (name === undefined) delete config[key];
            else config[key] = name;
          }, provider),
          field: `input.model[1].${key}`,
        };
      }),
  ),
  agentInput(
    'bad-temperature',
    fc.constantFrom(-1, 2.5, Number.NaN, 'hot').map((temperature) => ({
      value: agentWithModel((config) => {
        config.temperature = temperature;
      }),
      field: 'input.model[1].temperature',
    })),
  ),
  agentInput(
    'unknown-tokenizer',
    fc.constantFrom('gpt2', 'p50k_base', '', 4).map((tokenizer) => ({
      value: agentWithModel((config) => {
        config.tokenizer = tokenizer;
      }),
      field: 'input.model[1].tokenizer',
    })),
  ),
  agentInput(
    'unknown-built-in-tool',
    fc
      .constantFrom('rm', 'bash', 'FS_READ', '')
      .map((tool) => ({ value: agentWithTool(tool), field: 'input.tools[1]', reason: /is not a built-in tool/ })),
  ),
  agentInput(
    'bad-tool-declaration',
    fc
      .constantFrom(
        { tool: { function: { name: 'lookup_order' } }, field: 'input.tools[1].type' },
        { tool: { type: 'retrieval', function: { name: 'lookup_order' } }, field: 'input.tools[1].type' },
        { tool: { type: 'function' }, field: 'input.tools[1].function' },
        { tool: { type: 'function', function: 'lookup_order' }, field: 'input.tools[1].function' },
        { tool: lookupTool({ name: 'look up' }), field: 'input.tools[1].function.name' },
        { tool: lookupTool({ name: 'x'.repeat(65) }), field: 'input.tools[1].function.name' },
        { tool: lookupTool({ description: 7 }), field: 'input.tools[1].function.description' },
        { tool: lookupTool({ strict: 'yes' }), field: 'input.tools[1].function.strict' },
        { tool: 12, field: 'input.tools[1]' },
        { tool: null, field: 'input.tools[1]' },
      )
      .map(({ tool, field }) => ({ value: agentWithTool(tool), field })),
  ),
  agentInput(
    'bad-tool-schema',
    fc
      .constantFrom(
        { parameters: 'object', field: 'input.tools[1].function.parameters' },
        { parameters: ['id'], field: 'input.tools[1].function.parameters' },
        { parameters: { type: 'string' }, field: 'input.tools[1].function.parameters.type' },
        { parameters: { type: 'object', properties: ['id'] }, field: 'input.tools[1].function.parameters.properties' },
        {
          parameters: { type: 'object', properties: { id: 'string' } },
          field: 'input.tools[1].function.parameters.properties.id',
        },
        { parameters: { type: 'object', required: 'id' }, field: 'input.tools[1].function.parameters.required' },
        { parameters: { type: 'object', required: [1] }, field: 'input.tools[1].function.parameters.required[0]' },
      )
      .map(({ parameters, field }) => ({ value: agentWithTool(lookupTool({ parameters })), field })),
  ),
  agentInput(
    'tool-named-like-an-activity',
    fc
      .constantFrom('chat', 'summarize', 'countTokens', 'recordSession', 'describeWorker', 'replayTool')
      .map((name) => ({
        value: agentWithTool(lookupTool({ name })),
        field: 'input.tools[1].function.name',
        reason: /is one of the worker's own activities/,
      })),
  ),
  agentInput(
    'duplicate-tool-name',
    fc.constantFrom('grep', 'lookup_order').map((name) => ({
      value: { ...validAgentInput(), tools: ['grep', lookupTool({}), name === 'grep' ? 'grep' : lookupTool({})] },
      field: 'input.tools[2].function.name',
      reason: /is declared twice/,
    })),
  ),
  agentInput(
    'bad-round-limits',
    fc
      .tuple(
        fc.constantFrom('maxRounds', 'continueAsNewAfterRounds'),
        fc.constantFrom(0, -1, 1.5, Number.NaN, 1e300, '10'),
      )
      .map(([key, value]) => ({ value: agentWith(key, value), field: `input.${key}` })),
  ),
  agentInput(
    'bad-activity-settings',
    fc
      .tuple(
        fc.constantFrom('chatActivity', 'toolActivity'),
        fc.constantFrom(
          { key: 'maximumAttempts', value: 0 },
          { key: 'maximumAttempts', value: 101 },
          { key: 'startToCloseTimeout', value: 'soon' },
          { key: 'startToCloseTimeout', value: 0 },
          { key: 'heartbeatTimeout', value: '-2s' },
          { key: 'initialInterval', value: '1m' },
          { key: 'initialInterval', value: 90_000 },
          { key: 'taskQueue', value: ' ' },
          { key: 'retries', value: 3 },
        ),
      )
      .map(([activity, { key, value }]) => ({
        value: agentWith(activity, { [key]: value }),
        field: `input.${activity}.${key}`,
      })),
  ),
  agentInput(
    'bad-backend-cooldown',
    fc
      .constantFrom(
        { key: 'rounds', value: -1 },
        { key: 'rounds', value: 1.5 },
        { key: 'time', value: 'later' },
        { key: 'time', value: -10 },
        { key: 'minutes', value: 5 },
      )
      .map(({ key, value }) => ({
        value: agentWith('backendCooldown', { [key]: value }),
        field: `input.backendCooldown.${key}`,
      })),
  ),
  agentInput(
    'bad-payload-limit',
    fc.constantFrom(0, 100, 1023, 1.5, Number.NaN, '2MB').map((maxPayloadBytes) => ({
      value: agentWith('maxPayloadBytes', maxPayloadBytes),
      field: 'input.maxPayloadBytes',
    })),
  ),
  agentInput(
    'bad-search-attributes-flag',
    fc.constantFrom('yes', 1, null).map((searchAttributes) => ({
      value: agentWith('searchAttributes', searchAttributes),
      field: 'input.searchAttributes',
    })),
  ),
  agentInput(
    'hand-made-carried-state',
    fc
      .constantFrom(
        { carried: 'resume', field: 'input.carried' },
        { carried: { version: 2 }, field: 'input.carried.version' },
        { carried: { version: 1, live: 'x' }, field: 'input.carried.live' },
      )
      .map(({ carried, field }) => ({ value: { ...validAgentInput([]), carried }, field })),
  ),

  // --- compactConversation input --------------------------------------------------------------
  compactInput(
    'compact-input-not-an-object',
    fc.constantFrom(null, 'compact', 3, []).map((value) => ({ value, field: 'input' })),
  ),
  compactInput(
    'options-not-an-object',
    fc
      .constantFrom(null, undefined, 'default', 128_000)
      .map((options) => ({ value: { messages: [{ role: 'user', content: 'hi' }], options }, field: 'options' })),
  ),
  compactInput(
    'bad-payload-store-flag',
    fc.constantFrom('yes', 1, null).map((payloadStore) => ({
      value: { messages: [{ role: 'user', content: 'hi' }], options: { ...validCompactOptions(), payloadStore } },
      field: 'options.payloadStore',
    })),
  ),
  compactInput(
    'bad-compact-payload-limit',
    fc.constantFrom(0, 1000, 1.5, Number.NaN, '2MB').map((maxPayloadBytes) => ({
      value: { messages: [{ role: 'user', content: 'hi' }], options: { ...validCompactOptions(), maxPayloadBytes } },
      field: 'options.maxPayloadBytes',
    })),
  ),

  // --- compactConversation input in the Anthropic format --------------------------------------
  ...ANTHROPIC_CLASSES,
  ...AI_SDK_CLASSES,

  // --- the addUserMessage update ------------------------------------------------------------
  {
    name: 'update-of-wrong-shape',
    scope: 'update',
    cases: fc
      .constantFrom(
        { value: 5, field: 'message.content' },
        { value: null, field: 'message.content' },
        { value: { text: 'hi' }, field: 'message.content' },
        { value: { content: 5 }, field: 'message.content' },
        { value: { content: null }, field: 'message.content' },
        { value: { content: [{ text: 'hi' }] }, field: 'message.content[0].type' },
        { value: { content: [{ type: 'text' }] }, field: 'message.content[0].text' },
      )
      .map((found) => ({ ...found })),
  },
];

/** The workflows a class applies to. */
export function workflowsOf(malformed: MalformedClass): readonly FuzzWorkflow[] {
  if (malformed.workflows !== undefined) return malformed.workflows;
  switch (malformed.scope) {
    case 'messages':
    case 'options':
      return ['compactConversation', 'agentRun'];
    case 'agent-messages':
    case 'agent-input':
    case 'update':
      return ['agentRun'];
    case 'compact-input':
      return ['compactConversation'];
  }
}

/** The workflow input a case becomes. */
export function inputFor(malformed: MalformedClass, workflow: FuzzWorkflow, value: unknown): unknown {
  switch (malformed.scope) {
    case 'messages':
    case 'agent-messages':
      return workflow === 'agentRun'
        ? { ...validAgentInput(), messages: value }
        : { messages: value, options: validCompactOptions() };
    case 'options':
      if (workflow === 'compactConversation') return { messages: [{ role: 'user', content: 'hi' }], options: value };
      // agentRun: the same options (contextBudget is optional there, but a bad one is still bad).
      return { ...validAgentInput(), compaction: value };
    case 'agent-input':
    case 'compact-input':
      return value;
    case 'update':
      return value;
  }
}

/** The field a failure must name for `workflow`: option keys are `options.<key>` or `input.compaction.<key>`; a list that is not a list is `messages` or `input.messages`. */
export function fieldFor(malformed: MalformedClass, workflow: FuzzWorkflow, field: string): string {
  if (malformed.scope === 'options')
    return workflow === 'compactConversation' ? `options.${field}` : `input.compaction.${field}`;
  if (malformed.scope === 'messages' && field === 'messages' && workflow === 'agentRun') return 'input.messages';
  return field;
}

// ---------------------------------------------------------------------------------------------
// Running a workflow function on a case, outside a workflow
// ---------------------------------------------------------------------------------------------

/** How a workflow function took an input. */
export type Verdict = { kind: 'accepted' } | { kind: 'rejected'; failure: ApplicationFailure };

/** True when `error` was thrown by the Temporal workflow runtime itself (its first stack frame is in @temporalio/workflow). */
function fromWorkflowRuntime(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const frame = (error.stack ?? '').split('\n').find((line) => line.trimStart().startsWith('at '));
  return frame !== undefined && /[\\/]@temporalio[\\/]workflow[\\/]/.test(frame);
}

/**
 * Runs the real workflow function on `input` outside a workflow. Its validation runs exactly as
 * in a worker; a valid input then reaches the Temporal runtime (a handler, an activity), which
 * throws here: that counts as accepted, as does finishing (a compaction that needs no summary).
 * Rejected means an `ApplicationFailure`. Any other error is rethrown: in a worker it would fail
 * the workflow task, and the task would be retried for ever.
 */
export async function verdictOf(workflow: FuzzWorkflow, input: unknown): Promise<Verdict> {
  try {
    // The workflow functions take typed input; the fuzz hands them anything, as a client can.
    const running: unknown = Reflect.apply(workflow === 'agentRun' ? agentRun : compactConversation, undefined, [
      input,
    ]);
    await running;
    return { kind: 'accepted' };
  } catch (error) {
    if (error instanceof ApplicationFailure) return { kind: 'rejected', failure: error };
    if (fromWorkflowRuntime(error)) return { kind: 'accepted' };
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// Random mutations of valid inputs
// ---------------------------------------------------------------------------------------------

type Path = Array<string | number>;

/** Every path in a JSON-like value, the root included. */
function pathsOf(value: unknown, prefix: Path = [], found: Path[] = []): Path[] {
  found.push(prefix);
  if (Array.isArray(value)) value.forEach((item, index) => pathsOf(item, [...prefix, index], found));
  else if (typeof value === 'object' && value !== null)
    for (const [key, item] of Object.entries(value)) pathsOf(item, [...prefix, key], found);
  return found;
}

type Mutation =
  { kind: 'replace'; value: unknown } | { kind: 'delete' } | { kind: 'duplicate' } | { kind: 'swap-with-next' };

/** `root` with `mutation` applied at `path` (a copy; `root` is untouched). */
function mutate(root: unknown, path: Path, mutation: Mutation): unknown {
  if (path.length === 0) return mutation.kind === 'replace' ? mutation.value : root;
  const copy: unknown = structuredClone(root);
  let parent: unknown = copy;
  for (const key of path.slice(0, -1)) parent = Reflect.get(Object(parent), key);
  const last = path[path.length - 1] ?? 0;
  if (Array.isArray(parent) && typeof last === 'number') {
    if (mutation.kind === 'delete') parent.splice(last, 1);
    else if (mutation.kind === 'duplicate') parent.splice(last, 0, structuredClone(parent[last]));
    else if (mutation.kind === 'swap-with-next' && last + 1 < parent.length)
      [parent[last], parent[last + 1]] = [parent[last + 1], parent[last]];
    else if (mutation.kind === 'replace') parent[last] = mutation.value;
  } else if (typeof parent === 'object' && parent !== null) {
    if (mutation.kind === 'delete') Reflect.deleteProperty(parent, last);
    else if (mutation.kind === 'replace') Reflect.set(parent, last, mutation.value);
  }
  return copy;
}

/** Values that break things: the wrong kinds, the numbers no field wants, look-alikes of valid values. */
const nastyValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    null,
    undefined,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    -1,
    0,
    1.5,
    1e300,
    2 ** 53 + 2,
    '',
    ' ',
    'x',
    true,
    [],
    {},
    [null],
    { type: 'x' },
    'tool',
    'assistant',
    'function',
    '1m',
    '0s',
    '-1s',
    'call_1',
  ),
  fc.string({ maxLength: 20 }),
  fc.integer(),
  fc.double(),
  fc.anything({ maxDepth: 2 }),
);

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 6, arbitrary: nastyValue.map((value): Mutation => ({ kind: 'replace', value })) },
  { weight: 2, arbitrary: fc.constant<Mutation>({ kind: 'delete' }) },
  { weight: 1, arbitrary: fc.constant<Mutation>({ kind: 'duplicate' }) },
  { weight: 1, arbitrary: fc.constant<Mutation>({ kind: 'swap-with-next' }) },
);

/** A valid input of `workflow` with 1-3 random mutations. */
export function mutatedInputArb(workflow: FuzzWorkflow): fc.Arbitrary<unknown> {
  const base = validConversationArb.map((messages) =>
    workflow === 'agentRun' ? { ...validAgentInput(), messages } : { messages, options: validCompactOptions() },
  );
  return base.chain((input) =>
    fc.array(fc.tuple(fc.nat(), mutationArb), { minLength: 1, maxLength: 3 }).map((steps) =>
      steps.reduce<unknown>((value, [pick, mutation]) => {
        const paths = pathsOf(value);
        return mutate(value, paths[pick % paths.length] ?? [], mutation);
      }, input),
    ),
  );
}

/** A valid Anthropic (or AI SDK) compactConversation input with 1-3 random mutations. */
export function mutatedFormatInputArb(base: fc.Arbitrary<unknown> = validAnthropicInputArb): fc.Arbitrary<unknown> {
  return base.chain((input) =>
    fc.array(fc.tuple(fc.nat(), mutationArb), { minLength: 1, maxLength: 3 }).map((steps) =>
      steps.reduce<unknown>((value, [pick, mutation]) => {
        const paths = pathsOf(value);
        return mutate(value, paths[pick % paths.length] ?? [], mutation);
      }, input),
    ),
  );
}
