// Sandbox-safe: zod schemas of the standalone workflow `compactConversation`'s input and result,
// the source of the JSON Schemas in docs/ (scripts/json-schemas.ts writes them) for callers in
// other languages.
//
// What validates the input at run time is `validateMessages` (src/core/schema.ts: zod for each
// field, plus rules across fields in code) and `resolveOptions` (src/core/compaction/options.ts) with the
// activity settings checked by the workflow driver; the result is a TypeScript interface
// (`CompactionResult`) with no validator at all. So these schemas restate those rules, field for
// field, with the cross-field rules both as zod refinements and as JSON Schema conditionals;
// test/schemas.test.ts holds them to the validators (the same inputs accepted and rejected, the
// same defaults) and to real results.
import { z } from 'zod';
import { FailureType } from './core/errors.js';

const ROLES = ['system', 'developer', 'user', 'assistant', 'tool'] as const;

const textPart = z.looseObject({ type: z.literal('text'), text: z.string() });
// The JSON Schema says "any type but text" on the field; zod checks the same on the part, naming the missing text.
const otherPart = z
  .looseObject({ type: z.string().meta({ not: { const: 'text' } }) })
  .refine((part) => part.type !== 'text', { path: ['text'], message: 'must be a string for a "text" part' });

const toolCall = z.looseObject({
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.looseObject({ name: z.string().min(1), arguments: z.string().meta({ description: 'The arguments as the model wrote them: a JSON text, kept verbatim.' }) }),
});

/** The rules across fields of one message, as `validateMessages` applies them, in JSON Schema. */
const MESSAGE_CONDITIONS = [
  {
    if: { properties: { role: { const: 'tool' } }, required: ['role'] },
    then: { required: ['tool_call_id'] },
    else: { not: { required: ['tool_call_id'] } },
  },
  { if: { properties: { role: { not: { const: 'assistant' } } }, required: ['role'] }, then: { not: { required: ['tool_calls'] } } },
  {
    if: { properties: { content: { type: 'null' } }, required: ['content'] },
    then: { properties: { role: { const: 'assistant' }, tool_calls: { type: 'array', minItems: 1 } }, required: ['tool_calls'] },
  },
];

/**
 * One chat message: an OpenAI chat-completions message plus the harness flags `sticky` and
 * `depth`. Unknown fields are allowed and come back verbatim.
 */
export const chatMessageSchema = z
  .looseObject({
    role: z.enum(ROLES),
    content: z.union([z.string(), z.null(), z.array(z.union([textPart, otherPart]))]).meta({
      description: 'A string, an array of content parts, or null (only for an assistant message with tool_calls).',
    }),
    tool_calls: z.array(toolCall).optional().meta({ description: 'Only on assistant messages.' }),
    tool_call_id: z.string().min(1).optional().meta({ description: 'Required on tool messages, not allowed on others.' }),
    name: z.string().optional(),
    sticky: z.boolean().optional().meta({ description: 'Keep this message where it is through every compaction.' }),
    depth: z.number().int().nonnegative().optional().meta({ description: 'An injection at a fixed depth (sticky too).' }),
  })
  .superRefine((message, context) => {
    if (message.role === 'tool' && message.tool_call_id === undefined) context.addIssue({ code: 'custom', path: ['tool_call_id'], message: 'required for role "tool"' });
    if (message.role !== 'tool' && message.tool_call_id !== undefined) context.addIssue({ code: 'custom', path: ['tool_call_id'], message: `only allowed for role "tool"` });
    if (message.role !== 'assistant' && message.tool_calls !== undefined) context.addIssue({ code: 'custom', path: ['tool_calls'], message: 'only allowed for role "assistant"' });
    if (message.content === null && (message.role !== 'assistant' || message.tool_calls === undefined || message.tool_calls.length === 0)) {
      context.addIssue({ code: 'custom', path: ['content'], message: 'null only for an assistant message with tool_calls' });
    }
  })
  .meta({ title: 'ChatMessage', allOf: MESSAGE_CONDITIONS });

const ratio = z.number().gt(0).lte(1);
const count = z.number().int().nonnegative();
/** `parseDuration`'s syntax: milliseconds, or a number with ms, s, m or h. */
const DURATION_PATTERN = '^\\s*(\\d+(?:\\.\\d+)?)\\s*(ms|s|m|h)\\s*$';
const duration = z.union([z.number().nonnegative(), z.string().regex(new RegExp(DURATION_PATTERN))]);
const positiveDuration = z.union([z.number().positive(), z.string().regex(new RegExp(DURATION_PATTERN))]);

/**
 * `compactConversation`'s options: the compaction options (src/core/compaction/options.ts, with their
 * defaults), the per-call `target`, and the summarize activity's settings. Unknown fields are
 * refused, naming the closest known one (a counter cannot travel as JSON: the character estimator counts).
 */
export const compactConversationOptionsSchema = z
  .strictObject({
    contextBudget: z.number().int().positive().meta({ description: 'The window the conversation must fit, in tokens of the character estimator (characters / 4 + 4 per message).' }),
    triggerRatio: ratio.default(0.8),
    targetRatio: ratio.default(0.5).meta({ description: 'Not above triggerRatio.' }),
    keepRecent: count.default(8),
    toolResultCap: z.number().int().positive().default(2000),
    ageObservations: z.boolean().default(false),
    ageMinChars: count.default(2000),
    ageReclaimMin: count.default(40_000),
    maxAttempts: z.number().int().min(1).max(100).default(3),
    retryBackoff: duration.default(2000).meta({ description: 'Milliseconds, or a duration such as "2s", "500ms", "1m".' }),
    recentWindowGivesWay: z.boolean().default(true),
    elisionEndsPass: z.enum(['under-trigger', 'at-mark', 'never']).default('never'),
    elisionEpochs: z.enum(['batch', 'paying', 'never']).default('paying'),
    deferShallowCompactions: z.boolean().default(true),
    stubsShorterOnly: z.boolean().default(true),
    trimBeatsOverflow: z.boolean().default(true),
    cachedInputPrice: ratio.default(0.1),
    target: z.number().nonnegative().optional().meta({ description: 'Aim at this many tokens instead of targetRatio × contextBudget; also the limit `exhausted` is judged by.' }),
    startToCloseTimeout: positiveDuration.optional().meta({ description: 'Deadline of one summarize attempt. Default "5m".' }),
    heartbeatTimeout: positiveDuration.optional().meta({ description: 'Default "10s".' }),
    taskQueue: z.string().min(1).optional().meta({ description: 'Task queue of the summarize activity. Default: the workflow\'s.' }),
    summarizerModel: z.string().min(1).optional().meta({ description: 'A label for the UI only: the worker decides which model runs.' }),
    maxPayloadBytes: z.number().int().min(1024).max(Number.MAX_SAFE_INTEGER).optional().meta({ description: 'Default 2,000,000.' }),
    payloadStore: z.boolean().optional().meta({ description: 'Whether the worker stores large payloads externally. Default: the worker says.' }),
  })
  .superRefine((options, context) => {
    if (options.targetRatio > options.triggerRatio) context.addIssue({ code: 'custom', path: ['targetRatio'], message: `must not exceed triggerRatio (${options.triggerRatio})` });
  })
  .meta({ title: 'CompactConversationOptions' });

/** The input of `compactConversation`: its one argument. */
export const compactConversationInputSchema = z
  .strictObject({
    messages: z.array(chatMessageSchema),
    options: compactConversationOptionsSchema,
  })
  .meta({
    title: 'CompactConversationInput',
    description:
      'The one argument of the workflow compactConversation. Not expressible here: options.targetRatio must not exceed options.triggerRatio. ' +
      `Bad input fails the workflow with a non-retryable ApplicationFailure of type ${FailureType.InvalidInput} naming the field, e.g. "messages[12].tool_call_id: required for role \\"tool\\"".`,
  });

/** What `compactConversation` returns: a `CompactionResult` (src/core/types.ts). */
export const compactionResultSchema = z
  .object({
    messages: z.array(chatMessageSchema).meta({ description: 'The compacted conversation: the input\'s own messages, stubs and at most one summary message.' }),
    dropped: count.meta({ description: 'Messages removed (replaced by the summary or trimmed).' }),
    tokensBefore: count,
    tokensAfter: count,
    fallback: z.boolean().meta({ description: 'True exactly when the messages came from the hard trim.' }),
    exhausted: z.boolean().meta({ description: 'True when the result is still over contextBudget (or target).' }),
    elisions: z.array(z.object({ index: count.meta({ description: 'Position in the input.' }), stub: z.string().meta({ description: 'The whole new content of that message.' }) })),
    summary: z.string().nullable().meta({ description: 'The whole content of the summary message, or null.' }),
    cutIndex: z.number().int().min(-1).meta({ description: 'Input index of the last message replaced or dropped; -1 when none was.' }),
    aboveMark: z
      .object({ mark: z.number().nonnegative(), reason: z.enum(['recent-window', 'summary-length']) })
      .optional()
      .meta({ description: 'Only when a summary left the conversation over its low-water mark: the mark, and why.' }),
  })
  .meta({ title: 'CompactionResult', description: 'The result of the workflow compactConversation.' });

/** The JSON Schemas committed under docs/ (file name → schema), as `scripts/json-schemas.ts` writes them. */
export function compactConversationJsonSchemas(): Record<string, unknown> {
  return {
    'compact-conversation.input.schema.json': z.toJSONSchema(compactConversationInputSchema, { target: 'draft-2020-12', io: 'input' }),
    'compact-conversation.result.schema.json': z.toJSONSchema(compactionResultSchema, { target: 'draft-2020-12', io: 'output' }),
  };
}
