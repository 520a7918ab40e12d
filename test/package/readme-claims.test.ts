// The README claims `npm run test:package` checks with no model configured: read from the README's
// client block (`// Prints "…"` comments) and prose (what agentRun needs, the summarizer without a model).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { tsBlocks, tsBlocksOfFile, type TsBlock } from './markdown-blocks.js';
import { noModelClaims, printedLines, printedPattern, ReadmeClaimError } from './readme-claims.js';

const guide = [
  '# Guide', //                                                                          1
  'The summarizer is a model when `KEY` is set, else the built-in offline', //          2
  'extractive one. `agentRun` needs a model (`BASE_URL` or `KEY`): without either', //  3
  'the run fails naming both; the rest needs none.', //                                 4
  '', //                                                                                5
  '```ts client.ts', //                                                                 6
  '// Prints "compact: 62 -> N messages, ..." then "summary: ..."', //                  7
  'console.log(one);', //                                                               8
  'const run = await client.workflow.execute(agentRun, {', //                          9
  '});', //                                                                             10
  '// Prints "agentRun: completed after N rounds, M compactions"', //                   11
  'console.log(two);', //                                                               12
  '```', //                                                                             13
].join('\n');

function clientOf(markdown: string): TsBlock {
  const block = tsBlocks('GUIDE.md', markdown).find((candidate) => candidate.name === 'client.ts');
  if (block === undefined) throw new Error('the fixture has no client.ts block');
  return block;
}

describe('printedPattern', () => {
  it('N and M are numbers, ... is anything, the rest is literal', () => {
    const pattern = printedPattern('compact: 62 -> N messages, ...');
    expect(pattern.test('compact: 62 -> 10 messages, 16216 -> 2429 tokens')).toBe(true);
    expect(pattern.test('compact: 62 -> ten messages, 1 -> 2 tokens')).toBe(false);
    expect(pattern.test('compact: 63 -> 10 messages, x')).toBe(false);
    expect(printedPattern('a (b) N+1').test('a (b) 1,234+1')).toBe(true);
    expect(printedPattern('a (b) N+1').test('a b 1+1')).toBe(false);
    // A line of its own: "x" is not found inside another line.
    expect(printedPattern('summary: ...').test('a summary: b')).toBe(false);
    expect(printedPattern('summary: ...').test('first\nsummary: b')).toBe(true);
  });
});

describe('printedLines', () => {
  it('every quoted text of every Prints comment, with its markdown line and whether agentRun started before it', () => {
    expect(
      printedLines(clientOf(guide)).map(({ text, line, afterAgentRun }) => ({ text, line, afterAgentRun })),
    ).toEqual([
      { text: 'compact: 62 -> N messages, ...', line: 7, afterAgentRun: false },
      { text: 'summary: ...', line: 7, afterAgentRun: false },
      { text: 'agentRun: completed after N rounds, M compactions', line: 11, afterAgentRun: true },
    ]);
  });
});

describe('noModelClaims', () => {
  it('reads the settings from the sentence about agentRun and the summarizer from the prose', () => {
    const claims = noModelClaims('GUIDE.md', guide, clientOf(guide));
    expect(claims.agentRunSettings).toEqual(['BASE_URL', 'KEY']);
    expect(claims.summarizer).toBe('offline extractive');
    expect(claims.sentence).toMatch(/^`agentRun` needs a model .* fails naming both;$/);
  });

  it('a claim whose wording moved fails naming the file and what was looked for', () => {
    const noSentence = guide.replace('fails naming both', 'fails');
    expect(() => noModelClaims('GUIDE.md', noSentence, clientOf(noSentence))).toThrow(ReadmeClaimError);
    expect(() => noModelClaims('GUIDE.md', noSentence, clientOf(noSentence))).toThrow(
      /^GUIDE\.md: no sentence says what agentRun needs/,
    );
    const oneSetting = guide.replace('(`BASE_URL` or `KEY`)', '(`BASE_URL`)');
    expect(() => noModelClaims('GUIDE.md', oneSetting, clientOf(oneSetting))).toThrow(/fewer than two settings/);
    const noSummarizer = guide.replace('else the built-in offline', 'else an offline');
    expect(() => noModelClaims('GUIDE.md', noSummarizer, clientOf(noSummarizer))).toThrow(/which summarizer runs/);
    const noPrints = guide.replaceAll('// Prints', '// Shows');
    expect(() => noModelClaims('GUIDE.md', noPrints, clientOf(noPrints))).toThrow(/has no `\/\/ Prints "…"` comment/);
  });

  it('the README has them: the client prints before agentRun, which fails naming OPENAI_BASE_URL and OPENAI_API_KEY', () => {
    const client = tsBlocksOfFile('README.md').find((block) => block.name === 'client.ts');
    expect(client).toBeDefined();
    const claims = noModelClaims('README.md', readFileSync('README.md', 'utf8'), client as TsBlock);
    expect([...claims.agentRunSettings].sort()).toEqual(['OPENAI_API_KEY', 'OPENAI_BASE_URL']);
    expect(claims.printed.filter((line) => !line.afterAgentRun).length).toBeGreaterThan(0);
    expect(claims.summarizer).toBe('offline extractive');
  });
});
