// Sandbox-safe: the one compaction engine both drivers run (docs/design.md#drivers).
//
// The engine is a generator: it decides everything and *asks* its driver for the one thing it
// cannot do itself — a summary — by yielding a `SummarizeStep`. The in-process `Compactor`
// answers with a direct call (retrying per docs/design.md#failures), the workflow `compact` with an activity under
// Temporal's retry policy. Neither driver decides anything, so the two cannot drift apart.
import { epochPays, planWindow, summarizedLastRound, worthStarting } from './economics.js';
import { applyElisions, elidedContents, elides, planPassElisions } from './elision.js';
import { aimFor, instructionTextOf, type Aim, type CallOverrides, type ResolvedOptions } from './options.js';
import { findRegions, trimBoundaries, type Regions } from './regions.js';
import { validateMessages } from '../schema.js';
import {
  capMiddle,
  requestChars,
  requestFor,
  summaryContent,
  summaryInstruction,
  type InstructionText,
} from './transcript.js';
import { truncateToFit } from './truncation.js';
import { cutPieces, foldedMiddle, foldInstruction, requestFits } from './pieces.js';
import {
  coverageOf,
  coverageRetryText,
  MAX_CARRIED_IDENTIFIERS,
  missingFrom,
  requiredIdentifiers,
  withCarriedFacts,
  type Coverage,
} from './coverage.js';
import type {
  ChatMessage,
  CompactionPlan,
  CompactionResult,
  Elision,
  SummarizeRequest,
  TokenCounter,
  Usage,
} from '../types.js';

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

/** Validated input of one compaction. */
interface Pass {
  input: ChatMessage[];
  options: ResolvedOptions;
  aim: Aim;
  regions: Regions;
  tokensBefore: number;
  /** The call's `summaryInstructions` and `summaryPrompt` (docs/design.md#summary-instructions). */
  text: InstructionText;
}

function startPass(
  messages: unknown,
  options: ResolvedOptions,
  overrides: CallOverrides,
  counter: TokenCounter | undefined,
): Pass {
  const input = validateMessages(messages);
  const aim = aimFor(options, overrides, counter);
  return {
    input,
    options,
    aim,
    regions: findRegions(input, options.keepRecent),
    tokensBefore: aim.counter.count(input),
    text: instructionTextOf(options, overrides),
  };
}

function finish(
  pass: Pass,
  fields: Omit<CompactionResult, 'tokensBefore' | 'tokensAfter' | 'exhausted'>,
): CompactionResult {
  const tokensAfter = pass.aim.counter.count(fields.messages);
  return { ...fields, tokensBefore: pass.tokensBefore, tokensAfter, exhausted: tokensAfter > pass.aim.limit };
}

/**
 * A pass's elisions, and the conversation with them applied. The conversation is made only when
 * something reads it whole (a count, an elision-only result, the hard trim): a summary reads only
 * the middle, which it reads from the input and `elidedContents`, and the messages around it,
 * which no elision touches (every elision stands in the standard middle). At 100k messages that
 * is 60k copied messages fewer.
 */
interface Elided {
  elisions: Elision[];
  /** The input with the elisions applied; the same array at every call (never change it). */
  messages(): ChatMessage[];
}

function elide(pass: Pass, hooks: CompactionHooks = {}): Elided {
  let applied: ChatMessage[] | undefined;
  if (!elides(pass.options)) return { elisions: [], messages: () => (applied ??= [...pass.input]) };
  const planned = planPassElisions(pass.input, pass.regions, pass.options).elisions;
  const { nameReplaced } = hooks;
  // docs/design.md#recall A tool result's stub names what it replaced (an image elision keeps the rest of its message).
  const elisions =
    nameReplaced === undefined
      ? planned
      : planned.map((elision) =>
          elision.content === undefined
            ? { ...elision, stub: `${elision.stub}${nameReplaced('stub', [elision.index])}` }
            : elision,
        );
  return { elisions, messages: () => (applied ??= applyElisions(pass.input, elisions)) };
}

/** Over this, a pass is over the trigger; at or below it, a pass with something to elide is an elision-only epoch. */
function triggerOf(aim: Aim): number {
  return aim.target ?? aim.trigger;
}

/** Over the trigger, an elision-only pass ends the compaction when the stubbed conversation is at or below this (docs/design.md#over-trigger, docs/design.md#elision-that-pays). */
function elisionStop(pass: Pass): number {
  switch (pass.options.elisionEndsPass) {
    case 'under-trigger':
      return triggerOf(pass.aim);
    case 'at-mark':
      return pass.aim.mark;
    case 'never':
      return Number.NEGATIVE_INFINITY;
  }
}

/**
 * `needsCompaction` (docs/design.md#needs-compaction): over `triggerRatio × contextBudget`, or, with
 * `ageObservations` or `keepImages`, an eligible elision pool of at least `ageReclaimMin` characters. The
 * economic rules narrow both: over the trigger but within the limit, only a compaction worth its
 * cache miss is started (docs/design.md#no-thrash); below it, `elisionEpochs` says which epochs are (docs/design.md#elision-that-pays).
 */
export function needsCompactionCore(
  messages: unknown,
  options: ResolvedOptions,
  overrides: CallOverrides = {},
  counter?: TokenCounter,
): boolean {
  const pass = startPass(messages, options, overrides, counter);
  const { aim } = pass;
  if (pass.tokensBefore > triggerOf(aim)) {
    if (!options.deferShallowCompactions || pass.tokensBefore > aim.limit) return true;
    // docs/design.md#no-thrash No thrash: within the limit, never two compactions in consecutive rounds.
    if (summarizedLastRound(pass.input, pass.regions, options.keepRecent)) return false;
    const elided = elide(pass);
    const stop = elisionStop(pass);
    if (elided.elisions.length > 0 && stop >= 0 && aim.counter.count(elided.messages()) <= stop) return true;
    return worthStarting(planWindow(pass.input, pass.regions, aim, options), aim);
  }
  if (!elides(options) || pass.regions.middle.length === 0 || options.elisionEpochs === 'never') return false;
  // docs/design.md#no-thrash No thrash: an epoch is a compaction too (it rewrites the conversation below its prefix).
  if (options.deferShallowCompactions && summarizedLastRound(pass.input, pass.regions, options.keepRecent))
    return false;
  const plan = planPassElisions(pass.input, pass.regions, options);
  if (plan.poolChars < options.ageReclaimMin) return false;
  if (options.elisionEpochs === 'batch') return true;
  const elided = applyElisions(pass.input, plan.elisions);
  return epochPays(pass.input, elided, plan.elisions, pass.regions, aim, pass.tokensBefore, options);
}

/**
 * `needsCompactionCore`, and how many pieces the summary would take (docs/design.md#summarizer-window):
 * counted only when a compaction is needed and `summarizerContextWindow` is set, with the engine's
 * own cut of the middle the pass would summarize now (`cutPieces`); see `CompactionPlan`.
 */
export function compactionPlanCore(
  messages: unknown,
  options: ResolvedOptions,
  overrides: CallOverrides = {},
  counter?: TokenCounter,
): CompactionPlan {
  const needed = needsCompactionCore(messages, options, overrides, counter);
  const window = options.summarizerContextWindow;
  if (!needed || window === undefined) return { needed };
  const pieces = summaryPiecesOf(startPass(messages, options, overrides, counter), window);
  return pieces === undefined ? { needed } : { needed, summaryPieces: pieces };
}

/** The pieces `passSteps` would cut the middle it summarizes into; undefined when it would send one request or none. */
function summaryPiecesOf(pass: Pass, window: number): number | undefined {
  const { options, regions, aim } = pass;
  const elided = elide(pass);
  if (elided.elisions.length > 0) {
    // An epoch (at or below the trigger) never summarizes.
    if (pass.tokensBefore <= triggerOf(aim)) return undefined;
    const stop = elisionStop(pass);
    if (stop >= 0 && aim.counter.count(elided.messages()) <= stop) return undefined;
  }
  const planned = options.recentWindowGivesWay ? planWindow(pass.input, regions, aim, options).regions : regions;
  if (planned.middle.length === 0) return undefined;
  const contents = elidedContents(planned.middle, elided.elisions);
  const seen = capMiddle(messagesAt(pass.input, planned.middle), options.toolResultCap, contents);
  const instruction = summaryInstruction(undefined, pass.text);
  const cut = cutPieces(seen, instruction, pass.text.summaryInstructions, aim.counter, window);
  return cut === undefined || cut === 'unfit' ? undefined : cut.pieces.length;
}

/** The messages at `indices` (ascending, all present), in order. */
function messagesAt(messages: readonly ChatMessage[], indices: readonly number[]): ChatMessage[] {
  const picked = new Array<ChatMessage>(indices.length);
  for (let position = 0; position < indices.length; position += 1)
    picked[position] = messages[indices[position] as number] as ChatMessage;
  return picked;
}

/** Replaces the middle with one synthetic user message where the first removed message stood. */
function assemble(messages: readonly ChatMessage[], regions: Regions, summary: string): ChatMessage[] {
  const first = regions.middle[0];
  const assembled: ChatMessage[] = [];
  messages.forEach((message, index) => {
    if (index === first) assembled.push({ role: 'user', content: summary });
    else if (regions.inMiddle[index] !== 1) assembled.push(message);
  });
  return assembled;
}

/**
 * The hard trim (docs/design.md#hard-trim): drops the oldest middle messages, whole groups at a time, until
 * the conversation fits the aim; never touches sticky messages or the recent window of `regions`
 * (the one that gave way, under docs/design.md#window-gives-way: the trim falls back where the summary would have
 * replaced); cannot fail.
 * The counters we ship are additive, so the smallest fitting prefix is found by bisection.
 */
export function hardTrim(
  messages: readonly ChatMessage[],
  regions: Regions,
  aim: Aim,
  marker?: (dropped: readonly number[]) => string,
): { messages: ChatMessage[]; dropped: number; cutIndex: number; trimMarker?: string } {
  const boundaries = [0, ...trimBoundaries(regions)];
  const markerOf = (prefix: number): string =>
    prefix === 0 || marker === undefined ? '' : marker(regions.middle.slice(0, prefix));
  // The middle ascends, so dropping its first `prefix` messages drops exactly the middle messages
  // up to middle[prefix - 1]: a mask and a bound, not a Set per probe (hot at 100k messages).
  const without = (prefix: number): ChatMessage[] => {
    const last = prefix === 0 ? -1 : (regions.middle[prefix - 1] ?? -1);
    const kept = messages.filter((_, index) => index > last || regions.inMiddle[index] !== 1);
    // docs/design.md#recall A trim's marker stands where the first message it dropped stood.
    const text = markerOf(prefix);
    if (text !== '') kept.splice(regions.middle[0] ?? 0, 0, { role: 'user', content: text });
    return kept;
  };
  const fits = (prefix: number): boolean => aim.counter.count(without(prefix)) <= aim.trimTo;
  let low = 0;
  let high = boundaries.length - 1;
  if (!fits(boundaries[low] ?? 0)) {
    // Invariant: boundaries[low] does not fit; boundaries[high] fits or is everything there is to drop.
    while (high - low > 1) {
      const probe = (low + high) >> 1;
      if (fits(boundaries[probe] ?? 0)) high = probe;
      else low = probe;
    }
    low = high;
  }
  const prefix = boundaries[low] ?? 0;
  const trimMarker = markerOf(prefix);
  return {
    messages: without(prefix),
    dropped: prefix,
    cutIndex: prefix === 0 ? -1 : (regions.middle[prefix - 1] ?? -1),
    ...(trimMarker === '' ? {} : { trimMarker }),
  };
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

/** What a driver adds to a pass. */
export interface CompactionHooks {
  /**
   * docs/design.md#recall (agent runs with `compaction.recall`): the text a stub, a summary or a
   * hard trim's marker ends with to name what it replaced — `'stub'` with the index of one elided
   * tool result, `'summary'` with the indices of the middle it replaces, `'trim'` with those the
   * trim drops ('' adds nothing; a trim leaves a marker only with something to name). Every count
   * the pass makes of a stubbed, summarized or trimmed conversation includes it.
   */
  nameReplaced?: (kind: 'stub' | 'summary' | 'trim', indices: readonly number[]) => string;
}

/** A hard trim's marker (docs/design.md#recall): what it dropped, and `named` (the ids line) — only when there are ids to name. */
function trimMarkerOf(hooks: CompactionHooks): ((dropped: readonly number[]) => string) | undefined {
  const { nameReplaced } = hooks;
  if (nameReplaced === undefined) return undefined;
  return (dropped) => {
    const named = nameReplaced('trim', dropped);
    return named === '' ? '' : `[${dropped.length} earlier messages dropped by the harness to fit the context]${named}`;
  };
}

/** The messages a compaction keeps around the middle it replaces: what a summary's identifiers are checked against. */
function keptAround(messages: readonly ChatMessage[], regions: Regions): ChatMessage[] {
  return messages.filter((_, index) => regions.inMiddle[index] !== 1);
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

function* passSteps(pass: Pass, hooks: CompactionHooks): CompactionSteps {
  const { options } = pass;
  const { regions, aim } = pass;
  const unchanged = { dropped: 0, fallback: false, elisions: [], summary: null, cutIndex: -1 };
  const below = pass.tokensBefore <= triggerOf(aim);

  // docs/design.md#over-trigger Elide first (an elision-only epoch is this branch below the trigger); stop when that was enough.
  const elided = elide(pass, hooks);
  if (elided.elisions.length > 0) {
    const elisionOnly = (): CompactionResult =>
      finish(pass, { ...unchanged, messages: elided.messages(), elisions: elided.elisions });
    // docs/design.md#epochs: an epoch never summarizes, never drops, never calls a backend. Decided on the count the
    // pass was entered with, not on a recount: a calibrated counter counts a changed conversation
    // with its estimator, which may say "over the trigger" of a conversation that just shrank.
    if (below) return elisionOnly();
    const stop = elisionStop(pass);
    if (stop >= 0 && aim.counter.count(elided.messages()) <= stop) return elisionOnly();
  }

  // docs/design.md#window-gives-way The recent window gives way when it alone is over the low-water mark.
  // The window is planned on the input: it weighs only messages no elision touches (see Elided).
  const plan = options.recentWindowGivesWay ? planWindow(pass.input, regions, aim, options) : undefined;
  const planned = plan?.regions ?? regions;

  // docs/design.md#no-op No-op: nothing between the sticky prefix and the recent window.
  if (planned.middle.length === 0) return finish(pass, { ...unchanged, messages: [...pass.input] });

  const trimmed = (): CompactionResult => {
    const trim = hardTrim(elided.messages(), planned, aim, trimMarkerOf(hooks));
    return finish(pass, { ...trim, fallback: true, elisions: elided.elisions, summary: null });
  };
  // docs/design.md#never-worse Without a target, a summary over contextBudget loses to a hard trim that fits.
  let trimFits: boolean | undefined;
  const trimWouldFit = (): boolean =>
    (trimFits ??=
      aim.counter.count(hardTrim(elided.messages(), planned, aim, trimMarkerOf(hooks)).messages) <= aim.limit);
  const accepts = (candidate: ChatMessage[]): boolean => {
    const tokens = aim.counter.count(candidate);
    if (!(tokens < pass.tokensBefore && (aim.target === undefined || tokens <= aim.target))) return false;
    return !(options.trimBeatsOverflow && aim.target === undefined && tokens > aim.limit && trimWouldFit());
  };
  const summarized = (summary: string, assembled: ChatMessage[], coverage?: Coverage): CompactionResult => {
    const result = finish(pass, {
      messages: assembled,
      dropped: planned.middle.length,
      fallback: false,
      elisions: elided.elisions,
      summary,
      cutIndex: planned.middle.at(-1) ?? -1,
      ...(coverage === undefined ? {} : { coverage }),
    });
    if (plan === undefined || result.tokensAfter <= aim.mark) return result;
    // docs/design.md#window-gives-way: over the mark, say why — the window could not give way enough, or the summary was longer than the room left for it.
    const reason = plan.keptTokens + plan.summaryRoom > aim.mark ? 'recent-window' : 'summary-length';
    return { ...result, aboveMark: { mark: aim.mark, reason } };
  };

  // docs/design.md#summarizer-request One request; docs/design.md#failures the driver retries it; an empty summary is a failure.
  // The middle as the summarizer sees it, cut once for both requests.
  // The middle of the input, with what each elision there gives its message: the elided middle, without a copy of each elided message.
  const middle = messagesAt(pass.input, planned.middle);
  const contents = elidedContents(planned.middle, elided.elisions);
  const seen = capMiddle(middle, options.toolResultCap, contents);
  const { text } = pass;
  // docs/design.md#coverage The identifiers the middle shares with what stays: a summary must keep them.
  const checking = options.summaryCoverage !== 'off';
  // Asked only once a summary came back: a summarizer that fails leaves the middle unscanned.
  let requiredOnce: string[] | undefined;
  const required = (): string[] =>
    (requiredOnce ??= checking
      ? requiredIdentifiers(middle, keptAround(pass.input, planned), options.toolResultCap, contents)
      : []);
  const named = hooks.nameReplaced?.('summary', planned.middle) ?? '';
  const contentOf = (written: string): string => `${summaryContent(written, planned.middle.length)}${named}`;
  const assembledOf = (written: string): ChatMessage[] => assemble(pass.input, planned, contentOf(written));
  /** The summary the summarizer wrote, with what it left out carried when that still fits; undefined when neither fits. */
  const accepted = (written: string): CompactionResult | undefined => {
    const missing = checking ? missingFrom(written, required()) : [];
    if (missing.length > 0) {
      const carried = withCarriedFacts(written, missing);
      const assembled = assembledOf(carried);
      if (accepts(assembled))
        return summarized(contentOf(carried), assembled, coverageOf(required(), written, carried));
    }
    const assembled = assembledOf(written);
    if (!accepts(assembled)) return undefined;
    const coverage = checking ? coverageOf(required(), written, written) : undefined;
    return summarized(contentOf(written), assembled, coverage);
  };

  // docs/design.md#summarizer-window A middle whose request would not fit the summarizer's window is
  // summarized in pieces, as a fold: each piece's request carries the summary so far; the last one is
  // the summary's request (and its one retry). Any piece that fails ends in the hard trim.
  const window = options.summarizerContextWindow;
  let folded = seen;
  let instructionOf = (instruction: string): string => instruction;
  let pieceOf: SummarizeStep['piece'];
  if (window !== undefined) {
    const cut = cutPieces(seen, summaryInstruction(undefined, text), text.summaryInstructions, aim.counter, window);
    if (cut === 'unfit') return trimmed();
    if (cut !== undefined) {
      const of = cut.pieces.length;
      let carried: string | undefined;
      for (let index = 0; index < of - 1; index += 1) {
        const pieceMiddle = foldedMiddle(cut, index, carried, text.summaryInstructions, aim.counter);
        if (pieceMiddle === undefined) return trimmed();
        const piece = { index: index + 1, of };
        const outcome = yield step('piece', cut.instruction, pieceMiddle, text, piece);
        if (outcome.kind !== 'summary' || outcome.text.trim() === '') return trimmed();
        carried = outcome.text.trim();
      }
      const last = foldedMiddle(cut, of - 1, carried, text.summaryInstructions, aim.counter);
      if (last === undefined) return trimmed();
      folded = last;
      instructionOf = foldInstruction;
      pieceOf = { index: of, of };
    }
  }
  // The engine's own pieces, else those the driver folded the kept summary in (the worker's window, docs/design.md#summarizer-window).
  const withPieces = (result: CompactionResult, kept: SummarizeOutcome): CompactionResult => {
    const pieces = pieceOf?.of ?? (kept.kind === 'summary' ? kept.pieces : undefined);
    return pieces === undefined || result.fallback ? result : { ...result, summaryPieces: pieces };
  };
  /** A step of the summary's request; undefined for a retry whose longer instruction does not fit the summarizer's window. */
  const summaryStep = (
    purpose: 'summary' | 'tighter' | 'coverage',
    instruction: string,
    stepText: InstructionText,
  ): SummarizeStep | undefined => {
    const built = step(purpose, instructionOf(instruction), folded, stepText, pieceOf);
    if (window === undefined || purpose === 'summary' || requestFits(built.request, window, aim.counter)) return built;
    return undefined;
  };
  const first = yield* ask(summaryStep('summary', summaryInstruction(undefined, text), text));
  if (first.kind !== 'summary' || first.text.trim() === '') return trimmed();
  const firstText = first.text.trim();
  const retryNames = options.summaryCoverage === 'retry' ? missingFrom(firstText, required()) : [];

  if (accepts(assembledOf(firstText))) {
    if (retryNames.length === 0) return withPieces(accepted(firstText) ?? trimmed(), first);
    // docs/design.md#coverage The one retry names what the summary left out; it is taken only when it keeps more.
    const instruction = `${summaryInstruction(undefined, text)}\n\n${coverageRetryText(retryNames, firstText.length)}`;
    const retry = yield* ask(summaryStep('coverage', instruction, withIdentifiers(text, retryNames)));
    if (retry.kind === 'summary' && retry.text.trim() !== '') {
      const retryText = retry.text.trim();
      const better = missingFrom(retryText, required()).length < retryNames.length ? accepted(retryText) : undefined;
      if (better !== undefined) return withPieces(better, retry);
    }
    return withPieces(accepted(firstText) ?? trimmed(), first);
  }

  // docs/design.md#proof The proof failed: one tighter request, accepted only if it fits and is shorter.
  const tighter = summaryInstruction(firstText.length, text);
  const second = yield* ask(
    retryNames.length === 0
      ? summaryStep('tighter', tighter, text)
      : summaryStep('tighter', `${tighter}\n${coverageRetryText(retryNames)}`, withIdentifiers(text, retryNames)),
  );
  if (second.kind !== 'summary' || second.text.trim() === '') return trimmed();
  const secondText = second.text.trim();
  if (secondText.length < firstText.length) return withPieces(accepted(secondText) ?? trimmed(), second);
  return trimmed();
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
