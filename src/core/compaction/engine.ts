// Sandbox-safe: the one compaction engine both drivers run (docs/design.md#drivers).
//
// The engine is a generator: it decides everything and *asks* its driver for the one thing it
// cannot do itself — a summary — by yielding a `SummarizeStep`. The in-process `Compactor`
// answers with a direct call (retrying per docs/design.md#failures), the workflow `compact` with an activity under
// Temporal's retry policy. Neither driver decides anything, so the two cannot drift apart.
import { coverageRetryText, MAX_CARRIED_IDENTIFIERS } from './coverage.js';
import { Assembly } from './assembly.js';
import { planWindow } from './economics.js';
import { elidedContents } from './elision.js';
import type { CallOverrides, ResolvedOptions } from './options.js';
import { elide, elisionEnds, finish, messagesAt, startPass, unchanged, type NameReplaced, type Pass } from './pass.js';
import { cutPieces, foldedMiddle, foldInstruction, requestFits } from './pieces.js';
import { capMiddle, requestChars, requestFor, summaryInstruction, type InstructionText } from './transcript.js';
import { truncateToFit } from './truncation.js';
import type { ChatMessage, CompactionResult, FallbackReason, SummarizeRequest, TokenCounter, Usage } from '../types.js';

/** What the engine asks its driver to do. */
export interface SummarizeStep {
  kind: 'summarize';
  /**
   * `summary` for the first request, `tighter` for the one retry after a summary that was too
   * long, `coverage` for the one retry after a summary that left out identifiers it had to keep
   * (docs/design.md#coverage). Never more than one retry. `piece` for each request but the last of a
   * middle summarized in pieces (docs/design.md#summarizer-window): the summary so far and the next piece;
   * the last one's requests are `summary` and its retry.
   */
  purpose: 'summary' | 'tighter' | 'coverage' | 'piece';
  /** Only for a middle summarized in pieces: which piece this request folds in (1-based), of how many. */
  piece?: { index: number; of: number };
  /** What the summarizer is sent: in a workflow, the `summarize` activity's input as it is (docs/design.md#summarizer-request). */
  request: SummarizeRequest;
  /** For UI metadata: how many messages the transcript holds and its length in characters. */
  transcript: { messages: number; characters: number };
}

/**
 * How the driver's attempt ended. `failed` means every attempt the driver was allowed failed
 * (or the first one was rejected); the engine falls back to the hard trim either way.
 */
export type SummarizeOutcome =
  /** `pieces`: how many requests the driver folded the summary in when it had to (a worker's summarizer window); absent: one. */
  | { kind: 'summary'; text: string; usage?: Usage; pieces?: number }
  | { kind: 'failed'; reason: 'rejected' | 'exhausted'; message: string }
  | { kind: 'cancelled' };

export type CompactionSteps = Generator<SummarizeStep, CompactionResult, SummarizeOutcome>;

/** What a driver adds to a pass. */
export interface CompactionHooks {
  /**
   * docs/design.md#recall (agent runs with `compaction.recall`): the text a stub, a summary or a
   * hard trim's marker ends with to name what it replaced — `'stub'` with the index of one elided
   * tool result, `'summary'` with the indices of the middle it replaces, `'trim'` with those the
   * trim drops ('' adds nothing; a trim leaves a marker only with something to name). Every count
   * the pass makes of a stubbed, summarized or trimmed conversation includes it.
   */
  nameReplaced?: NameReplaced;
}

/**
 * One compaction as a step machine (docs/design.md#pass, and the economic rules of docs/design.md#economics its options
 * turn on). Throws `InvalidInputError` before its first step on bad input; never yields more than
 * two summarize steps, besides one per piece before the last of a middle summarized in pieces
 * (docs/design.md#summarizer-window); always returns a result.
 *
 * @example
 * const steps = compactionSteps(messages, resolveOptions({ contextBudget: 128_000 }));
 * let next = steps.next();
 * while (!next.done) next = steps.next(await summarizeSomehow(next.value));
 * const result = next.value;
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
  // docs/design.md#truncation The last resort, asked of the driver only when it would change the result.
  // Only a conversation that did not fit and still does not: a result over its limit from one that
  // fitted is a counter's artefact (a calibrated counter recounting stubs), not an oversized message.
  const oversized = result.exhausted && pass.tokensBefore > pass.aim.limit;
  if (!oversized || !options.truncateOversized) return result;
  return truncateToFit(pass.input, result, pass.regions.removable, pass.aim.counter, pass.aim.limit);
}

/**
 * One pass, top-down: elision, and the end of the pass when that was enough; the recent window
 * and the middle; the summary's request, cut in pieces when it does not fit the summarizer's
 * window; the summary and its one retry; the assembly, or the hard trim.
 */
function* passSteps(pass: Pass, hooks: CompactionHooks): CompactionSteps {
  const { options, regions, aim } = pass;
  // docs/design.md#over-trigger Elide first (an elision-only epoch is this branch below the trigger); stop when that was enough.
  // docs/design.md#epochs: an epoch never summarizes, never drops, never calls a backend.
  const elided = elide(pass, hooks.nameReplaced);
  if (elisionEnds(pass, elided))
    return finish(pass, { ...unchanged(), messages: elided.messages(), elisions: elided.elisions });

  // docs/design.md#window-gives-way The recent window gives way when it alone is over the low-water mark.
  // The window is planned on the input: it weighs only messages no elision touches (see Elided).
  const plan = options.recentWindowGivesWay ? planWindow(pass.input, regions, aim, options) : undefined;
  const planned = plan?.regions ?? regions;

  // docs/design.md#no-op No-op: nothing between the sticky prefix and the recent window.
  if (planned.middle.length === 0) return finish(pass, { ...unchanged(), messages: [...pass.input] });

  // docs/design.md#summarizer-request The middle as the summarizer sees it, cut once for every request:
  // the middle of the input, with what each elision there gives its message, without a copy of each elided message.
  const middle = messagesAt(pass.input, planned.middle);
  const contents = elidedContents(planned.middle, elided.elisions);
  const seen = capMiddle(middle, options.toolResultCap, contents);
  const assembly = new Assembly(pass, elided, { planned, plan, messages: middle, contents }, hooks.nameReplaced);

  const input = yield* foldPieces(pass, seen);
  if ('cause' in input) return assembly.trimmed(input);
  return yield* summaryAndRetry(pass, assembly, input);
}

/** What the summary's own requests (the first and its retry) send: the middle, or the fold of its last piece. */
interface SummaryInput {
  middle: ChatMessage[];
  /** The last piece of a middle summarized in pieces; undefined for a middle sent in one request. */
  piece: SummarizeStep['piece'];
}

/**
 * docs/design.md#summarizer-window A middle whose request would not fit the summarizer's window is
 * summarized in pieces, as a fold: each piece's request carries the summary so far; the last one is
 * the summary's request (and its one retry). When a piece fails or the middle cannot be cut to the
 * window, the reason the pass ends in the hard trim instead.
 */
function* foldPieces(
  pass: Pass,
  seen: ChatMessage[],
): Generator<SummarizeStep, SummaryInput | FallbackReason, SummarizeOutcome> {
  const { text, aim } = pass;
  const window = pass.options.summarizerContextWindow;
  if (window === undefined) return { middle: seen, piece: undefined };
  const cut = cutPieces(seen, summaryInstruction(undefined, text), text.summaryInstructions, aim.counter, window);
  const unfit: FallbackReason = {
    cause: 'over-summarizer-window',
    message: `the middle cannot be cut into requests that fit summarizerContextWindow (${window} tokens)`,
  };
  if (cut === 'unfit') return unfit;
  if (cut === undefined) return { middle: seen, piece: undefined };
  const of = cut.pieces.length;
  let carried: string | undefined;
  for (let index = 0; index < of - 1; index += 1) {
    const pieceMiddle = foldedMiddle(cut, index, carried, text.summaryInstructions, aim.counter);
    if (pieceMiddle === undefined) return unfit;
    const piece = { index: index + 1, of };
    const outcome = yield step('piece', cut.instruction, pieceMiddle, text, piece);
    const failed = failureOf(outcome, `piece ${piece.index} of ${of}`);
    if (failed !== undefined) return failed;
    carried = outcome.kind === 'summary' ? outcome.text.trim() : carried;
  }
  const last = foldedMiddle(cut, of - 1, carried, text.summaryInstructions, aim.counter);
  return last === undefined ? unfit : { middle: last, piece: { index: of, of } };
}

/** Why an answer to a summarize step gives no summary to use; undefined for a summary with text. */
function failureOf(outcome: SummarizeOutcome, what: string): FallbackReason | undefined {
  if (outcome.kind === 'cancelled') return { cause: 'cancelled', message: `the ${what} was cancelled` };
  if (outcome.kind === 'failed')
    return {
      cause: 'summarizer-failed',
      message: `the summarizer failed the ${what} (${outcome.reason === 'rejected' ? 'refused, not retried' : 'every attempt'}): ${outcome.message}`,
    };
  if (outcome.text.trim() === '')
    return { cause: 'empty-summary', message: `the summarizer returned an empty summary for the ${what}` };
  return undefined;
}

/** Neither the summary nor its retry made the conversation smaller and fit its target. */
const TOO_LONG: FallbackReason = {
  cause: 'summary-too-long',
  message: 'the summary and its tighter retry did not make the conversation smaller and fit its target',
};

/**
 * docs/design.md#summarizer-request One request; docs/design.md#failures the driver retries it; an
 * empty summary is a failure. Then at most one retry: after a summary that passed the proof but
 * left out identifiers it had to keep (docs/design.md#coverage), or after one that failed the proof
 * (docs/design.md#proof).
 */
function* summaryAndRetry(
  pass: Pass,
  assembly: Assembly,
  input: SummaryInput,
): Generator<SummarizeStep, CompactionResult, SummarizeOutcome> {
  const { text } = pass;
  const first = yield* ask(summaryStep(pass, input, 'summary', summaryInstruction(undefined, text), text));
  const firstFailure = failureOf(first, 'summary request');
  if (firstFailure !== undefined || first.kind !== 'summary') return assembly.trimmed(firstFailure ?? TOO_LONG);
  const firstText = first.text.trim();
  const retryNames = pass.options.summaryCoverage === 'retry' ? assembly.missing(firstText) : [];

  if (assembly.accepts(assembly.assembledOf(firstText))) {
    if (retryNames.length === 0)
      return withPieces(assembly.accepted(firstText) ?? assembly.trimmed(TOO_LONG), first, input);
    // docs/design.md#coverage The one retry names what the summary left out; it is taken only when it keeps more.
    const instruction = `${summaryInstruction(undefined, text)}\n\n${coverageRetryText(retryNames, firstText.length)}`;
    const retry = yield* ask(summaryStep(pass, input, 'coverage', instruction, withIdentifiers(text, retryNames)));
    if (retry.kind === 'summary' && retry.text.trim() !== '') {
      const retryText = retry.text.trim();
      const better = assembly.missing(retryText).length < retryNames.length ? assembly.accepted(retryText) : undefined;
      if (better !== undefined) return withPieces(better, retry, input);
    }
    return withPieces(assembly.accepted(firstText) ?? assembly.trimmed(TOO_LONG), first, input);
  }

  // docs/design.md#proof The proof failed: one tighter request, accepted only if it fits and is shorter.
  const tighter = summaryInstruction(firstText.length, text);
  const second = yield* ask(
    retryNames.length === 0
      ? summaryStep(pass, input, 'tighter', tighter, text)
      : summaryStep(
          pass,
          input,
          'tighter',
          `${tighter}\n${coverageRetryText(retryNames)}`,
          withIdentifiers(text, retryNames),
        ),
  );
  const secondFailure = failureOf(second, 'tighter retry');
  if (secondFailure !== undefined || second.kind !== 'summary') return assembly.trimmed(secondFailure ?? TOO_LONG);
  const secondText = second.text.trim();
  if (secondText.length < firstText.length)
    return withPieces(assembly.accepted(secondText) ?? assembly.trimmed(TOO_LONG), second, input);
  return assembly.trimmed(TOO_LONG);
}

/** A step of the summary's request; undefined for a retry whose longer instruction does not fit the summarizer's window. */
function summaryStep(
  pass: Pass,
  input: SummaryInput,
  purpose: 'summary' | 'tighter' | 'coverage',
  instruction: string,
  text: InstructionText,
): SummarizeStep | undefined {
  const window = pass.options.summarizerContextWindow;
  const { piece } = input;
  const built = step(
    purpose,
    piece === undefined ? instruction : foldInstruction(instruction),
    input.middle,
    text,
    piece,
  );
  if (window === undefined || purpose === 'summary' || requestFits(built.request, window, pass.aim.counter))
    return built;
  return undefined;
}

/** The engine's own pieces, else those the driver folded the kept summary in (the worker's window, docs/design.md#summarizer-window). */
function withPieces(result: CompactionResult, kept: SummarizeOutcome, input: SummaryInput): CompactionResult {
  const pieces = input.piece?.of ?? (kept.kind === 'summary' ? kept.pieces : undefined);
  return pieces === undefined || result.fallback ? result : { ...result, summaryPieces: pieces };
}

/** The call's instructions with the identifiers a retry must keep: the extractive summarizer keeps what they name first. */
function withIdentifiers(text: InstructionText, missing: readonly string[]): InstructionText {
  const named = missing.slice(0, MAX_CARRIED_IDENTIFIERS).map((id) => `\`${id}\``);
  const keep = `Keep these identifiers: ${named.join(', ')}`;
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
 * Yields a built step and returns its answer; a step not built fails unsent. At module level, not
 * in the pass: a generator function made per pass gets its own hidden class at its first call,
 * which V8 allocates outside the young generation, and through the function's closure that kept
 * the whole pass (its cut middle, every copy) alive until a full collection.
 */
function* ask(built: SummarizeStep | undefined): Generator<SummarizeStep, SummarizeOutcome, SummarizeOutcome> {
  return built === undefined ? overSummarizerWindow : yield built;
}

function step(
  purpose: SummarizeStep['purpose'],
  instruction: string,
  seen: ChatMessage[],
  text: InstructionText,
  piece?: SummarizeStep['piece'],
): SummarizeStep {
  // The transcript's size is counted, not rendered: the request is rendered only by a summarizer that sends text.
  const request = requestFor(instruction, seen, text.summaryInstructions);
  const transcript = { messages: seen.length, characters: requestChars(instruction, seen) };
  return piece === undefined
    ? { kind: 'summarize', purpose, request, transcript }
    : { kind: 'summarize', purpose, request, transcript, piece };
}

/** Runs the step machine with a synchronous answer per step (tests, benchmarks, pure callers). */
export function runCompactionSteps(
  steps: CompactionSteps,
  answer: (step: SummarizeStep) => SummarizeOutcome,
): CompactionResult {
  let next = steps.next();
  while (next.done !== true) next = steps.next(answer(next.value));
  return next.value;
}
