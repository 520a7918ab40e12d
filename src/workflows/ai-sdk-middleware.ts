// Sandbox-safe: compaction as an AI SDK language-model middleware (docs/compaction.md#ai-sdk-middleware):
// in a workflow with `compact()`, outside Temporal in process with the summarizer it is given. Typed
// structurally, so the package needs neither `ai` nor `@ai-sdk/provider`.
import { inWorkflowContext } from '@temporalio/workflow';
import { Compactor } from '../compactor.js';
import { sha256Hex } from '../core/counting/digest.js';
import { InvalidInputError } from '../core/errors.js';
import type { AiSdkMessage } from '../core/formats/ai-sdk-schema.js';
import { isRecord } from '../core/schema.js';
import type { Summarizer } from '../core/types.js';
import { assertKnownKeys, keysOf } from '../core/unknown-keys.js';
import { compact, needsCompaction } from './compact.js';
import { COMPACT_OPTION_KEYS, type CompactOptions } from './compact-options.js';

/** The digest a remembered prompt prefix is matched by: both sides must be computed alike. */
function digestOf(messages: readonly unknown[]): string {
  return sha256Hex(JSON.stringify(messages));
}

/** Options of {@link compactionMiddleware}: `compact()`'s options, and the summarizer for use outside a workflow. */
export interface CompactionMiddlewareOptions extends CompactOptions {
  /** The summarizer when the middleware runs outside a workflow (in a workflow, the worker's `summarize` activity runs it). */
  summarizer?: Summarizer;
}

/** The part of the AI SDK's call options the middleware reads and writes: the prompt. */
export interface PromptCallOptions {
  prompt: readonly unknown[];
}

/** An AI SDK language-model middleware (`LanguageModelV4Middleware`) that compacts the prompt. */
export interface CompactionMiddleware {
  readonly specificationVersion: 'v4';
  transformParams<Params extends PromptCallOptions>(options: {
    type: 'generate' | 'stream';
    params: Params;
    model: unknown;
  }): Promise<Params>;
}

const MIDDLEWARE_OPTION_KEYS: readonly string[] = [
  ...COMPACT_OPTION_KEYS,
  ...keysOf<Omit<CompactionMiddlewareOptions, keyof CompactOptions>>({ summarizer: true }),
];

/**
 * The compacted prompt as a provider-level prompt (`LanguageModelV4Prompt`), which wants every user and assistant
 * message's content as parts: the summary the engine adds is a string, so it becomes one text part.
 */
function asProviderPrompt(before: readonly unknown[], after: readonly unknown[]): readonly unknown[] {
  if (after === before) return before;
  return after.map((message) => {
    if (!isRecord(message)) return message;
    const { role, content } = message;
    if ((role !== 'user' && role !== 'assistant') || typeof content !== 'string') return message;
    return { ...message, content: [{ type: 'text', text: content }] };
  });
}

/** How many compactions a middleware remembers (the latest; a `generateText` loop needs only its last). */
const REMEMBERED_COMPACTIONS = 4;

/**
 * The middleware. Before each call it puts back what it compacted before (a `generateText` loop sends the whole
 * conversation again at every step, so the summary is not asked for again), then compacts when `needsCompaction` says
 * so. In a workflow the memory is workflow state, rebuilt the same on replay; a summary is one `summarize` activity.
 *
 * @example
 * const model = wrapLanguageModel({
 *   model: temporalProvider.languageModel('gpt-4o-mini'),
 *   middleware: compactionMiddleware({ contextBudget: 128_000 }),
 * });
 */
export function compactionMiddleware(options: CompactionMiddlewareOptions): CompactionMiddleware {
  if (!isRecord(options)) throw new InvalidInputError('options', 'must be an object with at least contextBudget');
  assertKnownKeys(options, MIDDLEWARE_OPTION_KEYS, 'options');
  const { summarizer, ...compactOptions } = options;
  // The prompt prefixes compacted before, by length and digest, and what each became.
  const remembered: Array<{ length: number; digest: string; replacement: readonly unknown[] }> = [];
  let inProcess: Compactor | undefined;

  const withRemembered = (prompt: readonly unknown[]): readonly unknown[] => {
    for (let index = remembered.length - 1; index >= 0; index -= 1) {
      const memory = remembered[index];
      if (memory === undefined || memory.length > prompt.length) continue;
      if (digestOf(prompt.slice(0, memory.length)) === memory.digest)
        return [...memory.replacement, ...prompt.slice(memory.length)];
    }
    return prompt;
  };

  const compactPrompt = async (prompt: readonly unknown[]): Promise<readonly unknown[]> => {
    const messages = prompt as readonly AiSdkMessage[];
    if (inWorkflowContext()) {
      if (!needsCompaction(messages, { ...compactOptions, format: 'ai-sdk' })) return prompt;
      return (await compact(messages, { ...compactOptions, format: 'ai-sdk' })).messages;
    }
    if (summarizer === undefined)
      throw new InvalidInputError(
        'options.summarizer',
        'is required outside a workflow (in a workflow, the worker summarizes)',
      );
    const { target, ...constructorOptions } = compactOptions;
    inProcess ??= new Compactor({ ...constructorOptions, summarizer });
    if (!inProcess.needsCompaction(messages, { format: 'ai-sdk' })) return prompt;
    return (await inProcess.compact(messages, { format: 'ai-sdk', target })).messages;
  };

  return {
    specificationVersion: 'v4',
    async transformParams({ params }) {
      const original = params.prompt;
      const prompt = withRemembered(original);
      const compacted = asProviderPrompt(prompt, await compactPrompt(prompt));
      if (compacted === prompt) return prompt === original ? params : { ...params, prompt };
      remembered.push({ length: original.length, digest: digestOf(original), replacement: compacted });
      // A loop's later prompts extend its latest compaction: older ones are not needed again.
      if (remembered.length > REMEMBERED_COMPACTIONS) remembered.shift();
      return { ...params, prompt: compacted };
    },
  };
}
