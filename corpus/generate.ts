// Dev-only and pure (tests and benchmarks; src/ never imports corpus/): seeded agent trajectories
// in the corpus format — a JSON array of OpenAI chat messages — that cover what the real ones
// cover: parallel tool calls answered out of order, a whole-disk `find` of 650,000 characters,
// calls left unanswered at the end, system / developer / `sticky` / `depth` messages, user
// messages mid-run, and long runs of any length. Every choice comes from a PRNG seeded by the
// trajectory's name, so a name always gives the same bytes.
import type { ChatMessage, ToolCall } from '../src/core/types.js';
import {
  createProject,
  diffOutput,
  diskFindOutput,
  editOutput,
  findOutput,
  grepOutput,
  listingOutput,
  NOUNS,
  readOutput,
  testOutput,
  type Language,
  type Project,
  type SourceFile,
} from './content.js';
import { createRandom, type Random } from './random.js';

/** What one generated tool call asks and what the recording says it returned (null: never answered). */
interface PlannedCall {
  name: string;
  args: Record<string, unknown>;
  result: string | null;
}

interface Action {
  thought: string;
  call: PlannedCall;
}

type ActionKind = 'ls' | 'find' | 'grep' | 'read' | 'test-fail' | 'test-pass' | 'edit' | 'diff';

const ID_CHARACTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** Appends messages and hands out unique OpenAI-style call ids. */
class TrajectoryBuilder {
  readonly messages: ChatMessage[] = [];
  private readonly ids = new Set<string>();

  constructor(private readonly random: Random) {}

  private callId(): string {
    for (;;) {
      let id = 'call_';
      for (let index = 0; index < 24; index += 1) id += this.random.pick([...ID_CHARACTERS]);
      if (!this.ids.has(id)) {
        this.ids.add(id);
        return id;
      }
    }
  }

  push(message: ChatMessage): void {
    this.messages.push(message);
  }

  /**
   * One assistant turn and the results the recording holds for it. `shuffle`: the results arrive
   * in completion order, not call order (as parallel tools finish); calls whose result is null stay
   * unanswered.
   */
  turn(content: string | null, calls: readonly PlannedCall[], { shuffle = false }: { shuffle?: boolean } = {}): void {
    const toolCalls: ToolCall[] = calls.map((call) => ({
      id: this.callId(),
      type: 'function',
      function: { name: call.name, arguments: JSON.stringify(call.args) },
    }));
    this.messages.push(
      toolCalls.length === 0
        ? { role: 'assistant', content: content ?? '' }
        : { role: 'assistant', content, tool_calls: toolCalls },
    );
    const answered = calls.flatMap((call, position) => {
      const id = toolCalls[position]?.id;
      return call.result === null || id === undefined
        ? []
        : [{ role: 'tool' as const, tool_call_id: id, content: call.result }];
    });
    this.messages.push(...(shuffle ? this.random.shuffled(answered) : answered));
  }
}

const REASONS = [
  'the importer leaves optional columns out of the row instead of setting them to None',
  'the cache is filled before the config is loaded, so the lookup sees an empty table',
  'a refactoring renamed the field but the old spelling is still read in one branch',
  'the batch is flushed twice when the last chunk is exactly full',
] as const;

/** An agent fixing a bug in a made-up project: writes the prompts, chooses actions, renders the calls. */
class AgentSession {
  readonly random: Random;
  readonly project: Project;
  readonly bug: { file: SourceFile; method: string; error: string; key: string; test: string; message: string };
  /** Output by call: asking the same thing again gets the same text (and repeats a call identity). */
  private readonly outputs = new Map<string, string>();
  private edits = 0;

  constructor(
    readonly name: string,
    language: Language,
  ) {
    this.random = createRandom(name);
    this.project = createProject(this.random, language);
    const file = this.random.pick(this.project.files);
    const method = file.methods[0] ?? 'parse_row';
    const noun = this.random.pick(NOUNS);
    const key = language === 'python' ? `${noun}_id` : `${noun}Id`;
    this.bug = {
      file,
      method,
      error: this.random.pick(this.project.errors),
      key,
      test: language === 'python' ? `test_${method}_without_${noun}` : `${method} without ${noun}`,
      message: language === 'python' ? `'${key}'` : `${key} is undefined`,
    };
  }

  private get testCommand(): string {
    const { root, language } = this.project;
    const { file } = this.bug;
    if (language === 'python') return `cd ${root} && python -m pytest ${file.test} -q`;
    if (language === 'typescript') return `cd ${root} && npx vitest run ${file.test}`;
    return `cd ${root} && mvn -q test -Dtest=${file.className}Test`;
  }

  systemPrompt(): string {
    return [
      'You are a software engineering agent working in a checked-out repository. Solve the task by running tools; do not ask the user to run anything.',
      '',
      'Tools:',
      '- bash: run a shell command in the repository (`{"command": "..."}`); long output is returned in full.',
      '- read_file: print a file with line numbers (`{"path": "...", "view_range": [start, end]}`, the range is optional).',
      '- grep: search the repository for a regular expression (`{"pattern": "...", "path": "..."}`).',
      '- edit_file: replace one exact occurrence of `old_str` with `new_str` in a file.',
      '',
      'Work in small steps: reproduce the problem, find the cause, make the smallest change that fixes it, run the tests, and say what you changed.',
    ].join('\n');
  }

  task(): string {
    const { file, method, error, key, test, message } = this.bug;
    const language = this.project.language;
    const snippet =
      language === 'python'
        ? [
            `from ${this.project.name}.${file.pkg} import ${file.className}`,
            '',
            `${file.className}(load_config()).${method}({"amount": "12.50"})`,
          ]
        : language === 'typescript'
          ? [
              `import { ${file.className} } from './src/${file.pkg}/index.js';`,
              '',
              `new ${file.className}(loadConfig()).${method}({ amount: '12.50' });`,
            ]
          : [
              `${file.className} subject = new ${file.className}(Config.load());`,
              `subject.${method}(Row.of("amount", "12.50"), false);`,
            ];
    return [
      `Fix the bug in ${this.project.name}: \`${file.className}.${method}\` raises ${error} when a row has no \`${key}\`.`,
      '',
      'Steps to reproduce:',
      '```',
      ...snippet,
      '```',
      `Expected: rows without \`${key}\` are skipped. Actual: \`${error}: ${message}\`.`,
      `The failing test is \`${file.test}\` (${test}). Keep the public API of \`${file.className}\` unchanged.`,
    ].join('\n');
  }

  /** The call with its output; the same call (name and arguments) asked again gets the same text. */
  private once(name: string, args: Record<string, unknown>, render: () => string): PlannedCall {
    const key = `${name} ${JSON.stringify(args)}`;
    let result = this.outputs.get(key);
    if (result === undefined) {
      result = render();
      this.outputs.set(key, result);
    }
    return { name, args, result };
  }

  /** One tool call of `kind` and the thought that goes with it; `size` fixes the output's length (else a size typical of the kind). */
  action(kind: ActionKind, size?: number): Action {
    const { random, project, bug } = this;
    const root = project.root;
    const file = random.chance(0.35) ? bug.file : random.pick(project.files);
    const method = random.pick(file.methods);
    const sized = (min: number, max: number): number => size ?? random.int(min, max);
    switch (kind) {
      case 'ls': {
        const directory = file.path.split('/').slice(0, -1).join('/');
        return {
          thought: random.pick([
            `Let me look at the layout of \`${directory}\` first.`,
            `I'll list \`${directory}\` to see which modules sit next to \`${file.path}\`.`,
          ]),
          call: this.once('bash', { command: `ls -la ${root}/${directory}` }, () =>
            listingOutput(project, random, directory, sized(300, 1800)),
          ),
        };
      }
      case 'find':
        return {
          thought: 'Let me find the source and test files of the project.',
          call: this.once(
            'bash',
            { command: `cd ${root} && find . -type f -name "*.${file.path.split('.').at(-1) ?? 'txt'}" | sort` },
            () => findOutput(project, sized(600, 3000)),
          ),
        };
      case 'grep': {
        const identifier = random.chance(0.5) ? bug.method : method;
        return {
          thought: random.pick([
            `I'll search for \`${identifier}\` to find its callers.`,
            `Let me check where \`${identifier}\` is used.`,
            `Where else is \`${identifier}\` called? Let me grep for it.`,
          ]),
          call: this.once('grep', { pattern: identifier, path: random.chance(0.5) ? 'src' : '.' }, () =>
            grepOutput(project, random, identifier, sized(300, 3500)),
          ),
        };
      }
      case 'read':
        return {
          thought: random.pick(
            [
              `Let me open \`${file.path}\` to see how \`${file.className}.${method}\` handles a missing \`${bug.key}\`.`,
              `I need to read \`${file.path}\` before changing anything.`,
            ].concat(
              this.outputs.has(`read_file ${JSON.stringify({ path: file.path })}`)
                ? [`Let me read \`${file.path}\` again to check \`${method}\`.`]
                : [],
            ),
          ),
          call: this.once('read_file', { path: file.path }, () =>
            readOutput(project, file, sized(1500, 7000), `${this.name}:${file.path}`),
          ),
        };
      case 'test-fail':
        return {
          thought: random.pick([
            `I'll run \`${bug.file.test}\` to reproduce the failure.`,
            `Let me run the tests for \`${bug.file.className}\` again.`,
          ]),
          call: {
            name: 'bash',
            args: { command: this.testCommand },
            result: testOutput(project, random, {
              file: bug.file,
              failing: {
                test: bug.test.replaceAll(' ', '_'),
                method: bug.method,
                error: bug.error,
                message: bug.message,
              },
              size: sized(900, 4000),
            }),
          },
        };
      case 'test-pass':
        return {
          thought: random.pick([
            'Let me run the tests again to confirm the fix.',
            `The change is in; running \`${bug.file.test}\` once more.`,
          ]),
          call: {
            name: 'bash',
            args: { command: this.testCommand },
            result: testOutput(project, random, { file: bug.file, size: sized(600, 3000) }),
          },
        };
      case 'edit': {
        this.edits += 1;
        const target = this.edits === 1 ? bug.file : file;
        const oldText = project.language === 'python' ? `value = row["${bug.key}"]` : `const value = row.${bug.key}!;`;
        const newText =
          project.language === 'python'
            ? `value = row.get("${bug.key}")\n        if value is None:\n            continue`
            : `const value = row.${bug.key};\n    if (value === undefined) continue;`;
        return {
          thought:
            this.edits === 1
              ? `The root cause is that \`${bug.file.className}.${bug.method}\` reads \`${bug.key}\` without checking it, because ${random.pick(REASONS)}. I will make it skip such rows instead.`
              : random.pick([
                  `I will also guard \`${method}\` in \`${file.path}\` the same way.`,
                  `I will update \`${file.path}\` so that \`${method}\` keeps working without \`${bug.key}\`.`,
                ]),
          call: {
            name: 'edit_file',
            args: { path: target.path, old_str: oldText, new_str: newText },
            result: editOutput(project, target, `${this.name}:${target.path}`, random.int(20, 240), sized(500, 900)),
          },
        };
      }
      case 'diff':
        return {
          thought: 'Let me review the whole change with `git diff`.',
          call: {
            name: 'bash',
            args: { command: `cd ${root} && git diff` },
            result: diffOutput(project, random, bug.file, sized(500, 2500), `${this.name}:diff:${this.edits}`),
          },
        };
    }
  }
}

const LOOKING: readonly ActionKind[] = ['read', 'read', 'grep', 'ls', 'find'];
const INVESTIGATING: readonly ActionKind[] = ['read', 'grep', 'read'];

/** Exploring first, then reproducing, reading and editing, then verifying: the kinds of one turn's calls by position in the run. */
function planTurn(random: Random, progress: number, parallel: number): ActionKind[] {
  if (progress < 0.12)
    return random.chance(parallel) ? random.shuffled(LOOKING).slice(0, random.int(2, 4)) : [random.pick(LOOKING)];
  if (progress < 0.2) return ['test-fail'];
  if (progress < 0.75) {
    if (random.chance(0.15)) return ['edit'];
    if (random.chance(0.1)) return ['test-fail'];
    return random.chance(parallel)
      ? random.shuffled(INVESTIGATING).slice(0, random.int(2, 3))
      : [random.pick(INVESTIGATING)];
  }
  if (random.chance(0.35)) return ['test-pass'];
  if (random.chance(0.2)) return ['diff'];
  return random.chance(parallel) ? ['grep', 'grep'] : [random.pick(INVESTIGATING.slice(0, 2))];
}

function turns(
  session: AgentSession,
  builder: TrajectoryBuilder,
  count: number,
  { parallel = 0, shuffle = 0 }: { parallel?: number; shuffle?: number } = {},
  between?: (turn: number) => void,
): void {
  for (let turn = 0; turn < count; turn += 1) {
    const actions = planTurn(session.random, turn / count, parallel).map((kind) => session.action(kind));
    const thought =
      actions.length > 1
        ? `${actions[0]?.thought ?? ''} I'll run ${actions.length} lookups at once.`
        : (actions[0]?.thought ?? null);
    builder.turn(
      session.random.chance(0.15) && actions.length === 1 ? null : thought,
      actions.map((action) => action.call),
      { shuffle: session.random.chance(shuffle) },
    );
    between?.(turn);
  }
}

/**
 * A TypeScript bug fix where most turns run 2–4 tools at once, results in completion order; the
 * last turn's `submit` is never answered. Like a Claude Code session log, it has no system prompt:
 * the task is the first message.
 */
function parallelCalls(name: string): ChatMessage[] {
  const session = new AgentSession(name, 'typescript');
  const builder = new TrajectoryBuilder(session.random);
  builder.push({ role: 'user', content: session.task() });
  turns(session, builder, 40, { parallel: 0.6, shuffle: 0.6 }, (turn) => {
    if (turn !== 22) return;
    builder.turn(
      `I have found the cause: \`${session.bug.file.className}.${session.bug.method}\` reads \`${session.bug.key}\` unconditionally. I have not changed the callers yet.`,
      [],
    );
    builder.push({
      role: 'user',
      content: 'Please continue working on the task. If you think you have solved it, run the tests and submit.',
    });
  });
  const check = session.action('test-pass');
  builder.turn(`${check.thought} Then I'll submit.`, [check.call, { name: 'submit', args: {}, result: null }], {
    shuffle: true,
  });
  return builder.messages;
}

/**
 * An in-context demonstration as SWE-agent sends it before the task: another session's steps as
 * text, about `size` characters.
 */
function demonstration(name: string, size: number): string {
  const session = new AgentSession(`${name}:demonstration`, 'python');
  const steps: string[] = [];
  let length = 0;
  for (let step = 0; length < size; step += 1) {
    const { thought, call } = session.action(planTurn(session.random, (step % 20) / 20, 0)[0] ?? 'read', 1200);
    const text = [
      `THOUGHT: ${thought}`,
      `ACTION: ${call.name} ${JSON.stringify(call.args)}`,
      'OBSERVATION:',
      call.result ?? '',
      '',
    ].join('\n');
    steps.push(text);
    length += text.length;
  }
  return [
    'Here is a demonstration of how to correctly accomplish this task.',
    'It is included to show you how to correctly use the interface. You do not need to follow exactly what is done in the demonstration.',
    '--- DEMONSTRATION ---',
    session.task(),
    '',
    ...steps,
    '--- END OF DEMONSTRATION ---',
  ].join('\n');
}

/** A Java bug fix (after a demonstration) whose last real step is a 650,000-character whole-disk `find`, followed by a cost-limit exit. */
function hugeResult(name: string): ChatMessage[] {
  const session = new AgentSession(name, 'java');
  const builder = new TrajectoryBuilder(session.random);
  builder.push({ role: 'system', content: session.systemPrompt() });
  builder.push({ role: 'user', content: demonstration(name, 19_000) });
  builder.push({ role: 'user', content: session.task() });
  turns(session, builder, 44);
  builder.turn(
    'The tests still use the old runtime. Let me find where the `runtime` directories are on this machine.',
    [{ name: 'bash', args: { command: 'find / -name "*runtime*"' }, result: diskFindOutput(session.random, 650_000) }],
  );
  builder.turn('Exit due to cost limit', [{ name: 'submit', args: {}, result: 'Exited (autosubmitted)' }]);
  return builder.messages;
}

/** A Python bug fix under a harness: a developer message, a sticky task, `depth` reminders, a system notice and user messages mid-run. */
function stickyInjections(name: string): ChatMessage[] {
  const session = new AgentSession(name, 'python');
  const builder = new TrajectoryBuilder(session.random);
  const { bug } = session;
  builder.push({ role: 'system', content: session.systemPrompt() });
  builder.push({
    role: 'developer',
    content: 'Tool policy: never run `git push` or `pip install`; the network is off. Prefer `read_file` over `cat`.',
  });
  builder.push({ role: 'user', content: session.task(), sticky: true });
  turns(session, builder, 40, { parallel: 0.2, shuffle: 0.5 }, (turn) => {
    if (turn === 6)
      builder.push({
        role: 'user',
        content: `Reminder: keep the change minimal and run \`python -m pytest ${bug.file.test} -q\` before you finish.`,
        depth: 2,
      });
    if (turn === 14) {
      builder.turn(
        `Should \`${bug.file.className}.${bug.method}\` skip rows without \`${bug.key}\`, or return an empty list for the whole batch?`,
        [],
      );
      builder.push({ role: 'user', content: 'Skip the row and log a warning; keep the signature as it is.' });
    }
    if (turn === 20)
      builder.push({
        role: 'system',
        content:
          'Note from the harness: the working tree was reset to origin/main by another job; re-read files before editing them.',
      });
    if (turn === 26)
      builder.push({
        role: 'user',
        content: `Constraint from the maintainers: do not change the public API of \`${bug.file.className}\`.`,
        sticky: true,
      });
    if (turn === 32)
      builder.push({ role: 'user', content: 'Reminder: say what you changed and why when you are done.', depth: 1 });
  });
  builder.turn(
    `I changed \`${bug.file.className}.${bug.method}\` in \`${bug.file.path}\` to skip rows without \`${bug.key}\` and log a warning; \`${bug.file.test}\` passes and the public API is unchanged.`,
    [],
  );
  return builder.messages;
}

/** Parameters of a long run. */
export interface LongRunOptions {
  /** Assistant turns, each with one tool call and its result. */
  rounds: number;
  /** Characters of each tool result (within one line below it). */
  resultChars: number;
  /** A user message after every this many rounds. @default 50 */
  userEvery?: number;
}

/** The name a long run goes by: `generated_long-run-<rounds>x<resultChars>`. */
export function longRunName({ rounds, resultChars }: LongRunOptions): string {
  return `generated_long-run-${rounds}x${resultChars}`;
}

/**
 * A long Python session: `rounds` turns of one tool call each, every result about `resultChars`
 * characters (file reads — often of the same file again —, greps, listings, test runs, diffs),
 * and a user nudging it on every `userEvery` rounds. Cheap: 1,000 rounds of 40,000 characters
 * (42 MB of JSON) took 0.25–0.5 s on a two-core development machine.
 */
export function generateLongRun(options: LongRunOptions): ChatMessage[] {
  const { rounds, resultChars, userEvery = 50 } = options;
  if (!Number.isInteger(rounds) || rounds < 1)
    throw new RangeError(`rounds: expected a positive integer, got ${rounds}`);
  if (!Number.isInteger(resultChars) || resultChars < 200)
    throw new RangeError(`resultChars: expected an integer of at least 200, got ${resultChars}`);
  if (!Number.isInteger(userEvery) || userEvery < 1)
    throw new RangeError(`userEvery: expected a positive integer, got ${userEvery}`);
  const name = longRunName(options);
  const session = new AgentSession(name, 'python');
  const builder = new TrajectoryBuilder(session.random);
  builder.push({ role: 'system', content: session.systemPrompt() });
  builder.push({ role: 'user', content: session.task() });
  for (let round = 0; round < rounds; round += 1) {
    const last = round === rounds - 1;
    const kind: ActionKind = last
      ? 'test-pass'
      : round === 2
        ? 'test-fail'
        : session.random.pick([
            'read',
            'read',
            'read',
            'grep',
            'grep',
            'test-fail',
            'ls',
            'find',
            'diff',
            'edit',
          ] as const);
    const action = session.action(kind, resultChars);
    builder.turn(action.thought, [action.call]);
    if (!last && (round + 1) % userEvery === 0)
      builder.push({
        role: 'user',
        content: `Please continue working on the task (${round + 1} of your steps so far). Run the tests before you stop.`,
      });
  }
  return builder.messages;
}

const PRESETS: Record<string, (name: string) => ChatMessage[]> = {
  'generated_huge-result': hugeResult,
  'generated_parallel-calls': parallelCalls,
  'generated_sticky-injections': stickyInjections,
};

/** The long run the repository set carries (the suite's own; benchmarks ask for bigger ones). */
export const REPOSITORY_LONG_RUN: LongRunOptions = { rounds: 100, resultChars: 1500 };

/** The generated trajectories of the repository set, by name, sorted. */
export const GENERATED_NAMES: readonly string[] = [...Object.keys(PRESETS), longRunName(REPOSITORY_LONG_RUN)].sort();

const LONG_RUN = /^generated_long-run-(\d+)x(\d+)$/;

/** True for a name {@link generateTrajectory} knows: a preset, or any `generated_long-run-<rounds>x<resultChars>`. */
export function isGeneratedName(name: string): boolean {
  return name in PRESETS || LONG_RUN.test(name);
}

/**
 * The generated trajectory `name`: one of {@link GENERATED_NAMES}, or a long run of any size named
 * `generated_long-run-<rounds>x<resultChars>` (e.g. `generated_long-run-240x10000`).
 */
export function generateTrajectory(name: string): ChatMessage[] {
  const preset = PRESETS[name];
  if (preset !== undefined) return preset(name);
  const longRun = LONG_RUN.exec(name);
  if (longRun !== null) return generateLongRun({ rounds: Number(longRun[1]), resultChars: Number(longRun[2]) });
  throw new RangeError(
    `no generated trajectory "${name}": expected one of ${GENERATED_NAMES.join(', ')} or generated_long-run-<rounds>x<resultChars>`,
  );
}
