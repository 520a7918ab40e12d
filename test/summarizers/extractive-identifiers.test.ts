// The extractive summary's identifiers line (docs/design.md#coverage): what the sections did not
// copy, ranked, within its share of the budget, read back from an earlier summary.
import { describe, expect, it } from 'vitest';
import { summarizeRequest, summaryContent } from '../../src/core/compaction/transcript.js';
import type { ChatMessage } from '../../src/core/types.js';
import { createExtractiveSummarizer, extractiveSummary } from '../../src/summarizers/index.js';
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
    expect(line.length).toBeLessThanOrEqual(Math.floor(0.4 * 6000));
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

  it('refuses an identifierShare outside [0, 1), naming it', () => {
    expect(() => createExtractiveSummarizer({ identifierShare: 1 })).toThrow(/identifierShare/);
    expect(() => createExtractiveSummarizer({ identifierShare: -0.1 })).toThrow(/identifierShare/);
    expect(() => createExtractiveSummarizer({ identifierShare: Number.NaN })).toThrow(/identifierShare/);
  });
});
