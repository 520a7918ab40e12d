// The JSON Schemas of compactConversation's input and result (docs/, from scripts/compact-conversation-schemas.ts): written
// from the validators' own zod schemas; the committed files are what the script writes, and the
// schemas agree with what validates at run time — the same messages and options accepted and
// rejected as validateMessages and resolveOptions, the same defaults — and describe the results
// the engine returns.
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { repositoryCorpus } from '../../corpus/index.js';
import { createFakeSummarizer } from '../support/conversations.js';
import { normalizeArguments, toAnthropic } from '../support/anthropic.js';
import { toAiSdk } from '../support/ai-sdk.js';
import { jsonSchemaFiles } from '../../scripts/json-schemas.js';
import { InvalidInputError } from '../../src/core/errors.js';
import { durationTextMs, optionsSchema, resolveOptions } from '../../src/core/compaction/options.js';
import { chatMessageSchema as runtimeMessageSchema, validateMessages } from '../../src/core/schema.js';
import { anthropicMessageSchema } from '../../src/core/formats/anthropic-schema.js';
import { aiSdkMessageSchema } from '../../src/core/formats/ai-sdk-schema.js';
import { Compactor, createExtractiveSummarizer } from '../../src/index.js';
import { defaultCounter } from '../../src/core/counting/tokens.js';
import {
  DURATION_PATTERN,
  compactConversationInputSchema,
  compactConversationJsonSchemas,
  compactConversationOptionsSchema,
  compactionResultSchema,
} from '../../scripts/compact-conversation-schemas.js';

const schemas = compactConversationJsonSchemas();
const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false }); // "required" inside if/then names fields declared beside it: valid JSON Schema, an ajv lint;
const validateInput = ajv.compile(schemas['compact-conversation.input.schema.json'] as object);
const validateResult = ajv.compile(schemas['compact-conversation.result.schema.json'] as object);

/** What validateMessages says of `messages`: 'ok' or the field it names. */
function runtimeVerdict(messages: unknown): string {
  try {
    validateMessages(messages);
    return 'ok';
  } catch (error) {
    if (error instanceof InvalidInputError) return error.field;
    throw error;
  }
}

function optionsVerdict(options: unknown): string {
  try {
    resolveOptions(options);
    return 'ok';
  } catch (error) {
    if (error instanceof InvalidInputError) return error.field;
    throw error;
  }
}

const system = { role: 'system', content: 'You are an agent.' };
const call = { id: 'call_1', type: 'function', function: { name: 'fs_read', arguments: '{"path":"a.ts"}' } };

/** Each one is invalid, and validateMessages names this field. */
const BAD_MESSAGES: Array<{ case: string; message: unknown; field: string }> = [
  { case: 'an unknown role', message: { role: 'robot', content: 'hi' }, field: 'messages[1].role' },
  { case: 'no content', message: { role: 'user' }, field: 'messages[1].content' },
  { case: 'content a number', message: { role: 'user', content: 42 }, field: 'messages[1].content' },
  {
    case: 'a part without a type',
    message: { role: 'user', content: [{ text: 'x' }] },
    field: 'messages[1].content[0].type',
  },
  {
    case: 'a text part without text',
    message: { role: 'user', content: [{ type: 'text' }] },
    field: 'messages[1].content[0].text',
  },
  {
    case: 'a tool result without tool_call_id',
    message: { role: 'tool', content: 'ok' },
    field: 'messages[1].tool_call_id',
  },
  {
    case: 'tool_call_id on a user message',
    message: { role: 'user', content: 'x', tool_call_id: 'c1' },
    field: 'messages[1].tool_call_id',
  },
  {
    case: 'tool_calls on a user message',
    message: { role: 'user', content: 'x', tool_calls: [call] },
    field: 'messages[1].tool_calls',
  },
  { case: 'null content on a user message', message: { role: 'user', content: null }, field: 'messages[1].content' },
  {
    case: 'null content without tool_calls',
    message: { role: 'assistant', content: null },
    field: 'messages[1].content',
  },
  {
    case: 'null content with no tool calls',
    message: { role: 'assistant', content: null, tool_calls: [] },
    field: 'messages[1].content',
  },
  {
    case: 'a tool call of another type',
    message: { role: 'assistant', content: null, tool_calls: [{ ...call, type: 'custom' }] },
    field: 'messages[1].tool_calls[0].type',
  },
  {
    case: 'a tool call without a name',
    message: { role: 'assistant', content: null, tool_calls: [{ ...call, function: { name: '', arguments: '{}' } }] },
    field: 'messages[1].tool_calls[0].function.name',
  },
  { case: 'a negative depth', message: { role: 'user', content: 'x', depth: -1 }, field: 'messages[1].depth' },
  { case: 'sticky as a string', message: { role: 'user', content: 'x', sticky: 'yes' }, field: 'messages[1].sticky' },
  { case: 'a message that is a string', message: 'hello', field: 'messages[1]' },
];

/** Each one is invalid, and resolveOptions names this field. */
const BAD_OPTIONS: Array<{ options: Record<string, unknown>; field: string; jsonSchema: boolean }> = [
  { options: {}, field: 'options.contextBudget', jsonSchema: true },
  { options: { contextBudget: 0 }, field: 'options.contextBudget', jsonSchema: true },
  { options: { contextBudget: 1.5 }, field: 'options.contextBudget', jsonSchema: true },
  { options: { contextBudget: 100, triggerRatio: 0 }, field: 'options.triggerRatio', jsonSchema: true },
  { options: { contextBudget: 100, triggerRatio: 1.2 }, field: 'options.triggerRatio', jsonSchema: true },
  { options: { contextBudget: 100, keepRecent: -1 }, field: 'options.keepRecent', jsonSchema: true },
  { options: { contextBudget: 100, toolResultCap: 0 }, field: 'options.toolResultCap', jsonSchema: true },
  { options: { contextBudget: 100, maxAttempts: 0 }, field: 'options.maxAttempts', jsonSchema: true },
  { options: { contextBudget: 100, maxAttempts: 101 }, field: 'options.maxAttempts', jsonSchema: true },
  { options: { contextBudget: 100, retryBackoff: 'soon' }, field: 'options.retryBackoff', jsonSchema: true },
  { options: { contextBudget: 100, retryBackoff: -5 }, field: 'options.retryBackoff', jsonSchema: true },
  { options: { contextBudget: 100, elisionEpochs: 'always' }, field: 'options.elisionEpochs', jsonSchema: true },
  { options: { contextBudget: 100, elisionEndsPass: 'sometimes' }, field: 'options.elisionEndsPass', jsonSchema: true },
  { options: { contextBudget: 100, ageObservations: 'yes' }, field: 'options.ageObservations', jsonSchema: true },
  { options: { contextBudget: 100, cachedInputPrice: 2 }, field: 'options.cachedInputPrice', jsonSchema: true },
  // A rule across two fields: zod checks it, JSON Schema cannot say it (the schema's description does).
  {
    options: { contextBudget: 100, triggerRatio: 0.4, targetRatio: 0.6 },
    field: 'options.targetRatio',
    jsonSchema: false,
  },
];

describe('JSON Schemas of compactConversation (docs/)', () => {
  it('are written from the schemas the validators use, not from copies of them', () => {
    const [chat, anthropic, aiSdk] = compactConversationInputSchema.shape.messages.options;
    expect(chat.element).toBe(runtimeMessageSchema);
    expect(anthropic.element).toBe(anthropicMessageSchema);
    expect(aiSdk.element).toBe(aiSdkMessageSchema);
    for (const key of [
      'triggerRatio',
      'keepRecent',
      'ageObservations',
      'maxAttempts',
      'elisionEpochs',
      'cachedInputPrice',
    ] as const) {
      expect(compactConversationOptionsSchema.shape[key], key).toBe(optionsSchema.shape[key]);
    }
  });

  it('allow the duration texts parseDuration reads, and no others', () => {
    const pattern = new RegExp(DURATION_PATTERN);
    const texts = [
      '2s',
      '500ms',
      '1.5m',
      '1h',
      '3d',
      ' 2 s ',
      '0ms',
      'soon',
      '2 days',
      '-1s',
      '1.s',
      's',
      '10',
      '2sec',
      '',
    ];
    for (const text of texts) expect(pattern.test(text), JSON.stringify(text)).toBe(durationTextMs(text) !== undefined);
    expect(validateInput({ messages: [system], options: { contextBudget: 1000, retryBackoff: '1d' } })).toBe(true);
    expect(optionsVerdict({ contextBudget: 1000, retryBackoff: '1d' })).toBe('ok');
  });

  it('the committed files are what `npm run docs:schemas` writes', () => {
    for (const { path, text } of jsonSchemaFiles()) {
      let committed: string | null = null;
      try {
        committed = readFileSync(path, 'utf8');
      } catch {
        // missing: reported below
      }
      expect(committed, `${path} is stale or missing: run \`npm run docs:schemas\``).toBe(text);
    }
  });

  it('accepts every conversation of the repository corpus, as validateMessages does', () => {
    for (const { name, messages } of repositoryCorpus()) {
      const input = { messages, options: { contextBudget: 1000 } };
      expect(runtimeVerdict(messages), name).toBe('ok');
      expect(validateInput(input), `${name}: ${ajv.errorsText(validateInput.errors)}`).toBe(true);
      expect(compactConversationInputSchema.safeParse(input).success, name).toBe(true);
    }
  });

  it('accepts the corpus in the Anthropic and AI SDK formats, and each format’s messages only under its own format', () => {
    const convertible = repositoryCorpus().filter(({ messages }) =>
      messages.every(
        (message, index) =>
          message.sticky === undefined && message.depth === undefined && (index === 0 || message.role !== 'system'),
      ),
    );
    expect(convertible.length).toBeGreaterThanOrEqual(4);
    for (const { name, messages } of convertible) {
      const openai = normalizeArguments(messages);
      const { system, messages: anthropic } = toAnthropic(openai);
      const inputs = {
        anthropic: {
          messages: anthropic,
          ...(system === undefined ? {} : { system }),
          options: { contextBudget: 1000, format: 'anthropic' },
        },
        'ai-sdk': { messages: toAiSdk(openai), options: { contextBudget: 1000, format: 'ai-sdk' } },
      };
      for (const [format, input] of Object.entries(inputs)) {
        expect(validateInput(input), `${name} ${format}: ${ajv.errorsText(validateInput.errors)}`).toBe(true);
        expect(compactConversationInputSchema.safeParse(input).success, `${name} ${format}`).toBe(true);
        // Read as OpenAI chat, an AI SDK tool message lacks its tool_call_id, and a system prompt beside the messages is refused.
        // (Anthropic blocks alone pass as OpenAI "other parts": OpenAI chat accepts any part with a string type.)
        if (format === 'anthropic' && system === undefined) continue;
        const asOpenAI = { ...input, options: { contextBudget: 1000 } };
        expect(validateInput(asOpenAI), `${name} ${format} read as openai`).toBe(false);
        expect(compactConversationInputSchema.safeParse(asOpenAI).success).toBe(false);
      }
    }
  });

  it.each(BAD_MESSAGES)('rejects $case, as validateMessages does', ({ message, field }) => {
    const messages = [system, message];
    expect(runtimeVerdict(messages)).toBe(field);
    expect(validateInput({ messages, options: { contextBudget: 1000 } })).toBe(false);
    const parsed = compactConversationInputSchema.safeParse({ messages, options: { contextBudget: 1000 } });
    expect(parsed.success).toBe(false);
    // zod names the same message (and, where it is about a field, the same one).
    const path = `messages[1]${(parsed.error?.issues[0]?.path.slice(2) ?? []).map((key) => (typeof key === 'number' ? `[${key}]` : `.${String(key)}`)).join('')}`;
    expect(field.startsWith(path) || path.startsWith(field)).toBe(true);
  });

  it('has the defaults resolveOptions applies', () => {
    const fromSchema = compactConversationOptionsSchema.parse({ contextBudget: 1000 });
    const { retryBackoffMs, ...resolved } = resolveOptions({ contextBudget: 1000 });
    const {
      retryBackoff,
      target: _target,
      startToCloseTimeout: _a,
      heartbeatTimeout: _b,
      taskQueue: _c,
      summarizerModel: _d,
      maxPayloadBytes: _e,
      payloadStore: _f,
      ...compaction
    } = fromSchema;
    expect(compaction).toEqual(resolved);
    expect(retryBackoff).toBe(retryBackoffMs);
  });

  it.each(BAD_OPTIONS)('rejects options $options, as resolveOptions does', ({ options, field, jsonSchema }) => {
    expect(optionsVerdict(options)).toBe(field);
    expect(compactConversationOptionsSchema.safeParse(options).success).toBe(false);
    expect(validateInput({ messages: [system], options })).toBe(!jsonSchema);
  });

  it('describes the results of the engine: summaries, elisions, the hard trim, nothing to do', async () => {
    const corpus = repositoryCorpus().slice(0, 6);
    const results = [];
    for (const { messages } of corpus) {
      const contextBudget = Math.ceil(defaultCounter.count(messages) / 2);
      results.push(
        await new Compactor({
          contextBudget,
          ageObservations: true,
          ageMinChars: 500,
          ageReclaimMin: 5000,
          summarizer: createExtractiveSummarizer(),
        }).compact(messages),
      );
      results.push(
        await new Compactor({ contextBudget, summarizer: createFakeSummarizer('rejected') }).compact(messages),
      );
    }
    // Three messages under a window of eight: nothing to cut.
    const short = corpus[0]?.messages.slice(0, 3) ?? [];
    results.push(
      await new Compactor({ contextBudget: 100_000, summarizer: createExtractiveSummarizer() }).compact(short),
    );
    expect(results.some((result) => result.summary !== null && result.elisions.length > 0)).toBe(true);
    expect(results.some((result) => result.fallback)).toBe(true);
    expect(results.some((result) => result.cutIndex === -1)).toBe(true);
    for (const result of results) {
      const json: unknown = JSON.parse(JSON.stringify(result));
      expect(validateResult(json), ajv.errorsText(validateResult.errors)).toBe(true);
      expect(compactionResultSchema.safeParse(json).success).toBe(true);
    }
  });
});
