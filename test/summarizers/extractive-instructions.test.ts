// The extractive summarizer honours a request's instructions (docs/design.md#summary-instructions):
// what matches them is kept first.
import { describe, expect, it } from 'vitest';
import { summarizeRequest } from '../support/summarize-request.js';
import type { ChatMessage } from '../../src/core/types.js';
import { extractiveSummary } from '../../src/summarizers/extractive.js';
import { instructionTerms } from '../../src/summarizers/extractive/instructions.js';
import { assistant, tool, user } from '../support/messages.js';

/** A run of test rounds: the early one has two failing tests deep in its output, later rounds pass and edit files. */
function testRun(): ChatMessage[] {
  const output = [
    ...Array.from({ length: 30 }, (_, index) => `PASS src/module_${index}.test.ts (${index + 3} ms)`),
    'FAIL src/auth/expired_token.test.ts > rejects an expired refresh token',
    ...Array.from({ length: 10 }, (_, index) => `PASS src/extra_${index}.test.ts`),
    'FAIL src/billing/invoice_rounding.test.ts > rounds half-cents to even',
    'Tests: 2 failed, 40 passed, 42 total',
  ].join('\n');
  const messages: ChatMessage[] = [
    user('Run the whole test suite, then tidy the configuration files one by one.'),
    assistant('Running the suite first.', [
      ['call_t', 'bash', JSON.stringify({ command: 'npm test -- --reporter=dot' })],
    ]),
    tool('call_t', output),
  ];
  for (let round = 0; round < 14; round += 1) {
    messages.push(
      assistant(`Next I will tidy config_${round}.json because it repeats defaults.`, [
        [
          `call_${round}`,
          'edit_file',
          JSON.stringify({ path: `config/config_${round}.json`, change: 'drop defaults' }),
        ],
      ]),
      tool(`call_${round}`, `Edited config/config_${round}.json: 3 lines removed.`),
    );
  }
  return messages;
}

const TIGHT = { maxChars: 1400, maxRatio: Number.POSITIVE_INFINITY };

describe('extractive summarizer with instructions', () => {
  it('keeps the lines the instructions ask for, which the same budget drops without them', () => {
    const middle = testRun();
    const plain = extractiveSummary(summarizeRequest(middle, 4000), TIGHT);
    const instructed = extractiveSummary(
      summarizeRequest(middle, 4000, undefined, { summaryInstructions: 'Keep the names of the failing tests.' }),
      TIGHT,
    );
    // Without instructions the failing test names are lost to the later rounds (what this test proves needs them).
    expect(plain).not.toContain('expired_token.test.ts');
    expect(plain).not.toContain('invoice_rounding.test.ts');
    expect(instructed).toContain('FAIL src/auth/expired_token.test.ts > rejects an expired refresh token');
    expect(instructed).toContain('FAIL src/billing/invoice_rounding.test.ts > rounds half-cents to even');
    expect(instructed.length).toBeLessThanOrEqual(TIGHT.maxChars);
  });

  it('never lets a matching line go for budget before a line that does not match', () => {
    const middle = testRun();
    for (const maxChars of [500, 700, 900, 1200]) {
      const summary = extractiveSummary(
        summarizeRequest(middle, 4000, undefined, { summaryInstructions: 'focus on config_3.json and config_11.json' }),
        { maxChars, maxRatio: Number.POSITIVE_INFINITY },
      );
      const lines = summary.split('\n').filter((line) => line.startsWith('- ') && !/more not shown/.test(line));
      const matching = lines.filter((line) => /config_3\.json|config_11\.json/.test(line));
      // Another config file's line is only there once both asked-for files are.
      const others = lines.filter((line) => /config_\d+\.json/.test(line) && !matching.includes(line));
      if (others.length > 0) {
        expect(summary).toContain('config_3.json');
        expect(summary).toContain('config_11.json');
      }
      expect(summary.length).toBeLessThanOrEqual(maxChars);
    }
    const roomy = extractiveSummary(
      summarizeRequest(middle, 4000, undefined, { summaryInstructions: 'focus on config_3.json and config_11.json' }),
      { maxChars: 700, maxRatio: Number.POSITIVE_INFINITY },
    );
    expect(roomy).toContain('config_3.json');
    expect(roomy).toContain('config_11.json');
  });

  it('reads the instructions from the request, not from the instruction text, and is unchanged without them', () => {
    const middle = testRun();
    const plain = extractiveSummary(summarizeRequest(middle, 4000), TIGHT);
    const { instructions: _dropped, ...withoutField } = summarizeRequest(middle, 4000, undefined, {
      summaryInstructions: 'Keep the names of the failing tests.',
    });
    expect(extractiveSummary(withoutField, TIGHT)).toBe(plain);
  });

  it('takes identifiers as written and words by their stem, without the words that only say how', () => {
    const terms = instructionTerms('Please keep the failing tests and src/auth/session.ts, "refresh token" and ERR_42.')
      .map((term) => term.text)
      .sort();
    expect(terms).toEqual(['err_42', 'fail', 'refresh token', 'src/auth/session.ts', 'test'].sort());
  });
});
