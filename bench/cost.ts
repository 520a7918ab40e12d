// Node: what a run costs under prompt caching (docs/design.md#economics). Every trajectory is replayed
// through several context policies side by side, and each request is priced as a provider with a
// prompt cache bills it. A benchmark, not a test: it prints figures and asserts nothing.
//
// The model:
// - one request per recorded assistant turn i (a leading one, with nothing before it, is skipped):
//   the policy's view of trajectory[0..i). Our engine's view is the previous round's managed
//   conversation plus the messages recorded since, compacted when `needsCompaction` says so;
// - tokens: 4 + ceil(chars / 4) per message, chars = content length (its JSON length when not a
//   string) + the JSON length of `tool_calls`; with `--tokenizer o200k`, 4 + the o200k BPE tokens
//   of the same two strings;
// - cached = the longest common message prefix with the previous request (messages equal as JSON);
//   billed = uncached + cachedPrice × cached + summarizerPrice × the summarizer's input tokens;
// - window per trajectory = max(8,000, half its unmanaged final context); contextBudget = window.
//
// Run: `npm run bench:cost` (the repository's trajectories, examples/trajectories/) or
//      `npm run bench:cost -- --corpus ../shared/corpus` (the extended corpus); `--write` puts the
//      first tokenizer's table of the run into bench/README.md, section "Cost" (stdout has them all). Flags: --cached-price 0.1, --summarizer-price 0.25,
//      --summarizer-input request|middle, --tokenizer chars|o200k|both (default both), --ablation,
//      --explain-retention (our engine's policies only: the identifiers each missed, counted by
//      where they were lost), --pauses [--seed 1] [--cache-ttl 5m] (pauses drawn from
//      bench/pauses.ts before each request; a request after one over the cache TTL reads nothing
//      from the cache; agentRun's engine without and with the cold-cache rule, and where each
//      policy's missed identifiers were lost; `--write` writes bench/cold-cache-figures.md).
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  REFERENCE_EXACT,
  validateMessages,
  type ChatMessage,
  type CompactionOptions,
  type CompactionResult,
  type TokenCounter,
} from '../src/index.js';
import { createBpeCounter, countTextTokens } from '../src/core/counting/bpe-counter.js';
import { extractiveSummary } from '../src/summarizers/extractive.js';
import { compactionSteps, type SummarizeStep } from '../src/core/compaction/engine.js';
import { runCompactionSteps } from '../corpus/fake-summarizer.js';
import { needsCompactionCore } from '../src/core/compaction/needs-compaction.js';
import { findRegions } from '../src/core/compaction/regions.js';
import { durationTextMs, resolveOptions } from '../src/core/compaction/options.js';
import { DEFAULT_COLD_TRIGGER, withColdTrigger } from '../src/core/agent/cold-cache.js';
import { describePauses, pausesFor } from './pauses.js';
import { capMiddle, isSummaryMessage, summarizerMessages } from '../src/core/compaction/transcript.js';
import { writeReadmeSection } from './readme-section.js';

const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));
const COLD_CACHE_FIGURES = fileURLToPath(new URL('./cold-cache-figures.md', import.meta.url));

function progress(line: string): void {
  process.stderr.write(`${line}\n`);
}

// ---------------------------------------------------------------------------------------------
// Trajectories: one function, so the source can become the corpus module later
// ---------------------------------------------------------------------------------------------

interface Trajectory {
  name: string;
  messages: ChatMessage[];
}

/** Every `*.json` trajectory (a JSON array of chat messages) in `dir`, validated, in file-name order. */
function loadTrajectories(dir: string): Trajectory[] {
  let files: string[];
  try {
    files = readdirSync(dir)
      .filter((file) => file.endsWith('.json'))
      .sort();
  } catch (error) {
    throw new Error(`--corpus ${dir}: cannot read the directory`, { cause: error });
  }
  if (files.length === 0) throw new Error(`--corpus ${dir}: no *.json trajectories there`);
  return files.map((file) => ({
    name: file.replace(/\.json$/, ''),
    messages: validateMessages(JSON.parse(readFileSync(join(dir, file), 'utf8')), file),
  }));
}

// ---------------------------------------------------------------------------------------------
// The token model
// ---------------------------------------------------------------------------------------------

type Tokenizer = 'chars' | 'o200k';

function contentString(message: ChatMessage): string {
  return typeof message.content === 'string' ? message.content : JSON.stringify(message.content);
}

/** Tokens of one message under the model, memoised per message object (unchanged messages are shared between rounds). */
function messageTokenizer(tokenizer: Tokenizer): (message: ChatMessage) => number {
  const memo = new WeakMap<ChatMessage, number>();
  const measure =
    tokenizer === 'chars'
      ? (message: ChatMessage): number =>
          4 +
          Math.ceil(
            (contentString(message).length +
              (message.tool_calls === undefined ? 0 : JSON.stringify(message.tool_calls).length)) /
              4,
          )
      : (message: ChatMessage): number =>
          4 +
          countTextTokens(contentString(message)) +
          (message.tool_calls === undefined ? 0 : countTextTokens(JSON.stringify(message.tool_calls)));
  return (message) => {
    let tokens = memo.get(message);
    if (tokens === undefined) {
      tokens = measure(message);
      memo.set(message, tokens);
    }
    return tokens;
  };
}

const jsonMemo = new WeakMap<ChatMessage, string>();
function jsonOf(message: ChatMessage): string {
  let json = jsonMemo.get(message);
  if (json === undefined) {
    json = JSON.stringify(message);
    jsonMemo.set(message, json);
  }
  return json;
}

/** Messages equal as JSON (the same object is equal without serialising it). */
function sameMessage(left: ChatMessage | undefined, right: ChatMessage | undefined): boolean {
  if (left === undefined || right === undefined) return false;
  return left === right || jsonOf(left) === jsonOf(right);
}

// ---------------------------------------------------------------------------------------------
// Retention: file paths and identifiers
// ---------------------------------------------------------------------------------------------

const TOKEN = /[A-Za-z0-9_][A-Za-z0-9_./-]*[A-Za-z0-9_]/g;

/**
 * Code-like tokens of at least three characters with a letter: a path (`/`), a dotted name
 * (`models.py`, `np.array`), snake_case, camelCase, or letters mixed with digits (`ZFA04Y`,
 * `HAT136`). Plain words and numbers are not identifiers.
 */
function isIdentifier(token: string): boolean {
  if (token.length < 3 || !/[A-Za-z]/.test(token)) return false;
  return (
    token.includes('/') || /\w\.\w/.test(token) || token.includes('_') || /[a-z][A-Z]/.test(token) || /\d/.test(token)
  );
}

const identifierMemo = new WeakMap<ChatMessage, Set<string>>();
/** The identifiers in a message's content and tool-call names and arguments, memoised per message object. */
function identifiersOf(message: ChatMessage): Set<string> {
  let found = identifierMemo.get(message);
  if (found === undefined) {
    found = new Set();
    const text = `${message.content === null ? '' : contentString(message)}${(message.tool_calls ?? []).map((call) => ` ${call.function.name} ${call.function.arguments}`).join('')}`;
    for (const match of text.matchAll(TOKEN)) if (isIdentifier(match[0])) found.add(match[0]);
    identifierMemo.set(message, found);
  }
  return found;
}

/** Per assistant turn: the identifiers it mentions whose first appearance in the trajectory was in an earlier tool result. */
function retentionProbes(messages: readonly ChatMessage[]): Map<number, string[]> {
  const firstSeenInTool = new Map<string, boolean>();
  const probes = new Map<number, string[]>();
  messages.forEach((message, index) => {
    const identifiers = identifiersOf(message);
    if (message.role === 'assistant')
      probes.set(
        index,
        [...identifiers].filter((identifier) => firstSeenInTool.get(identifier) === true),
      );
    for (const identifier of identifiers)
      if (!firstSeenInTool.has(identifier)) firstSeenInTool.set(identifier, message.role === 'tool');
  });
  return probes;
}

// ---------------------------------------------------------------------------------------------
// Policies
// ---------------------------------------------------------------------------------------------

interface Round {
  /** What the request sends. */
  messages: ChatMessage[];
  /** Tokens of the policy's view before it acted this round (what a compaction started from). */
  viewTokens: number;
  /** 1 when the policy rewrote the conversation this round (a compaction, a clearing). */
  compactions: number;
  summarizerTokens: number;
  /** Requests sent to the summarizer this round (a coverage or tighter retry is a second one). */
  summarizerRequests: number;
  /** A summarizing compaction that ended above its low-water mark (our engine's `aboveMark`). */
  aboveMark: number;
  /** Our engine's rewrite this round, for `--explain-retention`: what it started from and what it returned. */
  rewrite?: { before: ChatMessage[]; result: CompactionResult; toolResultCap: number };
}

interface PolicyContext {
  trajectory: readonly ChatMessage[];
  window: number;
  tokens: (messages: readonly ChatMessage[]) => number;
  tokenizer: Tokenizer;
  summarizerInput: SummarizerInput;
}

interface Policy {
  name: string;
  /**
   * A fresh run over one trajectory: called once per request, in order, with the request's end
   * index and whether the provider's cache has expired before it (`--pauses`: a pause longer than
   * the cache TTL came before it).
   */
  start(context: PolicyContext): (end: number, cold: boolean) => Round;
}

const quiet = { compactions: 0, summarizerTokens: 0, summarizerRequests: 0, aboveMark: 0 };

const none: Policy = {
  name: 'none',
  start:
    ({ trajectory, tokens }) =>
    (end) => {
      const messages = trajectory.slice(0, end);
      return { ...quiet, messages, viewTokens: tokens(messages) };
    },
};

/** The view with every tool result but the newest `keep` replaced by `replacement(message)` (when that differs). */
function replaceOldResults(
  view: readonly ChatMessage[],
  keep: number,
  replacement: (message: ChatMessage) => string,
): ChatMessage[] {
  const replaced = [...view];
  let kept = 0;
  for (let index = replaced.length - 1; index >= 0; index -= 1) {
    const message = replaced[index];
    if (message?.role !== 'tool') continue;
    kept += 1;
    const content = replacement(message);
    if (kept > keep && message.content !== content) replaced[index] = { ...message, content };
  }
  return replaced;
}

/** A rolling mask: on every request, every tool result but the last `keep` becomes `[Old tool output omitted: N chars]`. */
function rollingMask(keep: number): Policy {
  return {
    name: `rolling mask (all but the last ${keep} results)`,
    start:
      ({ trajectory, tokens }) =>
      (end) => {
        const view = trajectory.slice(0, end);
        const masked = replaceOldResults(
          view,
          keep,
          (message) => `[Old tool output omitted: ${contentString(message).length} chars]`,
        );
        return { ...quiet, messages: masked, viewTokens: tokens(view) };
      },
  };
}

/**
 * Anthropic-style `clear_tool_uses`, applied to each request as the client sends it: when the
 * request is over `trigger × window`, every tool result but the last `keep` becomes `[cleared]`;
 * with `atLeast`, only when that frees at least that many tokens.
 */
function clearToolUses(keep: number, trigger: number, atLeast: number): Policy {
  return {
    name:
      atLeast > 0
        ? `clear_tool_uses + clear_at_least ${atLeast.toLocaleString('en-US')}`
        : 'clear_tool_uses (over 0.5 × window, keep 3)',
    start:
      ({ trajectory, window, tokens }) =>
      (end) => {
        const view = trajectory.slice(0, end);
        const viewTokens = tokens(view);
        if (viewTokens <= trigger * window) return { ...quiet, messages: view, viewTokens };
        const cleared = replaceOldResults(view, keep, () => '[cleared]');
        const freed = viewTokens - tokens(cleared);
        if (freed <= 0 || freed < atLeast) return { ...quiet, messages: view, viewTokens };
        return { ...quiet, messages: cleared, viewTokens, compactions: 1 };
      },
  };
}

type SummarizerInput = 'request' | 'middle';

/** The first user message marked sticky, as `agentRun` holds the task (docs/design.md#task-survives). */
function withTaskPinned(messages: readonly ChatMessage[]): ChatMessage[] {
  const task = messages.findIndex((message) => message.role === 'user');
  const pinned = [...messages];
  const message = pinned[task];
  if (message !== undefined && message.sticky === undefined) pinned[task] = { ...message, sticky: true };
  return pinned;
}

/**
 * Our engine as a driver runs it: the previous round's conversation plus what was recorded since,
 * compacted when `needsCompaction` says so, summaries by the built-in offline summarizer.
 */
function engine(
  name: string,
  options: Omit<CompactionOptions, 'contextBudget'>,
  { pinTask = false, coldTrigger }: { pinTask?: boolean; coldTrigger?: number } = {},
): Policy {
  return {
    name,
    start: ({ trajectory, window, tokens, tokenizer, summarizerInput }) => {
      const warm = resolveOptions({ ...options, contextBudget: window });
      // docs/design.md#cold-cache: after a pause longer than the cache TTL, agentRun compacts at `coldTrigger`.
      const cold = coldTrigger === undefined ? warm : withColdTrigger(warm, coldTrigger);
      // The engine counts with what a user would configure for that model: the default estimator, or o200k BPE.
      const counter: TokenCounter | undefined = tokenizer === 'o200k' ? createBpeCounter() : undefined;
      const recorded = pinTask ? withTaskPinned(trajectory) : trajectory;
      let managed: ChatMessage[] = [];
      let seen = 0;
      return (end, expired) => {
        const resolved = expired ? cold : warm;
        const conversation = managed.concat(recorded.slice(seen, end));
        seen = end;
        managed = conversation;
        const round: Round = { ...quiet, messages: conversation, viewTokens: tokens(conversation) };
        if (!needsCompactionCore(conversation, resolved, {}, counter)) return round;
        let summarizerTokens = 0;
        let summarizerRequests = 0;
        const answer = (step: SummarizeStep) => {
          summarizerRequests += 1;
          if (summarizerInput === 'request') summarizerTokens += tokens(summarizerMessages(step.request));
          return { kind: 'summary' as const, text: extractiveSummary(step.request) };
        };
        const result = runCompactionSteps(compactionSteps(conversation, resolved, {}, counter), answer);
        if (summarizerInput === 'middle' && result.summary !== null) {
          // The variant that prices the summarized messages themselves, uncapped.
          const regions = findRegions(conversation, resolved.keepRecent);
          summarizerTokens = tokens(
            conversation.filter((_, index) => index <= result.cutIndex && regions.removable[index] === 1),
          );
        }
        managed = result.messages;
        const rewrote = result.dropped > 0 || result.elisions.length > 0;
        return {
          ...round,
          messages: managed,
          compactions: rewrote ? 1 : 0,
          summarizerTokens,
          summarizerRequests,
          aboveMark: result.aboveMark === undefined ? 0 : 1,
          ...(rewrote ? { rewrite: { before: conversation, result, toolResultCap: resolved.toolResultCap } } : {}),
        };
      };
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Pricing
// ---------------------------------------------------------------------------------------------

interface Prices {
  cachedPrice: number;
  summarizerPrice: number;
}

interface Totals {
  requests: number;
  inputTokens: number;
  cachedTokens: number;
  summarizerTokens: number;
  summarizerRequests: number;
  /** Rounds whose compaction asked the summarizer at least once. */
  summarizing: number;
  billed: number;
  coldRounds: number;
  overWindow: number;
  compactions: number;
  thrash: number;
  aboveMark: number;
  probes: number;
  retained: number;
}

function emptyTotals(): Totals {
  return {
    requests: 0,
    inputTokens: 0,
    cachedTokens: 0,
    summarizerTokens: 0,
    summarizerRequests: 0,
    summarizing: 0,
    billed: 0,
    coldRounds: 0,
    overWindow: 0,
    compactions: 0,
    thrash: 0,
    aboveMark: 0,
    probes: 0,
    retained: 0,
  };
}

function addInto(into: Totals, from: Totals): void {
  for (const key of Object.keys(into) as Array<keyof Totals>) into[key] += from[key];
}

/** End indices of the requests: one per assistant turn, skipping a leading one. */
function requestEnds(trajectory: readonly ChatMessage[]): number[] {
  const ends: number[] = [];
  trajectory.forEach((message, index) => {
    if (message.role === 'assistant' && index > 0) ends.push(index);
  });
  return ends;
}

// ---------------------------------------------------------------------------------------------
// --explain-retention: where the identifiers a turn mentions but its request lacks were lost
// ---------------------------------------------------------------------------------------------

/** Misses by cause, summed over the corpus. */
type Causes = Map<string, number>;

const CAUSE = {
  elided: 'elided (a stub replaced the tool result)',
  truncated: 'truncated (cut middle-out to fit)',
  trimmed: 'hard trim (dropped, no summary)',
  capped: 'summarized: cut from the summarizer input (toolResultCap)',
  leftOut: 'summarized: the summarizer left it out',
  leftOutRequired: 'summarized: left out although coverage required it',
  earlierSummary: 'summarized: an earlier summary held it, the new one let it go',
  never: 'never in the policy view (no rewrite lost it)',
} as const;

/**
 * Why each identifier of `before` that `result` no longer holds was lost: the fate of the last
 * message of `before` that held it — elided, truncated, trimmed, or replaced by the summary (and
 * then whether the summarizer saw it at all, and whether the coverage check required it).
 */
function lostInRewrite(
  { before, result, toolResultCap }: NonNullable<Round['rewrite']>,
  lost: Map<string, string>,
): void {
  const after = new Set<string>();
  for (const message of result.messages) for (const identifier of identifiersOf(message)) after.add(identifier);
  const kept = new Set(result.messages.map(jsonOf));
  const elided = new Set(result.elisions.map(({ index }) => index));
  const truncated = new Set((result.truncations ?? []).map(({ index }) => index));
  const required = new Set(result.coverage?.missing ?? []);
  const fate = (index: number, message: ChatMessage, identifier: string): string => {
    if (truncated.has(index)) return CAUSE.truncated;
    if (elided.has(index)) return CAUSE.elided;
    if (kept.has(jsonOf(message))) return CAUSE.never; // still there: another message's fate decides
    if (result.summary === null) return CAUSE.trimmed;
    if (isSummaryMessage(message)) return CAUSE.earlierSummary;
    const [seen] = capMiddle([message], toolResultCap);
    if (seen !== undefined && !identifiersOf(seen).has(identifier)) return CAUSE.capped;
    return required.has(identifier) ? CAUSE.leftOutRequired : CAUSE.leftOut;
  };
  before.forEach((message, index) => {
    for (const identifier of identifiersOf(message)) {
      if (after.has(identifier)) continue;
      const cause = fate(index, message, identifier);
      if (cause !== CAUSE.never || !lost.has(identifier)) lost.set(identifier, cause);
    }
  });
}

function runPolicy(
  policy: Policy,
  context: PolicyContext,
  prices: Prices,
  causes?: Causes,
  expired: readonly boolean[] = [],
): Totals {
  const { trajectory, window, tokens } = context;
  const next = policy.start(context);
  const probes = retentionProbes(trajectory);
  const totals = emptyTotals();
  let previous: ChatMessage[] = [];
  let compactedLastRound = false;
  /** With `causes`: per identifier, why the latest rewrite that removed it did. */
  const lost = new Map<string, string>();
  for (const [position, end] of requestEnds(trajectory).entries()) {
    const cold = expired[position] === true;
    const round = next(end, cold);
    if (causes !== undefined && round.rewrite !== undefined) lostInRewrite(round.rewrite, lost);
    const request = round.messages;
    const requestTokens = tokens(request);
    let prefix = 0;
    while (prefix < request.length && prefix < previous.length && sameMessage(request[prefix], previous[prefix]))
      prefix += 1;
    // A request after a pause longer than the cache TTL reads nothing from the cache.
    const cached = cold ? 0 : tokens(request.slice(0, prefix));
    totals.requests += 1;
    totals.inputTokens += requestTokens;
    totals.cachedTokens += cached;
    totals.summarizerTokens += round.summarizerTokens;
    totals.summarizerRequests += round.summarizerRequests;
    if (round.summarizerRequests > 0) totals.summarizing += 1;
    totals.billed +=
      requestTokens - cached + prices.cachedPrice * cached + prices.summarizerPrice * round.summarizerTokens;
    if (requestTokens - cached > 0.5 * requestTokens) totals.coldRounds += 1;
    if (requestTokens > window) totals.overWindow += 1;
    totals.compactions += round.compactions;
    totals.aboveMark += round.aboveMark;
    // Thrash: a rewrite in two consecutive rounds while the conversation was within the window.
    if (round.compactions > 0 && compactedLastRound && round.viewTokens <= window) totals.thrash += 1;
    compactedLastRound = round.compactions > 0;
    const mentioned = probes.get(end) ?? [];
    if (mentioned.length > 0) {
      const sets = request.map(identifiersOf);
      totals.probes += mentioned.length;
      const missed = mentioned.filter((identifier) => !sets.some((set) => set.has(identifier)));
      totals.retained += mentioned.length - missed.length;
      for (const identifier of causes === undefined ? [] : missed) {
        const cause = lost.get(identifier) ?? CAUSE.never;
        causes?.set(cause, (causes.get(cause) ?? 0) + 1);
      }
    }
    previous = request;
  }
  return totals;
}

// ---------------------------------------------------------------------------------------------
// Policies of the run
// ---------------------------------------------------------------------------------------------

const ANCHORS: Policy[] = [none, rollingMask(10), clearToolUses(3, 0.5, 0), clearToolUses(3, 0.5, 5_000)];

const ENGINES: Policy[] = [
  engine('engine, reference-exact (REFERENCE_EXACT)', { ...REFERENCE_EXACT }),
  engine('engine, reference-exact + ageObservations', { ...REFERENCE_EXACT, ageObservations: true }),
  engine('engine, defaults', {}),
  engine("engine, defaults, summaryCoverage: 'carry'", { summaryCoverage: 'carry' }),
  engine("engine, defaults, summaryCoverage: 'off'", { summaryCoverage: 'off' }),
  engine('engine, defaults + ageObservations', { ageObservations: true }),
  engine('engine, defaults, task pinned (agentRun)', {}, { pinTask: true }),
  engine('engine, defaults + ageObservations, task pinned', { ageObservations: true }, { pinTask: true }),
];

/** One rule of docs/design.md#economics at a time set back to the reference, with ageObservations off and on. */
const ABLATION: Policy[] = (
  [
    ['recentWindowGivesWay: false', { recentWindowGivesWay: false }],
    ["elisionEndsPass: 'at-mark'", { elisionEndsPass: 'at-mark' }],
    ["elisionEndsPass: 'under-trigger'", { elisionEndsPass: 'under-trigger' }],
    ["elisionEpochs: 'batch'", { elisionEpochs: 'batch' }],
    ["elisionEpochs: 'never'", { elisionEpochs: 'never' }],
    ['deferShallowCompactions: false', { deferShallowCompactions: false }],
    ['stubsShorterOnly: false', { stubsShorterOnly: false }],
    ['trimBeatsOverflow: false', { trimBeatsOverflow: false }],
    ["summaryCoverage: 'off'", { summaryCoverage: 'off' }],
  ] as const
).flatMap(([label, change]) => [
  engine(`defaults, ${label}`, { ...change }),
  engine(`defaults + ageObservations, ${label}`, { ...change, ageObservations: true }),
]);

/**
 * The elision rules at a smaller `ageReclaimMin` (10,000 characters), where this corpus has
 * enough dead tool output for epochs and elision-only passes to happen at all.
 */
const ELISION_ABLATION: Policy[] = (
  [
    ['defaults', {}],
    ["elisionEpochs: 'batch'", { elisionEpochs: 'batch' }],
    ["elisionEpochs: 'never'", { elisionEpochs: 'never' }],
    ["elisionEndsPass: 'at-mark'", { elisionEndsPass: 'at-mark' }],
    ["elisionEndsPass: 'under-trigger'", { elisionEndsPass: 'under-trigger' }],
    ['REFERENCE_EXACT', { ...REFERENCE_EXACT }],
  ] as const
).map(([label, change]) =>
  engine(`ageObservations, ageReclaimMin 10,000, ${label}`, {
    ...change,
    ageObservations: true,
    ageReclaimMin: 10_000,
  }),
);

// ---------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------

interface Flags {
  /** `--pauses`: pauses drawn from bench/pauses.ts before each request; the cold-cache table. */
  pauses: { seed: number; cacheTtlMs: number } | undefined;
  dir: string;
  prices: Prices;
  summarizerInput: SummarizerInput;
  tokenizers: Tokenizer[];
  ablation: boolean;
  explain: boolean;
  write: boolean;
}

function parseFlags(argv: readonly string[]): Flags {
  const value = (name: string): string | undefined => {
    const index = argv.indexOf(`--${name}`);
    if (index < 0) return undefined;
    const given = argv[index + 1];
    if (given === undefined || given.startsWith('--')) throw new Error(`--${name}: needs a value`);
    return given;
  };
  const price = (name: string, fallback: number): number => {
    const given = value(name);
    if (given === undefined) return fallback;
    const parsed = Number(given);
    if (!Number.isFinite(parsed) || parsed < 0)
      throw new Error(`--${name}: expected a non-negative number, got "${given}"`);
    return parsed;
  };
  const summarizerInput = value('summarizer-input') ?? 'request';
  if (summarizerInput !== 'request' && summarizerInput !== 'middle')
    throw new Error(`--summarizer-input: expected request or middle, got "${summarizerInput}"`);
  const tokenizer = value('tokenizer') ?? 'both';
  if (tokenizer !== 'chars' && tokenizer !== 'o200k' && tokenizer !== 'both')
    throw new Error(`--tokenizer: expected chars, o200k or both, got "${tokenizer}"`);
  const seed = Number(value('seed') ?? '1');
  if (!Number.isSafeInteger(seed)) throw new Error(`--seed: expected a whole number, got "${value('seed')}"`);
  const ttl = value('cache-ttl') ?? DEFAULT_CACHE_TTL;
  const cacheTtlMs = durationTextMs(ttl);
  if (cacheTtlMs === undefined) throw new Error(`--cache-ttl: expected a duration like 5m, got "${ttl}"`);
  return {
    pauses: argv.includes('--pauses') ? { seed, cacheTtlMs } : undefined,
    dir: resolve(value('corpus') ?? join(REPO_ROOT, 'examples/trajectories')),
    prices: { cachedPrice: price('cached-price', 0.1), summarizerPrice: price('summarizer-price', 0.25) },
    summarizerInput,
    tokenizers: tokenizer === 'both' ? ['chars', 'o200k'] : [tokenizer],
    ablation: argv.includes('--ablation'),
    explain: argv.includes('--explain-retention'),
    write: argv.includes('--write'),
  };
}

interface Table {
  tokenizer: Tokenizer;
  policies: Policy[];
  totals: Totals[];
  /** With `--explain-retention`: per policy, its misses by cause. */
  causes: Causes[];
  /** With `--pauses`: requests in all, those after a wait, and those after a pause longer than the cache TTL. */
  cold: { requests: number; waits: number; expired: number };
}

function runAll(
  trajectories: readonly Trajectory[],
  policies: readonly Policy[],
  tokenizer: Tokenizer,
  flags: Flags,
): Table {
  const messageTokens = messageTokenizer(tokenizer);
  const tokens = (messages: readonly ChatMessage[]): number =>
    messages.reduce((sum, message) => sum + messageTokens(message), 0);
  const totals = policies.map(() => emptyTotals());
  const causes = policies.map((): Causes => new Map());
  const cold = { requests: 0, waits: 0, expired: 0 };
  trajectories.forEach(({ name, messages }, position) => {
    const started = performance.now();
    const ends = requestEnds(messages);
    const pauses = flags.pauses === undefined ? [] : pausesFor(name, ends.length, flags.pauses.seed);
    const expired = pauses.map(({ ms }) => flags.pauses !== undefined && ms > flags.pauses.cacheTtlMs);
    cold.requests += ends.length;
    cold.waits += pauses.filter(({ kind }) => kind === 'wait').length;
    cold.expired += expired.filter(Boolean).length;
    const finalContext = tokens(messages.slice(0, ends.at(-1) ?? messages.length));
    const window = Math.max(8_000, Math.floor(finalContext / 2));
    const context: PolicyContext = {
      trajectory: messages,
      window,
      tokens,
      tokenizer,
      summarizerInput: flags.summarizerInput,
    };
    const billed: string[] = [];
    let base = 1;
    policies.forEach((policy, index) => {
      const result = runPolicy(policy, context, flags.prices, flags.explain ? causes[index] : undefined, expired);
      if (index === 0) base = result.billed;
      const into = totals[index];
      if (into !== undefined) addInto(into, result);
      billed.push((result.billed / base).toFixed(2));
    });
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    progress(
      `[${tokenizer} ${position + 1}/${trajectories.length}] ${name}: window ${window.toLocaleString('en-US')}, ${ends.length} requests, ${seconds} s — billed × none: ${billed.join(' ')}`,
    );
  });
  return { tokenizer, policies: [...policies], totals, causes, cold };
}

const grouped = (value: number): string => Math.round(value).toLocaleString('en-US');
const percent = (part: number, whole: number): string => (whole === 0 ? '–' : `${((100 * part) / whole).toFixed(1)}%`);

/** `69 (1.86)`: the requests, and how many each compaction that asked the summarizer sent on average. */
const requestsCell = (t: Totals): string =>
  t.summarizing === 0 ? '0' : `${t.summarizerRequests} (${(t.summarizerRequests / t.summarizing).toFixed(2)})`;

/**
 * The table, a row per policy. With `nearRowsLeftOut`, an ablation row that bills within 10 tokens of a
 * row above it is left out (the rule it sets back changes nothing on these trajectories); the README's
 * table is printed so, stdout's whole.
 */
function markdownTable({ policies, totals }: Table, nearRowsLeftOut = false): string {
  const base = totals[0]?.billed ?? 1;
  const ablation = new Set([...ABLATION, ...ELISION_ABLATION]);
  const rows = policies.flatMap((policy, index) => {
    const t = totals[index] ?? emptyTotals();
    const near = totals.slice(0, index).some((above) => Math.abs(above.billed - t.billed) <= 10);
    if (nearRowsLeftOut && ablation.has(policy) && near) return [];
    return [
      `| ${policy.name} | ${(t.billed / base).toFixed(3)} | ${grouped(t.billed)} | ${percent(t.cachedTokens, t.inputTokens)} | ${t.coldRounds} | ${t.overWindow} | ${t.compactions} | ${t.thrash} | ${t.aboveMark} | ${requestsCell(t)} | ${grouped(t.summarizerTokens)} | ${percent(t.retained, t.probes)} |`,
    ];
  });
  return [
    '| policy | billed × none | billed input tokens | cache hit rate | rounds > 50% uncached | rounds over the window | compactions | thrash | above the mark | summarizer requests (per compaction that asked) | summarizer input tokens | retention |',
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...rows,
  ].join('\n');
}

/** Our engine's policies, one row each: the identifiers retention missed, by where they were lost. */
function causesTable({ tokenizer, policies, totals, causes }: Table): string {
  const names = Object.values(CAUSE);
  const rows = policies.flatMap((policy, index) => {
    if (ANCHORS.includes(policy)) return [];
    const t = totals[index] ?? emptyTotals();
    const byCause = causes[index] ?? new Map<string, number>();
    const cells = names.map((name) => String(byCause.get(name) ?? 0));
    return [`| ${policy.name} | ${t.probes - t.retained} of ${t.probes} | ${cells.join(' | ')} |`];
  });
  return [
    `Missed identifiers by where they were lost (${tokenizer} tokens):`,
    '',
    `| policy | missed | ${names.join(' | ')} |`,
    `|---|--:|${names.map(() => '--:|').join('')}`,
    ...rows,
    '',
  ].join('\n');
}

/** The cache TTL `--pauses` assumes: OpenAI's and Anthropic's default prompt cache lifetime (docs/agent-runs.md#cold-cache). */
const DEFAULT_CACHE_TTL = '5m';

/** The cold triggers `--pauses` compares; agentRun's default (`DEFAULT_COLD_TRIGGER`) among them. */
const COLD_TRIGGERS = [0.4, 0.5, 0.6, 0.7];

/** `--pauses`: the engine's defaults (as `compact()` runs them, and as agentRun does, task pinned) without the cold-cache rule and with it. */
function pausePolicies(): Policy[] {
  const withRule = (label: string, pinTask: boolean): Policy[] =>
    COLD_TRIGGERS.map((coldTrigger) =>
      engine(
        `${label}, cold-cache rule, coldTrigger ${coldTrigger}${coldTrigger === DEFAULT_COLD_TRIGGER ? ' (default)' : ''}`,
        {},
        { pinTask, coldTrigger },
      ),
    );
  return [
    none,
    engine('engine, defaults (compact()), no cold-cache rule', {}),
    ...withRule('engine, defaults (compact())', false),
    engine('engine, defaults, task pinned (agentRun), no cold-cache rule', {}, { pinTask: true }),
    ...withRule('engine, defaults, task pinned (agentRun)', true),
  ];
}

/** `--pauses`: the figures page bench/cold-cache-figures.md. */
function coldCacheMain(flags: Flags, trajectories: readonly Trajectory[], pauses: NonNullable<Flags['pauses']>): void {
  const started = performance.now();
  // The page says where each policy's missed identifiers were lost (--explain-retention's table), always.
  const explained = { ...flags, explain: true };
  const tables = flags.tokenizers.map((tokenizer) => runAll(trajectories, pausePolicies(), tokenizer, explained));
  const seconds = (performance.now() - started) / 1000;
  const shownDir = relative(REPO_ROOT, flags.dir) || '.';
  const command = `npm run bench:cost --${shownDir === 'examples/trajectories' ? '' : ` --corpus ${shownDir}`} --pauses --seed ${pauses.seed} --cache-ttl ${pauses.cacheTtlMs / 60_000}m${flags.write ? ' --write' : ''}`;
  const cpu = cpus()[0]?.model.trim() ?? 'unknown CPU';
  const cold = tables[0]?.cold ?? { requests: 0, waits: 0, expired: 0 };
  const page = [
    '# Cold-cache compaction: figures',
    '',
    'What `compaction.cacheTtl` and `coldTrigger` save ([docs/design.md#cold-cache](../docs/design.md#cold-cache)): after a pause longer',
    "than the provider's cache lifetime the next request reads nothing from the cache whatever the run does, so a",
    'compaction then re-bills nothing; `agentRun` compacts at the lower `coldTrigger` there. The corpus trajectories',
    `carry no timing, so the pauses are drawn: ${describePauses()} (\`bench/pauses.ts\`, seed ${pauses.seed}, per trajectory by its name).`,
    `A pause over the cache TTL (${pauses.cacheTtlMs / 60_000} min) makes its request cold: cached tokens 0. Over the ${trajectories.length} trajectories`,
    `(${shownDir}): ${cold.requests} requests, ${cold.waits} after a wait, ${cold.expired} after a pause over the TTL (${percent(cold.expired, cold.requests)}).`,
    'Every row is priced on the same pauses; `billed × none` is against no compaction on the same paused corpus.',
    '',
    `Command: \`${command}\`. Prices: cached input ${flags.prices.cachedPrice}, summarizer input ${flags.prices.summarizerPrice}. ${seconds.toFixed(0)} s on ${availableParallelism()} CPUs (${cpu}), Node ${process.version}, ${new Date().toISOString().slice(0, 10)}.`,
    '',
    ...tables.flatMap((table) => [
      `Token count: ${table.tokenizer === 'chars' ? '4 + ceil(chars / 4) per message' : '4 + o200k BPE tokens per message (the engine counts with `createBpeCounter()`)'}.`,
      '',
      markdownTable(table),
      '',
      causesTable(table),
    ]),
  ].join('\n');
  console.log(page);
  if (flags.write) {
    writeFileSync(COLD_CACHE_FIGURES, page);
    progress(`wrote ${relative(REPO_ROOT, COLD_CACHE_FIGURES)}`);
  }
}

function main(): void {
  const flags = parseFlags(process.argv.slice(2));
  const trajectories = loadTrajectories(flags.dir);
  const requests = trajectories.reduce((sum, { messages }) => sum + requestEnds(messages).length, 0);
  progress(`bench:cost — ${trajectories.length} trajectories (${requests} requests) from ${flags.dir}`);
  if (flags.pauses !== undefined) return coldCacheMain(flags, trajectories, flags.pauses);
  const started = performance.now();
  const tables = flags.tokenizers.map((tokenizer) => {
    const policies = [
      ...ANCHORS,
      ...ENGINES,
      ...(flags.ablation && tokenizer === 'chars' ? [...ABLATION, ...ELISION_ABLATION] : []),
    ];
    return runAll(trajectories, policies, tokenizer, flags);
  });
  const seconds = (performance.now() - started) / 1000;

  const shownDir = relative(REPO_ROOT, flags.dir) || '.';
  const command = `npm run bench:cost --${shownDir === 'examples/trajectories' ? '' : ` --corpus ${shownDir}`}${flags.ablation ? ' --ablation' : ''}${flags.write ? ' --write' : ''}`;
  const cpu = cpus()[0]?.model.trim() ?? 'unknown CPU';
  const tokenCount = (table: Table): string =>
    `Token count: ${table.tokenizer === 'chars' ? '4 + ceil(chars / 4) per message' : '4 + o200k BPE tokens per message (the engine counts with `createBpeCounter()`)'}.`;
  const heading = [
    `### ${trajectories.length} trajectories from \`${shownDir}\` (${requests} requests)`,
    '',
    `Date: ${new Date().toISOString().slice(0, 10)}. Command: \`${command}\`. Prices: cached input ${flags.prices.cachedPrice}, summarizer input ${flags.prices.summarizerPrice} (summarizer input = ${flags.summarizerInput === 'request' ? 'its request as sent' : 'the summarized messages, uncapped'}). ${seconds.toFixed(0)} s on ${availableParallelism()} CPUs (${cpu}), Node ${process.version}, load average ${loadavg()[0]?.toFixed(1)} at the end.`,
    '',
  ];
  const section = [...heading, ...tables.flatMap((table) => [tokenCount(table), '', markdownTable(table), ''])].join(
    '\n',
  );
  // The README keeps one table: the first tokenizer's (chars unless --tokenizer o200k).
  const first = tables[0];
  const readmeSection =
    first === undefined ? section : [...heading, tokenCount(first), '', markdownTable(first, true), ''].join('\n');
  console.log(section);
  if (flags.explain) for (const table of tables) console.log(causesTable(table));

  if (flags.write) {
    writeReadmeSection('cost', readmeSection.trimEnd());
    progress('wrote the bench:cost section of bench/README.md');
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) main();
