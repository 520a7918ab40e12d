// Node (test support): a hostile model for agentRun — an OpenAI-compatible endpoint whose answers
// ask the built-in tools for what a careless or malicious model would (docs/design.md#tools): a
// catastrophic grep pattern, a thousand calls in one turn, arguments of a megabyte or nested ten
// thousand deep, arguments that are not JSON, tools that do not exist, paths with NUL bytes, lone
// surrogates, `..`, a symlink out of the root or a FIFO, limits at and past their edges, a model that
// never stops asking, and replies the conversation's rules refuse. Each class is named by the model
// a run asks for (`hostile-<class>`), so one endpoint serves many runs at once: the dev-server test
// (test/workflows/hostile-model.test.ts) and the chaos suite's `hostile-model` scenario on the cluster.
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChatMessage } from '../../src/core/types.js';
import type { AgentRunWorkflowInput } from '../../src/shared/agent-run.js';
import { MAX_TOOL_ARGUMENT_CHARS, MAX_TOOL_CALLS_PER_TURN } from '../../src/workflows/tool-dispatch.js';
import { assistantReply, type RecordedRequest, type ScriptedResponse } from './fake-openai.js';

interface HostileCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** How a hostile run must end. */
export type HostileEnd =
  { status: 'completed'; stopReason: 'completed' | 'maxRounds' } | { status: 'failed'; type: string };

export interface HostileClass {
  name: string;
  /** The tool calls of the model's turn (`endless`: every turn; the others: the first, then a plain answer). */
  calls: (turn: number) => HostileCall[];
  ends: HostileEnd;
  /** What the model must have read: each pattern matches at least one tool result of the run. */
  reads: RegExp[];
  /** @default 8 */
  maxRounds?: number;
  /** The run's compaction options. @default {} */
  compaction?: AgentRunWorkflowInput['compaction'];
}

const call = (id: string, name: string, args: string): HostileCall => ({
  id,
  type: 'function',
  function: { name, arguments: args },
});
const json = (value: unknown): string => JSON.stringify(value);
const read = (id: string, path: string): HostileCall => call(id, 'fs_read', json({ path }));

/**
 * The classes, in the order the suites run them. `grepSeconds` is the grep deadline of the workers
 * that serve them (the note the model reads names it).
 */
export function hostileClasses(grepSeconds: number): HostileClass[] {
  const stopped = new RegExp(`^no matches for /\\(a\\+\\)\\+\\$/ in evil\\.txt\\n\\[stopped after ${grepSeconds} s`);
  return [
    {
      name: 'catastrophic-grep',
      // 42 `a`s and a `!`: (a+)+$ tries 2^42 ways to split them before it fails.
      calls: () => [call('g1', 'grep', json({ pattern: '(a+)+$', path: 'evil.txt' }))],
      ends: { status: 'completed', stopReason: 'completed' },
      reads: [stopped],
    },
    {
      name: 'bad-patterns',
      calls: () => [
        call('p1', 'grep', json({ pattern: '(' })),
        call('p2', 'grep', json({ pattern: 'a'.repeat(1_001) })),
        call('p3', 'grep', json({ pattern: '[z-a]' })),
        call('p4', 'grep', json({ pattern: 42 })),
        call('p5', 'grep', json({ pattern: '' })),
      ],
      ends: { status: 'completed', stopReason: 'completed' },
      reads: [
        /^Error: grep: arguments\.pattern: Invalid regular expression: \/\(\/: Unterminated group/,
        /^Error: grep: arguments\.pattern: .*1000/,
        /^Error: grep: arguments\.pattern: Invalid regular expression: \/\[z-a\]\/: Range out of order/,
        /^Error: grep: arguments\.pattern: .*string/,
      ],
    },
    {
      name: 'many-calls',
      calls: () => Array.from({ length: 1_000 }, (_, index) => read(`m${index}`, 'a.txt')),
      ends: { status: 'completed', stopReason: 'completed' },
      reads: [/^ {5}1\talpha$/m, /^Error: this turn asked for 1000 tool calls; at most 64 run per turn/],
    },
    {
      name: 'huge-arguments',
      calls: () => [read('h1', 'x'.repeat(MAX_TOOL_ARGUMENT_CHARS + 16))],
      ends: { status: 'completed', stopReason: 'completed' },
      reads: [/^Error: the arguments of fs_read are \d+ characters, more than a tool call may carry/],
    },
    {
      name: 'deep-arguments',
      calls: () => [
        call('d1', 'fs_read', `${'['.repeat(50_000)}${']'.repeat(50_000)}`),
        call('d2', 'fs_read', `{"path":${'{"a":'.repeat(65)}1${'}'.repeat(65)}}`),
      ],
      ends: { status: 'completed', stopReason: 'completed' },
      reads: [/^Error: the arguments of fs_read nest deeper than 64 levels$/],
    },
    {
      name: 'malformed-arguments',
      calls: () => [
        call('j1', 'fs_read', '{"path": "a.txt"'),
        call('j2', 'fs_read', 'read a.txt please'),
        call('j3', 'fs_read', 'null'),
        call('j4', 'fs_read', '[1,2]'),
        call('j5', 'fs_read', '{"path":"a.txt","mode":"w"}'),
        call('j6', 'grep', json({ pattern: 'a', maxResults: 1e12 })),
      ],
      ends: { status: 'completed', stopReason: 'completed' },
      reads: [
        /^Error: the arguments of fs_read are not valid JSON: \{"path": "a\.txt"/,
        /^Error: fs_read: /,
        /^Error: grep: /,
      ],
    },
    {
      name: 'unknown-tools',
      calls: () => [
        call('u1', 'rm_rf', '{}'),
        call('u2', '__proto__', '{}'),
        call('u3', 'constructor', '{}'),
        call('u4', 'FS_READ', json({ path: 'a.txt' })),
      ],
      ends: { status: 'completed', stopReason: 'completed' },
      reads: [
        /^Error: there is no tool named "rm_rf"/,
        /^Error: there is no tool named "__proto__"/,
        /^Error: there is no tool named "constructor"/,
      ],
    },
    {
      name: 'odd-paths',
      calls: () => [
        read('o1', 'a\u0000.txt'),
        call('o2', 'fs_read', '{"path":"\\ud800.txt"}'),
        read('o3', '../../../../etc/passwd'),
        read('o4', '/etc/passwd'),
        read('o5', 'outside/passwd'),
        read('o6', 'special/pipe'),
        read('o7', 'x'.repeat(100_000)),
        read('o8', '.'),
        call('o9', 'fs_list', json({ path: 'outside' })),
        call('o10', 'grep', json({ pattern: 'x', path: 'special/pipe' })),
      ],
      ends: { status: 'completed', stopReason: 'completed' },
      reads: [
        /^Error: fs_read: .*outside the tool root/,
        /^Error: fs_list: .*outside the tool root/,
        /^Error: fs_read: special\/pipe is not a regular file/,
        /^Error: grep: special\/pipe is not a regular file/,
        /^Error: fs_read: \. is a directory/,
      ],
    },
    {
      name: 'limits',
      calls: () => [
        call('l1', 'grep', json({ pattern: 'line', path: 'lines.txt', maxResults: 1_000 })),
        call('l2', 'fs_read', json({ path: 'big.txt', offset: 1e15 })),
        call('l3', 'fs_read', json({ path: 'big.txt', limit: 2 ** 31 })),
        call('l4', 'fs_list', json({ path: 'many' })),
        call('l5', 'fs_read', json({ path: 'a.txt', offset: 0 })),
      ],
      ends: { status: 'completed', stopReason: 'completed' },
      reads: [
        /\[stopped after 1000 matches\]$/,
        /\[the file is \d+ bytes: read only its first 10000000\]/,
        /\[stopped after 10000 entries\]/,
        /^Error: fs_read: arguments\.offset/,
      ],
    },
    {
      name: 'recall',
      // docs/design.md#recall: the ids a model passes to recall, from a real one to a path and a
      // 10,000-character string; every one but the first is an error the model reads.
      compaction: { recall: true },
      calls: () => [
        call('r1', 'recall', json({ id: 'm1' })),
        call('r2', 'recall', json({ id: '' })),
        call('r3', 'recall', json({ id: 'x'.repeat(10_000) })),
        call('r4', 'recall', json({ id: '../m1' })),
        call('r5', 'recall', json({ id: 'm999999' })),
        call('r7', 'recall', json({ id: 7 })),
        call('r8', 'recall', json({})),
        call('r9', 'recall', json({ id: 'm1', path: '/etc/passwd' })),
      ],
      ends: { status: 'completed', stopReason: 'completed' },
      reads: [
        /^\[system\]\nYou are a careful agent\.$/,
        /^Error: recall: no message with id "": ids are "m" and a number/,
        /^Error: recall: arguments\.id is 10000 characters; an id has at most 64$/,
        /^Error: recall: no message with id "\.\.\/m1"/,
        /^Error: recall: no message with id "m999999" in this run's transcript$/,
        /^Error: recall: arguments\.id must be a string/,
        /^Error: recall: unknown argument "path" \(it takes only id\)$/,
      ],
    },
    {
      name: 'endless',
      // Never answers: asks for a listing every turn, until maxRounds ends the run.
      calls: (turn) => [call(`e${turn}`, 'fs_list', json({ path: '.' }))],
      ends: { status: 'completed', stopReason: 'maxRounds' },
      reads: [/^a\.txt$/m],
      maxRounds: 6,
    },
    {
      name: 'broken-replies',
      // Two calls of one id: no result could say which it answers. The chat activity refuses the
      // reply (Chat.Malformed, retried); a model that keeps sending it ends the run, typed.
      calls: () => [read('same', 'a.txt'), read('same', 'evil.txt')],
      ends: { status: 'failed', type: 'RunFailed.BackendsFailed' },
      reads: [],
    },
  ];
}

/** The files the hostile classes ask about, written under `root` (which must exist and be empty). */
export function writeHostileToolRoot(root: string): void {
  writeFileSync(join(root, 'a.txt'), 'alpha\n');
  writeFileSync(join(root, 'evil.txt'), `${'a'.repeat(42)}!\n`);
  // 12 MB: over fs_read's 10 MB (and skipped by grep, over its 2 MB per file).
  writeFileSync(join(root, 'big.txt'), Buffer.alloc(12_000_000, 'a line of\n'));
  writeFileSync(join(root, 'lines.txt'), 'a line of\n'.repeat(2_000));
  mkdirSync(join(root, 'many'));
  for (let index = 0; index < 10_050; index += 1) writeFileSync(join(root, 'many', `f${index}`), '');
  mkdirSync(join(root, 'special'));
  execFileSync('mkfifo', [join(root, 'special', 'pipe')]);
  symlinkSync('/etc', join(root, 'outside'));
}

/** The model name a run of `name` asks for; the endpoint answers by it. */
export const hostileModel = (name: string): string => `hostile-${name}`;

/** agentRun's input for one run of a class (`maxPayloadBytes` and the rest at their defaults). */
export function hostileInput(hostile: HostileClass, extra: Partial<AgentRunWorkflowInput> = {}): AgentRunWorkflowInput {
  return {
    messages: [
      { role: 'system', content: 'You are a careful agent.' },
      { role: 'user', content: 'Look around the repository.' },
    ],
    model: { provider: 'openai', model: hostileModel(hostile.name), contextWindow: 200_000, maxOutputTokens: 500 },
    tools: ['fs_read', 'fs_list', 'grep'],
    compaction: hostile.compaction ?? {},
    maxRounds: hostile.maxRounds ?? 8,
    ...extra,
  };
}

/** The endpoint's answer to one request: by the model it names and how many turns the conversation has had. */
export function hostileResponder(classes: readonly HostileClass[]): (request: RecordedRequest) => ScriptedResponse {
  return (request) => {
    const body = request.body as { model?: unknown; messages?: unknown } | undefined;
    const name = typeof body?.model === 'string' ? body.model.replace(/^hostile-/, '') : '';
    const hostile = classes.find((candidate) => candidate.name === name);
    if (hostile === undefined)
      return { kind: 'status', status: 404, body: { error: { message: `no hostile model ${String(body?.model)}` } } };
    const messages = Array.isArray(body?.messages) ? (body.messages as Array<{ role?: unknown }>) : [];
    const turn = messages.filter((message) => message.role === 'assistant').length;
    if (turn > 0 && hostile.name !== 'endless') return assistantReply({ content: 'Done.' });
    return assistantReply({ content: null, tool_calls: hostile.calls(turn) });
  };
}

/** The tool calls a run of the class asked for, over the whole run (for counting answers). */
export function hostileCallCount(hostile: HostileClass, rounds: number): number {
  if (hostile.name === 'endless') return rounds;
  return hostile.calls(0).length;
}

/**
 * What is wrong with how a run of `hostile` ended: an empty list when it ended as the class must,
 * every call of the run answered exactly once, and each expected note read by the model.
 */
export function hostileProblems(
  hostile: HostileClass,
  outcome: { status: 'completed' | 'failed'; failure?: string; stopReason?: string; messages?: ChatMessage[] },
): string[] {
  const problems: string[] = [];
  if (hostile.ends.status === 'failed') {
    if (outcome.status !== 'failed' || !(outcome.failure ?? '').startsWith(`${hostile.ends.type}:`))
      problems.push(`expected a ${hostile.ends.type} failure, got ${outcome.status} ${outcome.failure ?? ''}`);
    return problems;
  }
  if (outcome.status !== 'completed') return [`expected to complete, failed: ${outcome.failure ?? ''}`];
  if (outcome.stopReason !== hostile.ends.stopReason)
    problems.push(`expected stopReason ${hostile.ends.stopReason}, got ${outcome.stopReason ?? '?'}`);
  const messages = outcome.messages ?? [];
  const asked = messages.flatMap((message) => (message.role === 'assistant' ? (message.tool_calls ?? []) : []));
  const answered = messages.filter((message) => message.role === 'tool');
  const ids = answered.map((message) => message.tool_call_id);
  const unanswered = asked.filter((asking) => ids.filter((id) => id === asking.id).length !== 1);
  if (unanswered.length > 0)
    problems.push(
      `${unanswered.length} of ${asked.length} calls not answered exactly once (first: ${unanswered[0]?.id})`,
    );
  if (hostile.name === 'many-calls' && asked.length !== 1_000)
    problems.push(`expected 1000 calls, saw ${asked.length}`);
  const texts = answered.map((message) =>
    typeof message.content === 'string' ? message.content : JSON.stringify(message.content),
  );
  for (const pattern of hostile.reads)
    if (!texts.some((text) => pattern.test(text))) problems.push(`no tool result matches ${pattern}`);
  if (hostile.name === 'many-calls') {
    const ran = texts.filter((text) => text.includes('alpha')).length;
    if (ran !== MAX_TOOL_CALLS_PER_TURN) problems.push(`expected ${MAX_TOOL_CALLS_PER_TURN} calls to run, ${ran} did`);
  }
  return problems;
}
