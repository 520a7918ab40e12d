// Dev-only (tests and benchmarks; src/ never imports corpus/): a deterministic fake summarizer
// whose text is derived from the request's length, so the in-process driver, the workflow driver
// and the benchmarks can be compared byte for byte without a model.
import { baseInstruction, summarizerMessages } from '../src/core/compaction/transcript.js';
import type { ChatMessage, CompactionResult, SummarizeRequest, Summarizer } from '../src/index.js';
import type { CompactionSteps, SummarizeOutcome, SummarizeStep } from '../src/core/compaction/engine.js';
import { describeNonTextPart } from '../src/core/counting/parts.js';

/** Plain text of content as the transcript shows it: text parts joined, other parts described (`[image: 1280×800 png]`, `[audio: wav, 48,000 bytes]`). */
export function renderedText(content: ChatMessage['content']): string {
  if (content === null) return '';
  if (typeof content === 'string') return content;
  return content
    .map((part) => (part.type === 'text' && typeof part.text === 'string' ? part.text : describeNonTextPart(part)))
    .join('');
}

/**
 * `ok`: a short four-section summary; `tooLong`: more characters and more words than the request;
 * `dense`: even more characters but only two words (cheap for a word-counting tokenizer, so the
 * retry's "shorter than the first attempt" rule is what rejects it); `empty`: blank text.
 */
export type SummarizerBehaviour = 'ok' | 'tooLong' | 'dense' | 'empty' | 'failing' | 'rejected';
export const SUMMARIZER_BEHAVIOURS: readonly SummarizerBehaviour[] = [
  'ok',
  'tooLong',
  'dense',
  'empty',
  'failing',
  'rejected',
];

/** Behaviour per request purpose; a single behaviour applies to both. */
export type SummarizerPlan = SummarizerBehaviour | { summary: SummarizerBehaviour; tighter: SummarizerBehaviour };

export function requestChars(request: SummarizeRequest): number {
  return summarizerMessages(request).reduce((sum, message) => sum + renderedText(message.content).length, 0);
}

/** Which request this is: the first (`summary`) or the one retry after a summary that was too long (`tighter`). */
export function purposeOf(request: SummarizeRequest): 'summary' | 'tighter' | 'coverage' {
  const instruction = request.instruction;
  // The first request's instruction is the fixed one, with the task a compaction keeps in place (docs/design.md#task-survives).
  if (instruction === baseInstruction({ task: request.task })) return 'summary';
  // docs/design.md#coverage: the retry after a summary that left identifiers out (not one that was too long).
  return typeof instruction === 'string' && !instruction.includes('Your last attempt was too long')
    ? 'coverage'
    : 'tighter';
}

/** A plan's behaviour for a request: a coverage retry behaves as the plan's retry. */
function behaviourFor(plan: SummarizerPlan, request: SummarizeRequest): SummarizerBehaviour {
  if (typeof plan === 'string') return plan;
  const purpose = purposeOf(request);
  return plan[purpose === 'coverage' ? 'tighter' : purpose];
}

/** The text a fake summarizer answers for a request (only for the behaviours that answer). */
export function fakeSummaryText(request: SummarizeRequest, behaviour: 'ok' | 'tooLong' | 'dense' | 'empty'): string {
  const chars = requestChars(request);
  if (behaviour === 'empty') return ' \n ';
  if (behaviour === 'dense') return `## ${'x'.repeat(chars * 3 + 200)}`;
  if (behaviour === 'tooLong')
    return `## Goals\n${'The agent read, ran and changed many things. '.repeat(Math.ceil(chars / 22) + 4)}`;
  return [
    '## Goals',
    `Continue the task (summary of a ${chars}-char request).`,
    '## Decisions',
    'None recorded.',
    '## Files and commands',
    'src/app.ts; npm test',
    '## Unresolved',
    'Nothing.',
  ].join('\n');
}

/** An error shaped like openai's APIError (numeric `status`). */
export function statusError(status: number): Error {
  return Object.assign(new Error(`HTTP ${status} from the fake summarizer`), { status });
}

export interface FakeSummarizer extends Summarizer {
  /** Every request received, in order (retries included). */
  requests: SummarizeRequest[];
  /** Every text answered, in order. */
  texts: string[];
}

/**
 * A deterministic summarizer for the async `Compactor`: `failing` throws a 503 (retried),
 * `rejected` a 401 (the abort bucket), `empty` answers blank text (retried by the driver).
 */
export function createFakeSummarizer(plan: SummarizerPlan = 'ok'): FakeSummarizer {
  const requests: SummarizeRequest[] = [];
  const texts: string[] = [];
  return {
    requests,
    texts,
    summarize(request) {
      requests.push(request);
      const behaviour = behaviourFor(plan, request);
      if (behaviour === 'failing') return Promise.reject(statusError(503));
      if (behaviour === 'rejected') return Promise.reject(statusError(401));
      const text = fakeSummaryText(request, behaviour);
      texts.push(text);
      return Promise.resolve({ text });
    },
  };
}

/** A synchronous driver's answer to one step: what the `Compactor` would conclude from `createFakeSummarizer(plan)`. */
export function fakeOutcome(step: SummarizeStep, plan: SummarizerPlan | 'cancelled'): SummarizeOutcome {
  if (plan === 'cancelled') return { kind: 'cancelled' };
  const behaviour = behaviourFor(plan, step.request);
  if (behaviour === 'failing')
    return { kind: 'failed', reason: 'exhausted', message: 'HTTP 503 from the fake summarizer' };
  if (behaviour === 'rejected')
    return { kind: 'failed', reason: 'rejected', message: 'HTTP 401 from the fake summarizer' };
  return { kind: 'summary', text: fakeSummaryText(step.request, behaviour) };
}

/** Runs the engine's step machine with a synchronous answer per step. */
export function runCompactionSteps(
  steps: CompactionSteps,
  answer: (step: SummarizeStep) => SummarizeOutcome,
): CompactionResult {
  let next = steps.next();
  while (next.done !== true) next = steps.next(answer(next.value));
  return next.value;
}
