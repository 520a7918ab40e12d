// Node: how long the pure core takes to plan and run one compaction — on the corpus trajectories,
// on generated conversations of 1k, 10k and 100k messages, and on a 128k-token and a 1M-token
// conversation at their own window; the 1M-token one and the 10k one again with a summarizer's
// window far below their middle (summarized in pieces) — with an instant fake summarizer.
// Run: `npm run bench:core` (the repository's trajectories; `-- --corpus DIR` or
// COMPACTOR_EXTENDED_CORPUS adds the extended corpus). Figures and the machine are recorded in
// bench/README.md, "Core".
import { readFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { constants, performance, PerformanceObserver } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { Compactor, type ChatMessage, type CompactionResult, type CompactorOptions } from '../src/index.js';
import { defaultCounter } from '../src/core/counting/tokens.js';
import { compactionSteps, type SummarizeOutcome, type SummarizeStep } from '../src/core/compaction/engine.js';
import { runCompactionSteps, fakeSummaryText } from '../corpus/fake-summarizer.js';
import { needsCompactionCore } from '../src/core/compaction/needs-compaction.js';
import {
  SUMMARY_OUTPUT_SHARE,
  resolveOptions,
  type CompactionOptions,
  type ResolvedOptions,
} from '../src/core/compaction/options.js';
import { inputRoom } from '../src/core/compaction/pieces.js';
import { summarizerMessages } from '../src/core/compaction/transcript.js';
import { benchmarkCorpus } from '../corpus/index.js';

const SIZES = [1_000, 10_000, 100_000] as const;
/** Timed runs per measurement (after the warm-up), by conversation size. */
const RUNS: Record<number, number> = { 1_000: 31, 10_000: 31, 100_000: 21 };
const WARMUP = 3;
/** Runs of each size in the paired growth measurement (10k and 100k in turn). */
const PAIRED_RUNS = 21;
const CONTEXT_BUDGET = 128_000;

function progress(line: string): void {
  process.stderr.write(`${line}\n`);
}

// ---------------------------------------------------------------------------------------------
// A realistic generated conversation (deterministic: a seeded PRNG)
// ---------------------------------------------------------------------------------------------

/** mulberry32: small, fast, deterministic. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = Math.imul(state ^ (state >>> 15), 1 | state);
    mixed = (mixed + Math.imul(mixed ^ (mixed >>> 7), 61 | mixed)) ^ mixed;
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const WORDS =
  'the of and to in is for on that with as it by this from be or are at an not function return const import export class if else error test file line src'.split(
    ' ',
  );

/** A flat string of about `length` characters (joined words; not a rope of repeats). */
function prose(random: () => number, length: number): string {
  const words: string[] = [];
  let size = 0;
  while (size < length) {
    const word = WORDS[Math.floor(random() * WORDS.length)] ?? 'x';
    words.push(word);
    size += word.length + 1;
  }
  return words.join(' ').slice(0, length);
}

/**
 * `count` messages: a system prompt and a task, then rounds of an assistant turn with 1–3 tool
 * calls and their results (a few hundred to a few thousand characters), a user message now and
 * then. Arguments name 300 files, so call identities repeat as they do in real runs.
 */
export function generateConversation(count: number, seed = 42): ChatMessage[] {
  const random = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  // A pool of distinct flat strings: cheap to build, realistic to scan.
  const results = Array.from({ length: 1500 }, () => prose(random, 200 + Math.floor(random() * 3800)));
  const thoughts = Array.from({ length: 300 }, () => prose(random, 30 + Math.floor(random() * 250)));
  const tools = ['read_file', 'bash', 'grep', 'edit_file'] as const;
  const messages: ChatMessage[] = [
    { role: 'system', content: prose(random, 2000) },
    { role: 'user', content: prose(random, 500) },
  ];
  let nextCall = 0;
  while (messages.length < count) {
    if (random() < 0.08) {
      messages.push({ role: 'user', content: pick(thoughts) });
      continue;
    }
    const calls = 1 + Math.floor(random() * 3);
    const ids = Array.from({ length: calls }, () => `call_${nextCall++}`);
    messages.push({
      role: 'assistant',
      content: random() < 0.3 ? null : pick(thoughts),
      tool_calls: ids.map((id) => {
        const name = pick(tools);
        const args =
          name === 'bash'
            ? { command: `npm test -- file${Math.floor(random() * 300)}` }
            : { path: `src/file${Math.floor(random() * 300)}.ts` };
        return { id, type: 'function' as const, function: { name, arguments: JSON.stringify(args) } };
      }),
    });
    for (const id of ids) messages.push({ role: 'tool', tool_call_id: id, content: pick(results) });
  }
  return messages.slice(0, count);
}

// ---------------------------------------------------------------------------------------------
// Measuring
// ---------------------------------------------------------------------------------------------

/**
 * The instant summarizer's text, from what the request holds without rendering it (as the workflow
 * driver sends it: the instruction and the middle as messages).
 */
const quickSummaryText = (middle: number): string =>
  `## Goals\nContinue the task (summary of ${middle} messages).\n## Decisions\nNone recorded.\n## Files and commands\nsrc/app.ts; npm test\n## Unresolved\nNothing.`;
const instantSummary = (step: SummarizeStep): SummarizeOutcome => ({
  kind: 'summary',
  text: quickSummaryText(step.transcript.messages),
});
/** The same, from a summarizer that reads the rendered request (an in-process model client sends it). */
const renderingSummary = (step: SummarizeStep): SummarizeOutcome => ({
  kind: 'summary',
  text: fakeSummaryText(step.request, 'ok'),
});
/** The instant summarizer for `Compactor`: reads the middle, not the rendered text (as the extractive one does). */
const middleSummarizer: CompactorOptions['summarizer'] = {
  summarize: (request) => Promise.resolve({ text: quickSummaryText(request.middle.length) }),
};
const failedSummary = (): SummarizeOutcome => ({
  kind: 'failed',
  reason: 'exhausted',
  message: 'bench: summarizer down',
});

function median(values: readonly number[]): number {
  const sorted = [...values].sort((left, right) => left - right);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] ?? 0) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

/**
 * Medians in ms. `cpu` is user + system time of this process: on a shared machine it is the
 * steadier figure, since it leaves out the time the process waited for a core. `collections`: the
 * garbage collections that started inside the timed runs, per run (`ms`: the time of all of them,
 * other kinds included).
 */
interface Timing {
  wall: number;
  cpu: number;
  collections?: { young: number; full: number; ms: number };
}

/**
 * A garbage collection of this process, as Node's `gc` performance entries report it: a young
 * one (scavenge), a full one (mark-compact), or another kind (a step of incremental marking, weak
 * callbacks), which counts only in the time.
 */
interface Collection {
  start: number;
  duration: number;
  kind: 'young' | 'full' | 'other';
}

/**
 * Every collection since the last `measure` began its timed runs (entries come a little after
 * the collection, on the event loop: `collectionsIn` waits for them). A timed run that allocates
 * about as much as the young generation holds (a 100k-message pass) has a young collection in
 * most runs, which its median carries; bench/README.md#core says what that does to the growth
 * figure.
 */
const collections: Collection[] = [];
const collectionObserver = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    const kind = ((entry as PerformanceEntry & { detail?: { kind?: number } }).detail ?? {}).kind;
    collections.push({
      start: entry.startTime,
      duration: entry.duration,
      kind:
        kind === constants.NODE_PERFORMANCE_GC_MINOR
          ? 'young'
          : kind === constants.NODE_PERFORMANCE_GC_MAJOR
            ? 'full'
            : 'other',
    });
  }
});

/**
 * CPU time the hypervisor gave to others while this machine's CPUs wanted it, in seconds: the
 * `steal` column of /proc/stat (in USER_HZ, 100 a second on Linux). Undefined where there is no
 * /proc/stat. A run with seconds of it was not on a quiet machine, whatever its load average says.
 */
function stolenSeconds(): number | undefined {
  let first: string | undefined;
  try {
    first = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0];
  } catch {
    return undefined;
  }
  const fields = first?.trim().split(/\s+/) ?? [];
  const steal = Number(fields[8]);
  return fields[0] === 'cpu' && Number.isFinite(steal) ? steal / 100 : undefined;
}

/**
 * Times `runs` runs of `fn` after `WARMUP` untimed ones; with `countCollections`, also the
 * collections that started inside them (which waits for the observer: only where it is printed).
 */
async function measure(fn: () => unknown, runs: number, countCollections = false): Promise<Timing> {
  for (let run = 0; run < WARMUP; run += 1) await fn();
  collections.length = 0;
  const timed: TimedRun[] = [];
  for (let run = 0; run < runs; run += 1) timed.push(await timedRun(fn));
  const timing = timingOf(timed);
  if (!countCollections) return timing;
  return {
    ...timing,
    collections: await collectionsIn(
      timed.map(({ start, end }): [number, number] => [start, end]),
      runs,
    ),
  };
}

/**
 * Times `fns` in turn, run by run (`runs` runs of each after `WARMUP` untimed rounds): what moves
 * the host's speed during the measurement moves each of them alike. One timing per function, with
 * the collections that started inside its runs (a run that follows a large one may pay for a young
 * collection of the garbage that one left).
 */
async function measureInTurn(fns: readonly (() => unknown)[], runs: number): Promise<Timing[]> {
  for (let run = 0; run < WARMUP; run += 1) for (const fn of fns) await fn();
  collections.length = 0;
  const timed = fns.map((): TimedRun[] => []);
  for (let run = 0; run < runs; run += 1)
    for (const [index, fn] of fns.entries()) timed[index]?.push(await timedRun(fn));
  return Promise.all(
    timed.map(async (runsOf) => ({
      ...timingOf(runsOf),
      collections: await collectionsIn(
        runsOf.map(({ start, end }): [number, number] => [start, end]),
        runs,
      ),
    })),
  );
}

/** One run's wall-clock window (performance.now) and the CPU time this process used in it, in ms. */
interface TimedRun {
  start: number;
  end: number;
  cpu: number;
}

async function timedRun(fn: () => unknown): Promise<TimedRun> {
  const cpuStart = process.cpuUsage();
  const start = performance.now();
  await fn();
  const end = performance.now();
  const used = process.cpuUsage(cpuStart);
  return { start, end, cpu: (used.user + used.system) / 1000 };
}

/** The medians of timed runs. */
function timingOf(timed: readonly TimedRun[]): Timing {
  return { wall: median(timed.map(({ start, end }) => end - start)), cpu: median(timed.map(({ cpu }) => cpu)) };
}

/** The collections that started inside `windows`, per run. */
async function collectionsIn(windows: readonly [number, number][], runs: number): Promise<Timing['collections']> {
  // The observer hears of a collection on a later turn of the event loop.
  await new Promise((resolve) => setTimeout(resolve, 20));
  let young = 0;
  let full = 0;
  let ms = 0;
  for (const { start, duration, kind } of collections) {
    if (!windows.some(([from, to]) => start >= from && start < to)) continue;
    if (kind === 'young') young += 1;
    if (kind === 'full') full += 1;
    ms += duration;
  }
  return { young: young / runs, full: full / runs, ms: ms / runs };
}

interface Figures {
  plan: Timing;
  compact: Timing;
  /** compact (summary) with a summarizer that reads the rendered request. */
  rendered: Timing;
  trim: Timing;
  compactor: Timing;
  result: CompactionResult;
  /** Characters of the summarizer request (instruction + capped transcript). */
  requestChars: number;
}

/** `compact (summary)`: `compactionSteps` run to a summary by the instant summarizer. */
function compactOnce(messages: ChatMessage[], options: ResolvedOptions): CompactionResult {
  return runCompactionSteps(compactionSteps(messages, options, {}, defaultCounter), instantSummary);
}

async function figuresFor(messages: ChatMessage[], options: ResolvedOptions, runs: number): Promise<Figures> {
  const compact = (): CompactionResult => compactOnce(messages, options);
  let requestChars = 0;
  const result = runCompactionSteps(compactionSteps(messages, options, {}, defaultCounter), (step) => {
    requestChars = step.transcript.characters;
    return instantSummary(step);
  });
  const { retryBackoffMs, ...compactionOptions } = options;
  const compactor = new Compactor({
    ...compactionOptions,
    retryBackoff: retryBackoffMs,
    summarizer: middleSummarizer,
  });
  return {
    plan: await measure(() => needsCompactionCore(messages, options, {}, defaultCounter), runs),
    compact: await measure(compact, runs, true),
    rendered: await measure(
      () => runCompactionSteps(compactionSteps(messages, options, {}, defaultCounter), renderingSummary),
      runs,
    ),
    trim: await measure(
      () => runCompactionSteps(compactionSteps(messages, options, {}, defaultCounter), failedSummary),
      runs,
    ),
    compactor: await measure(() => compactor.compact(messages), runs),
    result,
    requestChars,
  };
}

/** The shortest prefix of `messages` of at least `tokens` tokens (all of them when they hold fewer). */
function prefixOf(messages: readonly ChatMessage[], tokens: number): ChatMessage[] {
  let low = 1;
  let high = messages.length;
  while (low < high) {
    const probe = (low + high) >> 1;
    if (defaultCounter.count(messages.slice(0, probe)) >= tokens) high = probe;
    else low = probe + 1;
  }
  return messages.slice(0, high);
}

/** Timed runs of a compaction with the summarizer's window (hundreds of requests each). */
const WINDOW_RUNS = 5;

/**
 * One compaction with `summarizerContextWindow`: once with a summarizer that counts every request it
 * gets (the rendered request, as a model would read it), then timed with one that reads the middle.
 */
async function summarizerWindowRow(
  messages: ChatMessage[],
  options: CompactionOptions & { summarizerContextWindow: number },
): Promise<{ requests: number; largest: number; timing: Timing; result: CompactionResult }> {
  let requests = 0;
  let largest = 0;
  const counting = new Compactor({
    ...options,
    summarizer: {
      summarize: (request) => {
        requests += 1;
        largest = Math.max(largest, defaultCounter.count(summarizerMessages(request)));
        return middleSummarizer.summarize(request);
      },
    },
  });
  const result = await counting.compact(messages);
  const timed = new Compactor({ ...options, summarizer: middleSummarizer });
  return { requests, largest, timing: await measure(() => timed.compact(messages), WINDOW_RUNS), result };
}

const ms = (value: number): string => (value < 10 ? value.toFixed(2) : value.toFixed(1));
const cell = ({ wall, cpu }: Timing): string => `${ms(wall)} (${ms(cpu)})`;
/** The collections a timed run of `size` messages had, and their time. */
const collectionCell = ({ collections: counted }: Timing, size: number): string => {
  const { young = Number.NaN, full = Number.NaN, ms = Number.NaN } = counted ?? {};
  return `${young.toFixed(2)} young + ${full.toFixed(2)} full at ${size / 1000}k (${ms.toFixed(1)} ms)`;
};
const signedPercent = (fraction: number): string => `${fraction >= 0 ? '+' : ''}${(fraction * 100).toFixed(0)}%`;
const outcome = (result: CompactionResult): string =>
  result.summary !== null
    ? `summary, ${result.dropped} dropped, ${result.elisions.length} elided`
    : result.fallback
      ? `trim, ${result.dropped} dropped`
      : result.elisions.length > 0
        ? `elision only, ${result.elisions.length} elided`
        : 'no-op';

async function main(): Promise<void> {
  const cpu = cpus()[0]?.model.trim() ?? 'unknown CPU';
  const machine = `${availableParallelism()} CPUs (nproc), ${cpu}, Node ${process.version}, ${process.platform}/${process.arch}`;
  const loadAtStart = loadavg()[0] ?? 0;
  const stolenAtStart = stolenSeconds();
  collectionObserver.observe({ entryTypes: ['gc'] });
  progress(`bench:core on ${machine}, load average ${loadAtStart.toFixed(1)}`);
  // Read the trajectories first, so that a bad --corpus stops the run before the long measurements.
  const { trajectories: corpus, label } = benchmarkCorpus();
  progress(`trajectories: ${label}`);
  const lines: string[] = [];

  // Generated conversations, each made when it is measured: the 100k one (141M characters) kept
  // alive through the other measurements would add its marking to their garbage collection.
  const generated = (size: number): ChatMessage[] => {
    const start = performance.now();
    const messages = generateConversation(size);
    const chars = messages.reduce(
      (sum, message) => sum + (typeof message.content === 'string' ? message.content.length : 0),
      0,
    );
    progress(
      `generated ${size} messages (${(chars / 1e6).toFixed(1)}M chars, ${defaultCounter.count(messages)} tokens) in ${ms(performance.now() - start)} ms`,
    );
    return messages;
  };
  lines.push(
    '### Generated conversations',
    '',
    `contextBudget ${CONTEXT_BUDGET}, default options otherwise (keepRecent 8, toolResultCap 2000, ageMinChars 2000, ageReclaimMin 40000).`,
    `Each cell: median wall ms (median CPU ms) of ${Object.values(RUNS).join(' / ')} runs after ${WARMUP} warm-ups.`,
    '',
    '| messages | ageObservations | needsCompaction | compact (summary) | compact (summary), request rendered | compact (hard trim) | `Compactor.compact` | summarizer request | outcome |',
    '|---:|---|---:|---:|---:|---:|---:|---:|---|',
  );
  const compactTimes = new Map<string, Timing>();
  for (const ageObservations of [false, true]) {
    const options = resolveOptions({ contextBudget: CONTEXT_BUDGET, ageObservations });
    for (const size of SIZES) {
      const messages = generated(size);
      progress(`measuring ${size} messages, ageObservations ${ageObservations} ...`);
      const figures = await figuresFor(messages, options, RUNS[size] ?? 5);
      compactTimes.set(`${size}/${ageObservations}`, figures.compact);
      progress(
        `  plan ${cell(figures.plan)}, compact ${cell(figures.compact)}, rendered ${cell(figures.rendered)}, trim ${cell(figures.trim)}, Compactor ${cell(figures.compactor)} ms`,
      );
      lines.push(
        `| ${size.toLocaleString('en')} | ${ageObservations ? 'on' : 'off'} | ${cell(figures.plan)} | ${cell(figures.compact)} | ${cell(figures.rendered)} | ${cell(figures.trim)} | ${cell(figures.compactor)} | ${(figures.requestChars / 1e6).toFixed(1)}M chars | ${outcome(figures.result)} |`,
      );
    }
  }
  lines.push('', 'Growth of compact (summary), ratio of medians (10.0 per ×10 is linear):', '');
  for (const ageObservations of [false, true]) {
    const at = (size: number): Timing =>
      compactTimes.get(`${size}/${ageObservations}`) ?? { wall: Number.NaN, cpu: Number.NaN };
    const ratio = (from: number, to: number, key: 'wall' | 'cpu'): string => (at(to)[key] / at(from)[key]).toFixed(1);
    const gc = (size: number): string => collectionCell(at(size), size);
    lines.push(
      `- ageObservations ${ageObservations ? 'on' : 'off'}: 10k → 100k ×${ratio(10_000, 100_000, 'wall')} wall, ×${ratio(10_000, 100_000, 'cpu')} CPU` +
        ` (1k → 10k ×${ratio(1_000, 10_000, 'wall')} wall, ×${ratio(1_000, 10_000, 'cpu')} CPU);` +
        ` collections a timed run (their time a run): ${gc(10_000)}, ${gc(100_000)}`,
    );
  }
  // The growth again, the two sizes measured in turn, run by run: this host's speed moves within
  // minutes (bench/README.md#core), and two medians measured a minute apart carry that move into
  // their ratio. Measured in turn, both sizes run on the same host.
  lines.push(
    '',
    `Growth of compact (summary) measured in pairs: the 10k and the 100k conversation in turn, run by run, ${PAIRED_RUNS} runs each after ${WARMUP} warm-ups; median wall ms (median CPU ms):`,
    '',
  );
  {
    const pair = [generated(10_000), generated(100_000)];
    for (const ageObservations of [false, true]) {
      progress(`measuring 10000 and 100000 messages in turn, ageObservations ${ageObservations} ...`);
      const options = resolveOptions({ contextBudget: CONTEXT_BUDGET, ageObservations });
      const [small, large] = await measureInTurn(
        pair.map((messages) => () => compactOnce(messages, options)),
        PAIRED_RUNS,
      );
      if (small === undefined || large === undefined) throw new Error('bench: a pair measured nothing');
      lines.push(
        `- ageObservations ${ageObservations ? 'on' : 'off'}: 10k ${cell(small)}, 100k ${cell(large)}: ×${(large.wall / small.wall).toFixed(1)} wall, ×${(large.cpu / small.cpu).toFixed(1)} CPU;` +
          ` collections a timed run (their time a run): ${collectionCell(small, 10_000)}, ${collectionCell(large, 100_000)}`,
      );
    }
  }
  // Filled in at the end of the run, when the 10k figures are measured again.
  const steadinessAt = lines.length;

  // A conversation as long as its window: 128k tokens, and 1M (about 4 MB of text).
  lines.push(
    '',
    '### A conversation at its window',
    '',
    'The generated conversation up to the first message that takes it to `contextBudget` tokens (over the trigger), compacted at that budget; default options otherwise; cells as above, of 15 runs.',
    '',
    '| contextBudget | messages | text | ageObservations | needsCompaction | compact (summary) | compact (summary), request rendered | compact (hard trim) | `Compactor.compact` | summarizer request | outcome |',
    '|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|',
  );
  const longest = generated(10_000);
  const atMillion = prefixOf(longest, 1_000_000);
  for (const [budget, messages] of [
    [CONTEXT_BUDGET, prefixOf(longest, CONTEXT_BUDGET)],
    [1_000_000, atMillion],
  ] as const) {
    const text = messages.reduce(
      (sum, message) => sum + (typeof message.content === 'string' ? message.content.length : 0),
      0,
    );
    for (const ageObservations of [false, true]) {
      progress(
        `measuring a ${budget}-token conversation (${messages.length} messages), ageObservations ${ageObservations} ...`,
      );
      const figures = await figuresFor(messages, resolveOptions({ contextBudget: budget, ageObservations }), 15);
      lines.push(
        `| ${budget.toLocaleString('en')} | ${messages.length.toLocaleString('en')} | ${(text / 1e6).toFixed(2)}M chars | ${ageObservations ? 'on' : 'off'} | ${cell(figures.plan)} | ${cell(figures.compact)} | ${cell(figures.rendered)} | ${cell(figures.trim)} | ${cell(figures.compactor)} | ${(figures.requestChars / 1e6).toFixed(1)}M chars | ${outcome(figures.result)} |`,
      );
    }
  }

  // The summarizer's own window: a middle far larger than it is summarized in pieces, each request
  // within the window (docs/design.md#summarizer-window).
  lines.push(
    '',
    "### The summarizer's window",
    '',
    `\`Compactor.compact\` with \`summarizerContextWindow\` far below the middle: the 1M-token conversation above, and the 10k-message one at contextBudget ${CONTEXT_BUDGET}; default options otherwise. *Pieces*: the result's \`summaryPieces\`; *requests*: what the summarizer was sent (a piece each, and the final fold's retry when its summary misses an identifier the kept messages use); *largest*: the largest of them in tokens (the default counter), against the most a request may hold, the window less the summary's share (${SUMMARY_OUTPUT_SHARE}). Median wall ms (median CPU ms) of ${WINDOW_RUNS} runs after ${WARMUP} warm-ups, with a summarizer that reads the middle, not the rendered text.`,
    '',
    '| conversation | contextBudget | ageObservations | summarizerContextWindow | pieces | requests | largest request, tokens | most a request may hold | `Compactor.compact` | outcome |',
    '|---|---:|---|---:|---:|---:|---:|---:|---:|---|',
  );
  for (const [name, messages, budget] of [
    [`1M tokens (${atMillion.length.toLocaleString('en')} messages)`, atMillion, 1_000_000],
    [`${longest.length.toLocaleString('en')} messages`, longest, CONTEXT_BUDGET],
  ] as const) {
    for (const ageObservations of [false, true]) {
      for (const summarizerContextWindow of [128_000, 8_000]) {
        progress(
          `measuring ${name}, ageObservations ${ageObservations}, summarizer window ${summarizerContextWindow} ...`,
        );
        const row = await summarizerWindowRow(messages, {
          contextBudget: budget,
          ageObservations,
          summarizerContextWindow,
        });
        lines.push(
          `| ${name} | ${budget.toLocaleString('en')} | ${ageObservations ? 'on' : 'off'} | ${summarizerContextWindow.toLocaleString('en')} | ${(row.result.summaryPieces ?? 1).toLocaleString('en')} | ${row.requests.toLocaleString('en')} | ${row.largest.toLocaleString('en')} | ${inputRoom(summarizerContextWindow).toLocaleString('en')} | ${cell(row.timing)} | ${outcome(row.result)} |`,
        );
      }
    }
  }

  // Corpus.
  lines.push(
    '',
    '### Corpus trajectories',
    '',
    `Trajectories: ${label}.`,
    'contextBudget 32000 (every trajectory is over its trigger); compact with the instant summarizer; median wall ms (median CPU ms) of 21 runs after 3 warm-ups.',
    '',
    '| trajectory | messages | tokens | ageObservations off | ageObservations on | outcome (on) |',
    '|---|---:|---:|---:|---:|---|',
  );
  const totals = { off: { wall: 0, cpu: 0 }, on: { wall: 0, cpu: 0 } };
  for (const { name, messages } of corpus) {
    progress(`measuring corpus ${name} ...`);
    const run = async (ageObservations: boolean): Promise<{ timing: Timing; result: CompactionResult }> => {
      const options = resolveOptions({ contextBudget: 32_000, ageObservations });
      const compact = (): CompactionResult => compactOnce(messages, options);
      return { timing: await measure(compact, 21), result: compact() };
    };
    const off = await run(false);
    const on = await run(true);
    for (const [key, timing] of [
      ['off', off.timing],
      ['on', on.timing],
    ] as const) {
      totals[key].wall += timing.wall;
      totals[key].cpu += timing.cpu;
    }
    lines.push(
      `| ${name} | ${messages.length} | ${defaultCounter.count(messages)} | ${cell(off.timing)} | ${cell(on.timing)} | ${outcome(on.result)} |`,
    );
  }
  lines.push(`| **all ${corpus.length}, summed** | | | ${cell(totals.off)} | ${cell(totals.on)} | |`);

  // The machine's speed can move during a run with neither load nor steal time to show it
  // (bench/README.md#core): the 10k figures, measured again last, show how far one measurement
  // moved within the run (the process's state differs too: its heap, what is compiled).
  const again = generated(10_000);
  const steadiness: string[] = [];
  for (const ageObservations of [false, true]) {
    progress(`measuring 10000 messages again, ageObservations ${ageObservations} ...`);
    const options = resolveOptions({ contextBudget: CONTEXT_BUDGET, ageObservations });
    const first = compactTimes.get(`10000/${ageObservations}`)?.wall ?? Number.NaN;
    const last = (await measure(() => compactOnce(again, options), RUNS[10_000] ?? 5)).wall;
    steadiness.push(
      `${ageObservations ? 'on' : 'off'} ${ms(last)} ms (${ms(first)} in the table, ${signedPercent(last / first - 1)})`,
    );
  }
  lines.splice(
    steadinessAt,
    0,
    '',
    `The 10k compact (summary) measured again at the end of the run: ${steadiness.join(', ')}. Apart by more than a tenth, the same measurement did not give the same figure twice in this run, and the growth figures are no steadier.`,
  );

  collectionObserver.disconnect();
  const stolenAtEnd = stolenSeconds();
  const stolen =
    stolenAtStart === undefined || stolenAtEnd === undefined
      ? ''
      : `; ${(stolenAtEnd - stolenAtStart).toFixed(1)} s of CPU time taken by the host during the run (steal time)`;
  const load = `load average ${loadAtStart.toFixed(1)} at the start, ${(loadavg()[0] ?? 0).toFixed(1)} at the end${stolen}`;
  process.stdout.write(`\n## Core\n\nMachine: ${machine}; ${load}.\n\n${lines.join('\n')}\n`);
}

// Run only as a script, so a profiling script can import `generateConversation`.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
