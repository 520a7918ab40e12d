// Sandbox-safe: the one engine both drivers run (docs/design.md#drivers); it asks its driver only for
// summaries, by yielding a `SummarizeStep`, so `Compactor` and the workflow `compact` cannot drift apart.
import {
  coverageRetryText,
  KEEP_IDENTIFIERS_PREFIX,
  MAX_CARRIED_IDENTIFIERS,
  MAX_REQUIRED_IDENTIFIERS,
} from './coverage.js';
import { Assembly, summarizedMiddle } from './assembly.js';
import type { CallOverrides, ResolvedOptions } from './options.js';
import { elide, elisionEnds, finish, startPass, unchanged, type NameReplaced, type Pass } from './pass.js';
import { newCalibration, type SummarizerCalibration } from './calibration.js';
import { failureOf, Fold, foldPieces, type SummarizeOutcome, type SummarizeStep, type SummaryInput } from './fold.js';
import { baseInstruction, tooLongInstruction, type InstructionText } from './transcript.js';
import { truncateToFit } from './truncation.js';
import type { CompactionResult, FallbackReason, TokenCounter } from '../types.js';

export type { SummarizeOutcome, SummarizeStep } from './fold.js';

export type CompactionSteps = Generator<SummarizeStep, CompactionResult, SummarizeOutcome>;

/** What a driver adds to a pass. */
export interface CompactionHooks {
  /** docs/design.md#recall The text a stub, a summary or a trim marker ends with to name what it replaced. */
  nameReplaced?: NameReplaced;
  /** docs/design.md#summarizer-overflow What the driver's summarizer taught, kept across its passes. @default a new one */
  calibration?: SummarizerCalibration;
}

/**
 * One compaction as a step machine (docs/design.md#pass): throws `InvalidInputError` before its first step
 * on bad input; yields at most two summarize steps besides one per extra piece; always returns a result.
 */
export function* compactionSteps(
  messages: unknown,
  options: ResolvedOptions,
  overrides: CallOverrides = {},
  counter?: TokenCounter,
  hooks: CompactionHooks = {},
): CompactionSteps {
  const pass = startPass(messages, options, overrides, counter);
  const result = yield* passSteps(pass, hooks);
  // docs/design.md#truncation The last resort, only for a conversation that did not fit and still does not:
  // a result over its limit from one that fitted is a counter's artefact, not an oversized message.
  const oversized = result.exhausted && pass.tokensBefore > pass.aim.limit;
  if (!oversized || !options.truncateOversized) return result;
  return truncateToFit(pass, result);
}

function* passSteps(pass: Pass, hooks: CompactionHooks): CompactionSteps {
  const { options, aim } = pass;
  // docs/design.md#over-trigger Elide first; stop when that was enough (docs/design.md#epochs).
  const stubbed = elide(pass, hooks.nameReplaced);
  if (elisionEnds(pass, stubbed))
    return finish(pass, { ...unchanged(), messages: stubbed.messages(), elisions: stubbed.elisions });

  const middle = summarizedMiddle(pass, stubbed);
  // docs/design.md#no-op
  if (middle.planned.middle.length === 0) return finish(pass, { ...unchanged(), messages: [...pass.input] });
  const assembly = new Assembly(pass, middle, hooks.nameReplaced);

  // docs/design.md#summary-length
  const summaryRoom = options.summaryTokenCap ? aim.limit - aim.counter.count(assembly.assembledOf('')) : 0;
  const fold = new Fold(pass, middle.seen, hooks.calibration ?? newCalibration(), summaryRoom);
  // docs/design.md#summarizer-overflow A request refused for its size or past its deadline is cut again smaller.
  for (;;) {
    const input = yield* foldPieces(fold);
    if ('cause' in input) return assembly.trimmed(input);
    const built = firstSummaryStep(pass, assembly, input, fold);
    const first = yield built;
    if (first.kind === 'overflow' || first.kind === 'failed') {
      if (fold.recut(built.request, first, fold.rest)) continue;
      return assembly.trimmed(fold.endOf(first, 'summary request'));
    }
    fold.billed(built.request, first);
    return yield* summaryAndRetry(assembly, input, first, fold);
  }
}

const TOO_LONG: FallbackReason = {
  cause: 'summary-too-long',
  message: 'the summary and its tighter retry did not make the conversation smaller and fit its target',
};

/** The summary, then at most one retry: for identifiers it left out (docs/design.md#coverage) or a failed proof (docs/design.md#proof). */
function* summaryAndRetry(
  assembly: Assembly,
  input: SummaryInput,
  first: SummarizeOutcome,
  fold: Fold,
): CompactionSteps {
  const { text, options } = fold.pass;
  const firstFailure = failureOf(first, 'summary request');
  if (firstFailure !== undefined || first.kind !== 'summary') return assembly.trimmed(firstFailure ?? TOO_LONG);
  const firstText = first.text.trim();
  const retryNames = options.summaryCoverage === 'retry' ? assembly.missing(firstText) : [];

  if (assembly.accepts(assembly.assembledOf(firstText))) {
    if (retryNames.length === 0) return withPieces(assembly.accepted(firstText) ?? assembly.trimmed(TOO_LONG), input);
    // Taken only when it keeps more.
    const instruction = `${baseInstruction(text)}\n\n${coverageRetryText(retryNames, firstText.length)}`;
    const retried = yield* retry(
      fold,
      fold.summaryStep(input, 'coverage', instruction, withIdentifiers(text, retryNames)),
    );
    if (retried.kind === 'summary' && retried.text.trim() !== '') {
      const retryText = retried.text.trim();
      const better = assembly.missing(retryText).length < retryNames.length ? assembly.accepted(retryText) : undefined;
      if (better !== undefined) return withPieces(better, input);
    }
    return withPieces(assembly.accepted(firstText) ?? assembly.trimmed(TOO_LONG), input);
  }

  // The proof failed: one tighter request, accepted only if it fits and is shorter.
  const tighter = tooLongInstruction(firstText.length, text);
  const named = retryNames.length > 0;
  const retryText = named ? `${tighter}\n${coverageRetryText(retryNames)}` : tighter;
  const retryCall = named ? withIdentifiers(text, retryNames) : text;
  const second = yield* retry(fold, fold.summaryStep(input, 'tighter', retryText, retryCall));
  const secondFailure = failureOf(second, 'tighter retry');
  if (secondFailure !== undefined || second.kind !== 'summary') return assembly.trimmed(secondFailure ?? TOO_LONG);
  const secondText = second.text.trim();
  if (secondText.length < firstText.length)
    return withPieces(assembly.accepted(secondText) ?? assembly.trimmed(TOO_LONG), input);
  return assembly.trimmed(TOO_LONG);
}

/** docs/design.md#coverage The first request names the identifiers the check requires, unless a last piece would not fit with them. */
function firstSummaryStep(pass: Pass, assembly: Assembly, input: SummaryInput, fold: Fold): SummarizeStep {
  const instruction = baseInstruction(pass.text);
  const required = pass.options.summaryCoverage === 'retry' ? assembly.required() : [];
  if (required.length > 0) {
    const namedText = withIdentifiers(pass.text, required, MAX_REQUIRED_IDENTIFIERS);
    const named = fold.summaryStep(input, 'summary', instruction, namedText);
    if (input.piece === undefined || fold.fits(named.request)) return named;
  }
  return fold.summaryStep(input, 'summary', instruction, pass.text);
}

function withPieces(result: CompactionResult, input: SummaryInput): CompactionResult {
  const pieces = input.piece?.of;
  return pieces === undefined || result.fallback ? result : { ...result, summaryPieces: pieces };
}

/** The call's instructions with the first `most` identifiers a summary must keep. */
function withIdentifiers(
  text: InstructionText,
  missing: readonly string[],
  most = MAX_CARRIED_IDENTIFIERS,
): InstructionText {
  const named = missing.slice(0, most).map((id) => `\`${id}\``);
  const keep = `${KEEP_IDENTIFIERS_PREFIX} ${named.join(', ')}`;
  return {
    ...text,
    summaryInstructions: text.summaryInstructions === undefined ? keep : `${text.summaryInstructions}\n${keep}`,
  };
}

/** A request that does not fit the summarizer's window is not sent: it fails as the provider would refuse it. */
const overSummarizerWindow: SummarizeOutcome = {
  kind: 'failed',
  reason: 'rejected',
  message: 'over the summarizer window',
};

/**
 * A retry, sent only when its longer instruction fits the summarizer's window. At module level: a closure per pass
 * would keep the pass alive until a full GC.
 */
function* retry(fold: Fold, step: SummarizeStep): Generator<SummarizeStep, SummarizeOutcome, SummarizeOutcome> {
  return fold.fits(step.request) ? yield step : overSummarizerWindow;
}
