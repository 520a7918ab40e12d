// The extractive summary as a reader meets it (the Temporal UI, a transcript): no section without
// an entry, tool calls as short lines rather than their JSON, copied lines without the viewer's
// line numbers, headings in prose or bare error labels — on the corpus and on runs shaped like it.
import { describe, expect, it } from 'vitest';
import { findTrajectory, repositoryCorpus } from '../../corpus/index.js';
import { identifiersIn } from '../../src/core/compaction/coverage.js';
import { capText } from '../../src/core/compaction/transcript.js';
import { summarizeRequest } from '../support/summarize-request.js';
import type { ChatMessage, SummarizeRequest } from '../../src/core/types.js';
import { extractiveSummary } from '../../src/summarizers/extractive.js';
import { callLine } from '../../src/summarizers/extractive/calls.js';
import { extendedCases } from '../support/corpus.js';
import { assistant, tool, user } from '../support/messages.js';

/** Small hand-written runs are bound by maxChars alone, so every section shows all it extracted. */
const ROOMY = { maxRatio: Number.POSITIVE_INFINITY };
const COUNT_LINE = /^- \(\d+ more not shown\)$/;
/** A JSON object's key: what a call's arguments (or a JSON result) copied raw would show. */
const JSON_KEY = /\{\s*"[\w-]+"\s*:/;

/** Each section's heading and its lines. */
function sectionsOf(summary: string): Array<{ heading: string; lines: string[] }> {
  return summary
    .split(/\n(?=## )/)
    .slice(1)
    .map((block) => {
      const [heading = '', ...rest] = block.split('\n');
      return { heading, lines: rest.filter((line) => line.startsWith('- ')) };
    });
}

/** What a coverage retry sends: the request with the identifiers it must keep named (`withIdentifiers` in the engine). */
function naming(request: SummarizeRequest, identifiers: readonly string[]): SummarizeRequest {
  return { ...request, instructions: `Keep these identifiers: ${identifiers.map((id) => `\`${id}\``).join(', ')}` };
}

/** A caller's `summaryInstructions` that ask for identifiers: the extractive summarizer keeps the lines that hold them first. */
function askingFor(request: SummarizeRequest, identifiers: readonly string[]): SummarizeRequest {
  return { ...request, instructions: `Focus on ${identifiers.map((id) => `\`${id}\``).join(', ')}` };
}

/** The middle the engine would summarize: everything but the last eight messages, without the system prompt. */
function middleOf(messages: readonly ChatMessage[]): ChatMessage[] {
  return messages.slice(0, Math.max(1, messages.length - 8)).filter((message) => message.role !== 'system');
}

describe('an extractive summary reads well', () => {
  describe.each([...repositoryCorpus(), ...extendedCases()])('$name', ({ messages }) => {
    const middle = middleOf(messages);
    const request = summarizeRequest(middle, 2000);
    // The identifiers of the calls' arguments: a retry that names them adds the lines holding them (calls among them).
    const named = [
      ...identifiersIn(
        middle.flatMap((message) => (message.tool_calls ?? []).map((call) => call.function.arguments)).join('\n'),
      ),
    ].slice(0, 40);
    const summaries = [600, 1500, 6000].flatMap((maxChars) => [
      extractiveSummary(request, { maxChars }),
      extractiveSummary(naming(request, named), { maxChars }),
    ]);

    it('never shows a section with only its count, and never counts none', () => {
      for (const summary of summaries)
        for (const { heading, lines } of sectionsOf(summary)) {
          expect(lines.length, `${heading}\n${summary}`).toBeGreaterThan(0);
          if (lines.some((line) => COUNT_LINE.test(line)))
            expect(lines.filter((line) => !COUNT_LINE.test(line)).length, `${heading}\n${summary}`).toBeGreaterThan(0);
          expect(lines, heading).not.toContain('- (0 more not shown)');
        }
    });

    it('never copies the JSON of a call’s arguments or of a result', () => {
      for (const summary of summaries)
        for (const line of summary.split('\n')) expect(line, summary).not.toMatch(JSON_KEY);
    });
  });

  it('(regression) the demo’s first summary, in 460 characters, shows an entry in every section that has one', () => {
    // The demo's first compaction: the task pinned, so the middle is the agent's first steps.
    const { messages } = findTrajectory('openhands_gpt4o_Project-MONAI__MONAI-3715');
    const middle = messages.slice(2, 10);
    const summary = extractiveSummary(summarizeRequest(middle, 2000), { maxChars: 460 });
    expect(summary.length).toBeLessThanOrEqual(460);
    const sections = sectionsOf(summary);
    expect(sections.map(({ heading }) => heading)).toEqual([
      '## Goals',
      '## Decisions',
      '## Files and commands',
      '## Unresolved',
    ]);
    for (const { heading, lines } of sections)
      expect(lines.filter((line) => !COUNT_LINE.test(line)).length, `${heading}\n${summary}`).toBeGreaterThan(0);
  });
});

describe('a tool call in an extractive summary', () => {
  const line = (name: string, args: unknown): string => callLine(name, JSON.stringify(args));

  it('is the tool, its sub-action, its file and the gist of an edit', () => {
    const path = '/workspace/Project-MONAI__MONAI__0.8/reproduce_error.py';
    expect(
      line('str_replace_editor', {
        command: 'str_replace',
        path,
        old_str: 'evaluator = Evaluator(\n    val_data_loader=dataloader,',
        new_str: 'evaluator = SupervisedEvaluator(\n    val_data_loader=dataloader,',
      }),
    ).toBe(
      `str_replace_editor str_replace ${path}: replace "evaluator = Evaluator(" with "evaluator = SupervisedEvaluator("`,
    );
    expect(line('str_replace_editor', { command: 'view', path, view_range: [1, 40] })).toBe(
      `str_replace_editor view ${path} lines 1–40`,
    );
    expect(line('str_replace_editor', { command: 'create', path, file_text: 'import torch\nprint(1)\n' })).toBe(
      `str_replace_editor create ${path}: 2 lines, starting "import torch"`,
    );
    expect(line('str_replace_editor', { command: 'insert', path, insert_line: 12, new_str: 'run()\n' })).toBe(
      `str_replace_editor insert ${path}: insert "run()" at line 12`,
    );
    expect(
      line('Edit', {
        file_path: 'django/db/models/sql/query.py',
        old_string: '        if self.group_by is True:',
        new_string: '        if self.group_by is None:',
      }),
    ).toBe('Edit django/db/models/sql/query.py: replace "if self.group_by is True:" with "if self.group_by is None:"');
  });

  it('is a shell command’s first line, or the tool’s short arguments', () => {
    expect(line('execute_bash', { command: 'cd /workspace && python reproduce_error.py\necho done' })).toBe(
      'execute_bash: cd /workspace && python reproduce_error.py …',
    );
    expect(line('Bash', { command: 'python -m pytest tests/test_x.py -q', description: 'Run tests' })).toBe(
      'Bash: python -m pytest tests/test_x.py -q',
    );
    expect(line('get_reservation_details', { reservation_id: 'ZFA04Y' })).toBe(
      'get_reservation_details reservation_id=ZFA04Y',
    );
    expect(line('Grep', { pattern: 'def _check_ignored_options', path: 'django/db', output_mode: 'content' })).toBe(
      'Grep django/db pattern="def _check_ignored_options" output_mode=content',
    );
    expect(line('TodoWrite', { todos: [{ content: 'Run the tests', status: 'in_progress' }, { content: 'b' }] })).toBe(
      'TodoWrite todos: 2 items',
    );
  });

  it('reads arguments the cap cut as far as they go, and stays short', () => {
    const args = JSON.stringify({
      command: 'str_replace',
      path: 'src/a.py',
      old_str: `x = 1${' '.repeat(300)}`,
      new_str: 'y',
    });
    expect(callLine('str_replace_editor', capText(args, 60))).toBe(
      'str_replace_editor str_replace src/a.py: replace "x = 1" …',
    );
    const long = line('Edit', { file_path: 'src/a.py', old_string: 'a'.repeat(500), new_string: 'b'.repeat(500) });
    expect(long.length).toBeLessThanOrEqual(240);
    expect(long).not.toMatch(JSON_KEY);
  });

  it('(regression) is what Decisions show for a call that names an identifier the instructions ask for', () => {
    const middle: ChatMessage[] = [
      user('The evaluator fails with a ValueError; reproduce it.'),
      assistant('I will write a script that reproduces the error.', [
        [
          'call_1',
          'str_replace_editor',
          JSON.stringify({
            command: 'create',
            path: '/workspace/reproduce_error.py',
            file_text: 'from monai.engines import Evaluator\nEvaluator(device="cpu").run()\n',
          }),
        ],
      ]),
      tool('call_1', 'File created successfully at: /workspace/reproduce_error.py'),
    ];
    const summary = extractiveSummary(askingFor(summarizeRequest(middle, 2000), ['reproduce_error.py']), ROOMY);
    expect(summary).toContain(
      '- str_replace_editor create /workspace/reproduce_error.py: 2 lines, starting "from monai.engines import Evaluator"',
    );
    expect(summary).not.toMatch(JSON_KEY);
  });
});

describe('a line an extractive summary copies', () => {
  it('takes the line after a bare error label, which says what went wrong', () => {
    const middle: ChatMessage[] = [
      user('Look at the repository.'),
      assistant(null, [
        ['call_1', 'str_replace_editor', JSON.stringify({ command: 'view', path: '/workspace', view_range: [0, 20] })],
      ]),
      tool('call_1', 'ERROR:\nThe `view_range` parameter is not allowed when `path` points to a directory.'),
    ];
    expect(extractiveSummary(summarizeRequest(middle, 2000), ROOMY)).toContain(
      '- str_replace_editor `/workspace` failed: ERROR: The `view_range` parameter is not allowed when `path` points to a directory.',
    );
  });

  it('leaves out the line numbers of a file viewer and takes no heading in prose for a decision', () => {
    const middle: ChatMessage[] = [
      user('Fix the symmetrical ManyToManyField check.'),
      assistant('Updated Plan:\nThe fix is to raise fields.E332 when related_name is set on a symmetrical field.', [
        ['call_1', 'Read', JSON.stringify({ file_path: 'django/db/models/fields/related.py' })],
      ]),
      tool('call_1', '  1230→    def _check_ignored_options(self, **kwargs):\n  1231→        warnings = []'),
    ];
    const summary = extractiveSummary(askingFor(summarizeRequest(middle, 2000), ['_check_ignored_options']), ROOMY);
    expect(summary).toContain('- def _check_ignored_options(self, **kwargs):');
    expect(summary).not.toContain('1230→');
    expect(summary).toContain('- The fix is to raise fields.E332 when related_name is set on a symmetrical field.');
    expect(summary).not.toContain('- Updated Plan:');
  });

  it('is not added for the identifiers the engine asks it to keep: they go to the identifiers line', () => {
    const middle: ChatMessage[] = [
      user('Fix the symmetrical ManyToManyField check.'),
      assistant('The fix is to raise fields.E332 when related_name is set on a symmetrical field.', [
        ['call_1', 'Read', JSON.stringify({ file_path: 'django/db/models/fields/related.py' })],
      ]),
      tool('call_1', '  1230→    def _check_ignored_options(self, **kwargs):\n  1231→        warnings = []'),
    ];
    const plain = extractiveSummary(summarizeRequest(middle, 2000), ROOMY);
    const named = extractiveSummary(naming(summarizeRequest(middle, 2000), ['_check_ignored_options']), ROOMY);
    // The sections are those of the request without the line; the identifier is kept all the same.
    expect(sectionsOf(named)).toEqual(sectionsOf(plain));
    expect(named).not.toContain('- def _check_ignored_options');
    expect(named).toMatch(/^Identifiers seen: .*_check_ignored_options/m);
  });
});
