// The extractive summary's identifiers line (docs/design.md#coverage): what the sections did not
// copy, ranked, within its share of the budget, read back from an earlier summary.
import { describe, expect, it } from 'vitest';
import { elisionStub } from '../../src/core/compaction/elision.js';
import { summaryContent } from '../../src/core/compaction/transcript.js';
import { summarizeRequest } from '../support/summarize-request.js';
import { recallStubSuffix } from '../../src/core/agent/recall.js';
import type { ChatMessage } from '../../src/core/types.js';
import { createExtractiveSummarizer, extractiveSummary } from '../../src/summarizers/extractive.js';
import { assistant, tool, user } from '../support/messages.js';

const PREFIX = 'Identifiers seen: ';

/** The identifiers the line lists, in its order; [] without a line. */
function listed(summary: string): string[] {
  const line = summary.split('\n').find((candidate) => candidate.startsWith(PREFIX));
  return line === undefined ? [] : line.slice(PREFIX.length).split(', ');
}

/** A read of `path` whose result holds `body`. */
function read(id: string, path: string, body: string): ChatMessage[] {
  return [assistant(null, [[id, 'read_file', JSON.stringify({ path })]]), tool(id, body)];
}

const RUN: ChatMessage[] = [
  user('Fix the crash in the report job.'),
  ...read('call_1', 'src/jobs/report.py', 'def build_report(rows):\n    return render_rows(rows, REPORT_TEMPLATE)'),
  ...read('call_2', 'src/jobs/render.py', 'def render_rows(rows, template):\n    return template.format(ROW_SEP)'),
  ...read('call_3', 'src/jobs/config.py', 'REPORT_TEMPLATE = load("report_v2")\nROW_SEP = "\\n"'),
];

describe('the identifiers line of an extractive summary', () => {
  it('lists the identifiers of the middle its sections did not copy, within its share of the budget', () => {
    const summary = extractiveSummary(summarizeRequest(RUN, 2000), { maxRatio: Number.POSITIVE_INFINITY });
    const line = summary.split('\n').find((candidate) => candidate.startsWith(PREFIX)) ?? '';
    const ids = listed(summary);
    // Used in two results, the latest among them, first (ties: in the order first used); none the sections hold.
    expect(ids.slice(0, 3)).toEqual(['REPORT_TEMPLATE', 'ROW_SEP', 'render_rows']);
    expect(ids).toContain('build_report');
    expect(ids).toContain('report_v2');
    const body = summary.slice(0, summary.indexOf(line));
    for (const identifier of ids) expect(body).not.toContain(identifier);
    expect(line.length).toBeLessThanOrEqual(Math.floor(0.6 * 6000));
  });

  it('gives the line 0.6 of the budget by default when the middle has more identifiers than fit', () => {
    // 400 results of two identifiers each: far more than 6,000 characters of names.
    const crowded: ChatMessage[] = [
      user('Fix the crash in the report job.'),
      ...Array.from({ length: 400 }, (_, index) =>
        read(`call_${index}`, `src/mod_${index}.py`, `value_${index}_alpha = helper_${index}_beta()`),
      ).flat(),
    ];
    const summary = extractiveSummary(summarizeRequest(crowded, 2000), { maxRatio: Number.POSITIVE_INFINITY });
    const line = summary.split('\n').find((candidate) => candidate.startsWith(PREFIX)) ?? '';
    expect(summary.length).toBeLessThanOrEqual(6000);
    expect(line.length).toBeGreaterThan(Math.floor(0.55 * 6000));
    expect(line.length).toBeLessThanOrEqual(Math.floor(0.6 * 6000));
  });

  it('keeps the likeliest when the room is small, and leaves the line out with identifierShare 0', () => {
    const request = summarizeRequest(RUN, 2000);
    const roomy = { maxRatio: Number.POSITIVE_INFINITY };
    // 3% of 1,200 characters: room for the prefix and one identifier.
    const small = extractiveSummary(request, { ...roomy, maxChars: 1200, identifierShare: 0.03 });
    expect(small.length).toBeLessThanOrEqual(1200);
    expect(listed(small)).toEqual(['REPORT_TEMPLATE']);
    const none = extractiveSummary(request, { ...roomy, identifierShare: 0 });
    expect(listed(none)).toEqual([]);
    expect(none).not.toContain(PREFIX);
  });

  it('never takes the sections’ first 1,000 characters: a small budget is the sections’ alone', () => {
    const request = summarizeRequest(RUN, 2000);
    const roomy = { maxRatio: Number.POSITIVE_INFINITY };
    const small = extractiveSummary(request, { ...roomy, maxChars: 900, identifierShare: 0.5 });
    expect(listed(small)).toEqual([]);
    expect(small).toBe(extractiveSummary(request, { ...roomy, maxChars: 900, identifierShare: 0 }));
    expect(small).toContain('- Fix the crash in the report job.');
  });

  it('ranks what the files the user named say before what other results say', () => {
    const run: ChatMessage[] = [
      user('Write the output as SPEC.md says.'),
      ...read('call_1', 'docs/SPEC.md', 'Output fields: model_patch, instance_id'),
      ...read('call_2', 'src/a.py', 'alpha_one = 1'),
      ...read('call_3', 'src/b.py', 'beta_two = 2'),
    ];
    const ids = listed(extractiveSummary(summarizeRequest(run, 2000), { maxRatio: Number.POSITIVE_INFINITY }));
    expect(ids.slice(0, 2)).toEqual(['model_patch', 'instance_id']);
    expect(ids.indexOf('beta_two')).toBeLessThan(ids.indexOf('alpha_one'));
  });

  it('ranks what the files a task kept in place names say first (regression: the task was out of sight)', () => {
    // agentRun keeps the task sticky: it is not in the middle, and the request carries it apart.
    const middle: ChatMessage[] = [
      ...read('call_1', 'docs/SPEC.md', 'Output fields: model_patch, instance_id'),
      ...read('call_2', 'src/a.py', 'alpha_one = 1'),
      ...read('call_3', 'src/b.py', 'beta_two = 2'),
    ];
    const task = 'Write the output as SPEC.md says.';
    const roomy = { maxRatio: Number.POSITIVE_INFINITY };
    const request = summarizeRequest(middle, 2000, undefined, { task });
    expect(request.task).toBe(task);
    expect(listed(extractiveSummary(request, roomy)).slice(0, 2)).toEqual(['model_patch', 'instance_id']);
    const blind = listed(extractiveSummary(summarizeRequest(middle, 2000), roomy));
    expect(blind.slice(0, 2)).not.toContain('model_patch');
  });

  it('reads no length limit out of the kept task: its words are the user’s, not the instruction’s', () => {
    const task = 'Keep every docstring under 80 characters.';
    const summary = extractiveSummary(summarizeRequest(RUN.slice(1), 2000, undefined, { task }), {
      maxRatio: Number.POSITIVE_INFINITY,
    });
    expect(summary.length).toBeGreaterThan(80);
  });

  it('reads an earlier summary’s line back: carried ahead of new identifiers used once, never copied as an item', () => {
    const first = extractiveSummary(summarizeRequest(RUN, 2000), { maxRatio: Number.POSITIVE_INFINITY });
    const carried = listed(first);
    const next: ChatMessage[] = [
      user(summaryContent(first, RUN.length)),
      ...read('call_4', 'src/jobs/other.py', 'gamma_three = 3'),
      ...read('call_5', 'src/jobs/more.py', 'delta_four = 4'),
    ];
    const summary = extractiveSummary(summarizeRequest(next, 2000), { maxRatio: Number.POSITIVE_INFINITY });
    const ids = listed(summary);
    expect(ids.indexOf(carried[0] ?? '')).toBeGreaterThanOrEqual(0);
    expect(ids.indexOf(carried[0] ?? '')).toBeLessThan(ids.indexOf('gamma_three'));
    expect(summary.split('\n').filter((line) => line.startsWith(PREFIX))).toHaveLength(1);
    expect(summary).not.toContain(`- ${PREFIX}`);
  });

  it('reads a call as the coverage check does: its argument values, nested ones too, never its keys', () => {
    const run: ChatMessage[] = [
      user('Fix the group by in the query compiler.'),
      assistant(null, [
        [
          'call_1',
          'Edit',
          JSON.stringify({
            file_path: 'django/db/models/sql/query.py',
            old_string: 'if x:\nset_group_by()',
            new_string: 'y',
          }),
        ],
      ]),
      tool('call_1', 'The file django/db/models/sql/query.py has been updated.'),
      assistant(null, [
        [
          'call_2',
          'TodoWrite',
          JSON.stringify({ todos: [{ content: 'Run tests', status: 'in_progress', activeForm: 'Running' }] }),
        ],
      ]),
      tool('call_2', 'Todos have been modified successfully.'),
    ];
    const ids = listed(extractiveSummary(summarizeRequest(run, 2000), { maxRatio: Number.POSITIVE_INFINITY }));
    expect(ids).toEqual(expect.arrayContaining(['set_group_by', 'in_progress']));
    for (const key of ['file_path', 'old_string', 'new_string', 'activeForm', 'nset_group_by'])
      expect(ids).not.toContain(key);
  });

  it('never takes the harness’s own stubs and markers for identifiers', () => {
    const run: ChatMessage[] = [
      user('Reproduce the ValueError in monai/engines/evaluator.py.'),
      assistant(null, [['call_1', 'execute_bash', JSON.stringify({ command: 'python reproduce_error.py' })]]),
      tool('call_1', `${elisionStub(779, 'execute_bash')}${recallStubSuffix('m14')}`),
      assistant(null, [
        ['call_2', 'str_replace_editor', JSON.stringify({ command: 'view', path: 'monai/engines/evaluator.py' })],
      ]),
      tool('call_2', `class Evaluator(Workflow):\n    def run(self, global_epoch_1: int)${'x'.repeat(3000)}`),
    ];
    const summary = extractiveSummary(summarizeRequest(run, 2000), { maxRatio: Number.POSITIVE_INFINITY });
    const ids = listed(summary);
    expect(ids).toContain('global_epoch_1');
    for (const ours of ['779-char', 'execute_bash', 'm14']) expect(ids).not.toContain(ours);
    // The cap cut the last result inside a word: what is left of that word is not one either.
    expect(ids.filter((identifier) => /^x+$/.test(identifier))).toEqual([]);
  });

  it('keeps every identifier the instructions name, in the line when the sections have no room for their lines', () => {
    // Thirty results, each naming one setting in a long line: more lines than a 2,000-character summary holds.
    const run: ChatMessage[] = [user('Find which settings the import job reads.')];
    for (let index = 0; index < 30; index += 1)
      run.push(
        ...read(
          `call_${index}`,
          `conf/part${index}.yaml`,
          `setting_${index} is read by the import job ${'because of the schedule '.repeat(8)}`,
        ),
      );
    const named = Array.from({ length: 30 }, (_, index) => `setting_${index}`);
    const request = {
      ...summarizeRequest(run, 2000),
      // What a coverage retry adds to the instructions; one name the middle never used.
      instructions: `Keep these identifiers: ${[...named, 'not_in_the_middle'].map((id) => `\`${id}\``).join(', ')}`,
    };
    const summary = extractiveSummary(request, { maxChars: 2000, maxRatio: Number.POSITIVE_INFINITY });
    expect(summary.length).toBeLessThanOrEqual(2000);
    expect(named.filter((identifier) => !summary.includes(identifier))).toEqual([]);
    // The line lists what the sections did not hold, named ones first; a name the middle never used is not "seen".
    const listedNames = listed(summary).filter((identifier) => identifier.startsWith('setting_'));
    expect(listed(summary).slice(0, listedNames.length)).toEqual(listedNames);
    expect(summary).not.toContain('not_in_the_middle');
  });

  it('(regression) lists every identifier the request names even when the ratio leaves less room: a short middle', () => {
    // A middle of about 3,000 characters: 0.15 of it is 450, fifty over the 400 the headings take.
    const run: ChatMessage[] = [
      user('Fix the failing annotation test.'),
      ...read(
        'call_1',
        'src/main/java/Annotations.java',
        `AnnotationIntrospectorPair wraps AnnotationIntrospector; JacksonAnnotationIntrospector.findNameForSerialization ${'and the rest of the class body '.repeat(40)}E999 start/end`,
      ),
      ...read('call_2', 'src/test/java/TestAnnotations.java', `testMixInAnnotations ${'assertions '.repeat(60)}`),
    ];
    const named = [
      'AnnotationIntrospectorPair',
      'AnnotationIntrospector',
      'JacksonAnnotationIntrospector.findNameForSerialization',
      'E999',
      'start/end',
      'testMixInAnnotations',
      'src/test/java/TestAnnotations.java',
    ];
    const request = {
      ...summarizeRequest(run, 2000),
      instructions: `Keep these identifiers: ${named.map((id) => `\`${id}\``).join(', ')}`,
    };
    const plain = extractiveSummary(summarizeRequest(run, 2000));
    expect(plain.length).toBeLessThanOrEqual(500);
    const summary = extractiveSummary(request);
    expect(named.filter((identifier) => !summary.includes(identifier))).toEqual([]);
    // The room the named line takes comes on top of the headings' 400 characters, and no more.
    expect(summary.length).toBeLessThanOrEqual(400 + `${PREFIX}${named.join(', ')}`.length);
  });

  it('refuses an identifierShare outside [0, 1), naming it', () => {
    expect(() => createExtractiveSummarizer({ identifierShare: 1 })).toThrow(/identifierShare/);
    expect(() => createExtractiveSummarizer({ identifierShare: -0.1 })).toThrow(/identifierShare/);
    expect(() => createExtractiveSummarizer({ identifierShare: Number.NaN })).toThrow(/identifierShare/);
  });
});
