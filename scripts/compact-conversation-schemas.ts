// `compactConversation`'s input and result as zod schemas, written out as JSON Schemas in docs/ for
// callers in other languages (scripts/json-schemas.ts); the package never imports them. Messages and
// compaction options are the validators' own schemas; added here is what those leave to code
// (per-call settings, duration texts, the ratios) and the result.
import { z } from 'zod';
import { optionsSchema } from '../src/core/compaction/options.js';
import { FailureType } from '../src/core/errors.js';
import { chatMessageSchema } from '../src/core/schema.js';
import { anthropicMessageSchema, anthropicSystemSchema } from '../src/core/formats/anthropic-schema.js';
import { aiSdkMessageSchema } from '../src/core/formats/ai-sdk-schema.js';
import { MESSAGE_FORMATS } from '../src/core/formats/format.js';

const count = z.number().int().nonnegative();
/** The texts `parseDuration` reads: a number with ms, s, m, h or d (test/shared/json-schemas.test.ts holds the two together). */
export const DURATION_PATTERN = '^\\s*(\\d+(?:\\.\\d+)?)\\s*(ms|s|m|h|d)\\s*$';
const duration = z.union([z.number().nonnegative(), z.string().regex(new RegExp(DURATION_PATTERN))]);
const positiveDuration = z.union([z.number().positive(), z.string().regex(new RegExp(DURATION_PATTERN))]);
const optionalText = z.string().min(1).optional();

/** The compaction options, the per-call `target` and the summarize activity's settings; unknown fields refused. */
export const compactConversationOptionsSchema = optionsSchema
  .extend({
    contextBudget: optionsSchema.shape.contextBudget.meta({
      description:
        "The window the conversation must fit, in tokens of the character estimator (characters / 4 + 4 per message; an image by its size, by OpenAI's rule).",
    }),
    targetRatio: optionsSchema.shape.targetRatio.meta({ description: 'Not above triggerRatio.' }),
    retryBackoff: duration
      .default(2000)
      .meta({ description: 'Milliseconds, or a duration such as "2s", "500ms", "1m".' }),
    target: z.number().nonnegative().optional().meta({
      description:
        'Aim at this many tokens instead of targetRatio × contextBudget; also the limit `exhausted` is judged by.',
    }),
    startToCloseTimeout: positiveDuration
      .optional()
      .meta({ description: 'Deadline of one summarize attempt. Default "5m".' }),
    heartbeatTimeout: positiveDuration.optional().meta({ description: 'Default "10s".' }),
    taskQueue: optionalText.meta({ description: "Task queue of the summarize activity. Default: the workflow's." }),
    summarizerModel: optionalText.meta({
      description: 'A label for the UI only: the worker decides which model runs.',
    }),
    maxPayloadBytes: z
      .number()
      .int()
      .min(1024)
      .max(Number.MAX_SAFE_INTEGER)
      .optional()
      .meta({ description: 'Default 2,000,000.' }),
    payloadStore: z
      .boolean()
      .optional()
      .meta({ description: 'Whether the worker stores large payloads externally. Default: the worker says.' }),
    format: z
      .enum(MESSAGE_FORMATS)
      .optional()
      .meta({ description: 'The format of messages, and of the result\'s messages. Default "openai".' }),
  })
  .strict()
  .superRefine((options, context) => {
    if (options.targetRatio > options.triggerRatio)
      context.addIssue({
        code: 'custom',
        path: ['targetRatio'],
        message: `must not exceed triggerRatio (${options.triggerRatio})`,
      });
  })
  .meta({ title: 'CompactConversationOptions' });

/** A message schema as the items of `messages` in a condition (zod writes a refinement-free schema out whole). */
function messageItems(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _dialect, ...items } = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input' });
  return items;
}

/** `options.format` is `format`. */
function formatIs(format: string): Record<string, unknown> {
  return {
    properties: { options: { type: 'object', properties: { format: { const: format } }, required: ['format'] } },
    required: ['options'],
  };
}

/** Which messages `messages` holds, by `options.format`, and that `system` goes only with Anthropic. */
const FORMAT_CONDITIONS = [
  {
    if: formatIs('anthropic'),
    then: { properties: { messages: { type: 'array', items: messageItems(anthropicMessageSchema) } } },
    else: { not: { required: ['system'] } },
  },
  {
    if: formatIs('ai-sdk'),
    then: { properties: { messages: { type: 'array', items: messageItems(aiSdkMessageSchema) } } },
  },
  {
    if: { anyOf: [formatIs('anthropic'), formatIs('ai-sdk')] },
    then: true,
    else: { properties: { messages: { type: 'array', items: messageItems(chatMessageSchema) } } },
  },
];

/** The input of `compactConversation`: its one argument. */
export const compactConversationInputSchema = z
  .strictObject({
    messages: z.union([z.array(chatMessageSchema), z.array(anthropicMessageSchema), z.array(aiSdkMessageSchema)]).meta({
      description:
        'OpenAI chat messages; with options.format "anthropic", Anthropic messages; with "ai-sdk", AI SDK messages.',
    }),
    system: anthropicSystemSchema
      .optional()
      .meta({ description: 'Only with options.format "anthropic": the system prompt (sticky, not returned).' }),
    options: compactConversationOptionsSchema,
  })
  .superRefine((input, context) => {
    // The union above accepts a message of any format; the one options.format names is the one that counts.
    const format = input.options.format ?? 'openai';
    const schema =
      format === 'anthropic' ? anthropicMessageSchema : format === 'ai-sdk' ? aiSdkMessageSchema : chatMessageSchema;
    input.messages.forEach((message: unknown, index) => {
      for (const issue of schema.safeParse(message).error?.issues ?? [])
        context.addIssue({ code: 'custom', path: ['messages', index, ...issue.path], message: issue.message });
    });
    if (input.system !== undefined && format !== 'anthropic')
      context.addIssue({ code: 'custom', path: ['system'], message: 'only with options.format "anthropic"' });
  })
  .meta({
    title: 'CompactConversationInput',
    allOf: FORMAT_CONDITIONS,
    description:
      'The one argument of the workflow compactConversation. Not expressible here: options.targetRatio must not exceed options.triggerRatio. ' +
      `Bad input fails the workflow with a non-retryable ApplicationFailure of type ${FailureType.Compaction.InvalidInput} naming the field, e.g. "messages[12].tool_call_id: required for role \\"tool\\"".`,
  });

/** What `compactConversation` returns: a `CompactionResult` (src/core/types.ts). */
export const compactionResultSchema = z
  .object({
    messages: z.union([z.array(chatMessageSchema), z.array(anthropicMessageSchema), z.array(aiSdkMessageSchema)]).meta({
      description:
        "The compacted conversation, in the input's format: the input's own messages, stubs and at most one summary message.",
    }),
    dropped: count.meta({ description: 'Messages removed (replaced by the summary or trimmed).' }),
    tokensBefore: count,
    tokensAfter: count,
    fallback: z.boolean().meta({ description: 'True exactly when the messages came from the hard trim.' }),
    fallbackReason: z
      .object({
        cause: z.enum([
          'summarizer-failed',
          'empty-summary',
          'summary-too-long',
          'over-summarizer-window',
          'cancelled',
        ]),
        message: z.string().meta({
          description:
            "In words; for summarizer-failed, the summarizer's error (its endpoint named, credentials redacted).",
        }),
      })
      .optional()
      .meta({ description: 'Present exactly when fallback is true: why the summary was not used.' }),
    exhausted: z.boolean().meta({ description: 'True when the result is still over contextBudget (or target).' }),
    elisions: z.array(
      z.object({
        index: count.meta({ description: 'Position in the input.' }),
        block: count
          .optional()
          .meta({ description: 'Anthropic, AI SDK: the position of the tool result part in that message.' }),
        stub: z.string().meta({
          description:
            'The whole new content of that message (Anthropic: of that block); for an image elision, the text of its stubs.',
        }),
        content: z
          .array(z.object({ type: z.string() }).loose())
          .optional()
          .meta({
            description:
              'Only for a message whose content is parts: the whole new content (an image elision: each elided image replaced by a text part holding its stub; a truncation: its longest text part cut).',
          }),
      }),
    ),
    summary: z.string().nullable().meta({ description: 'The whole content of the summary message, or null.' }),
    cutIndex: z
      .number()
      .int()
      .min(-1)
      .meta({ description: 'Input index of the last message replaced or dropped; -1 when none was.' }),
    truncations: z
      .array(
        z.object({
          index: count.meta({ description: 'Position in the input (its elision holds the new content).' }),
          chars: count.meta({ description: 'Characters of the text that was cut.' }),
          kept: count.meta({ description: 'Characters of it kept, head and tail.' }),
        }),
      )
      .optional()
      .meta({ description: 'Only when messages were cut middle-out to fit (truncateOversized).' }),
    aboveMark: z
      .object({ mark: z.number().nonnegative(), reason: z.enum(['recent-window', 'summary-length']) })
      .optional()
      .meta({ description: 'Only when a summary left the conversation over its low-water mark: the mark, and why.' }),
    coverage: z
      .object({
        required: count.meta({ description: 'Identifiers of the replaced middle that the kept messages use too.' }),
        kept: count.meta({
          description: 'Of those, how many the summary message holds (its carried-facts line included).',
        }),
        carried: count.meta({ description: 'Of those, how many only the carried-facts line holds.' }),
        missing: z.array(z.string()).meta({ description: 'The required identifiers the summary does not hold.' }),
      })
      .optional()
      .meta({
        description:
          'Only when a summary was kept and summaryCoverage is on: what it kept of the identifiers it had to keep.',
      }),
    summaryPieces: z.number().int().min(2).optional().meta({
      description:
        'Only when a summary was kept and the middle did not fit summarizerContextWindow: how many pieces it was summarized in.',
    }),
    trimMarker: z.string().optional().meta({
      description:
        'Only for a hard trim in an agent run with compaction.recall: the content of the message standing where the dropped messages stood, naming their transcript ids.',
    }),
    userMessages: z
      .object({
        kept: count.meta({ description: "Of the middle's user messages, how many were kept verbatim, in place." }),
        summarized: count.meta({ description: 'How many were summarized (or dropped by the hard trim).' }),
        keptAt: z.array(count).meta({ description: 'Input positions of the kept ones, ascending.' }),
      })
      .optional()
      .meta({ description: 'Only with keepUserMessages, when messages were replaced or dropped.' }),
  })
  .meta({ title: 'CompactionResult', description: 'The result of the workflow compactConversation.' });

/** The JSON Schemas committed under docs/ (file name → schema), as `scripts/json-schemas.ts` writes them. */
export function compactConversationJsonSchemas(): Record<string, unknown> {
  return {
    'compact-conversation.input.schema.json': z.toJSONSchema(compactConversationInputSchema, {
      target: 'draft-2020-12',
      io: 'input',
    }),
    'compact-conversation.result.schema.json': z.toJSONSchema(compactionResultSchema, {
      target: 'draft-2020-12',
      io: 'output',
    }),
  };
}
