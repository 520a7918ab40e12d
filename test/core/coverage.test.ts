// Summaries checked for what they dropped (docs/design.md#coverage): the identifiers a summary must
// keep, the one retry naming them, the carried-facts line, and facts that survive ten compactions.
import { describe, expect, it } from 'vitest';
import { Compactor } from '../../src/compactor.js';
import { REFERENCE_EXACT } from '../../src/core/compaction/options.js';
import {
  argumentValues,
  CARRIED_FACTS_PREFIX,
  identifiersIn,
  KEEP_IDENTIFIERS_PREFIX,
  MAX_REQUIRED_IDENTIFIERS,
  requiredIdentifiers,
} from '../../src/core/compaction/coverage.js';
import { capText } from '../../src/core/compaction/transcript.js';
import type { ChatMessage, SummarizeRequest } from '../../src/core/types.js';
import { assistant, charCounter, scriptedSummarizer, system, tool, user } from '../support/messages.js';

const GENERIC =
  '## Goals\nContinue the task.\n## Decisions\nNone.\n## Files and commands\nSome files.\n## Unresolved\nNone.';

function systemText(request: SummarizeRequest | undefined): string {
  const content = request?.instruction;
  return typeof content === 'string' ? content : '';
}

/** A run whose early tool output names an error and a file that the latest messages still talk about. */
function run(): ChatMessage[] {
  const messages: ChatMessage[] = [system('You are an agent.'), user('Fix the invoice totals.')];
  messages.push(
    assistant('Reading the log.', [['call_a', 'read_file', JSON.stringify({ path: 'logs/app.log' })]]),
    tool(
      'call_a',
      `${'noise line\n'.repeat(60)}InvoiceRoundingError at src/billing/invoice.ts:42 (see https://example.test/issues/7)`,
    ),
  );
  for (let index = 0; index < 6; index += 1) {
    messages.push(
      assistant(`Checking module ${index}.`, [
        [`call_${index}`, 'read_file', JSON.stringify({ path: `lib/m${index}.md` })],
      ]),
      tool(`call_${index}`, `contents of module ${index} `.repeat(20)),
    );
  }
  messages.push(assistant('InvoiceRoundingError still comes from src/billing/invoice.ts; patching it next.'));
  return messages;
}

const options = { contextBudget: 2000, keepRecent: 2, counter: charCounter };

describe('identifiers', () => {
  it('finds paths, symbols, error names, URLs and ids, not plain words, numbers or call ids', () => {
    const found = [
      ...identifiersIn(
        'TypeError in src/app.ts: parseConfig failed for user_id mia_li_3668, order #W2378156, see https://x.test/a?b=1. call_abc123 ran 42 times',
      ),
    ];
    expect(found).toEqual(
      expect.arrayContaining([
        'TypeError',
        'src/app.ts',
        'parseConfig',
        'user_id',
        'mia_li_3668',
        'W2378156',
        'https://x.test/a?b=1',
      ]),
    );
    expect(found).not.toContain('call_abc123');
    expect(found).not.toContain('42');
    expect(found).not.toContain('failed');
  });

  it('requires what the middle shares with the kept messages, the system prompt aside', () => {
    const middle = [tool('c', 'found parseConfig and src/app.ts and helper_fn')];
    const kept = [system('tools: helper_fn'), assistant('parseConfig in src/app.ts is wrong')];
    expect(requiredIdentifiers(middle, kept)).toEqual(['parseConfig', 'src/app.ts']);
  });

  it('reads a call by its argument values: keys and escapes are the call’s syntax, not facts', () => {
    const edit = (id: string, path: string, before: string): ChatMessage =>
      assistant(null, [[id, 'Edit', JSON.stringify({ file_path: path, old_string: before, new_string: 'x' })]]);
    const middle = [edit('c1', 'src/app.ts', 'const a = 1;\nnfs_total = 2')];
    const kept = [edit('c2', 'src/app.ts', 'nfs_total')];
    // Read as JSON text, `file_path`, `old_string`, `new_string` would be required, and `\nnfs_total` read as `nnfs_total`.
    expect(requiredIdentifiers(middle, kept)).toEqual(['src/app.ts', 'nfs_total']);
    // JSON may write a slash `\/`: the value is still `my_lib/util.ts`.
    const escaped = [assistant(null, [['c3', 'Read', '{"file_path":"my_lib\\/util.ts"}']])];
    expect(requiredIdentifiers(escaped, [user('my_lib/util.ts is next')])).toEqual(['my_lib/util.ts']);
  });

  it('takes the string values of arguments, nested or cut by the cap, and text that is not JSON whole', () => {
    expect(
      argumentValues('{"todos":[{"content":"Fix src/a.ts","status":"in_progress","activeForm":"Fixing"}],"n":2}'),
    ).toEqual(['Fix src/a.ts', 'in_progress', 'Fixing']);
    expect(argumentValues('{"path" : "a\\/b.py", "note": "\\u0041_b"}')).toEqual(['a/b.py', 'A_b']);
    // Cut by the cap: the last value as far as it goes, without the cap's marker or a half escape.
    const args = '{"command":"str_replace","old_str":"x_y\\u0041_z"}';
    expect(argumentValues(capText(args, args.indexOf('\\u') + 4))).toEqual(['str_replace', 'x_y']);
    expect(argumentValues('ls -la src/app.ts')).toEqual(['ls -la src/app.ts']);
  });
});

describe('coverage in the engine', () => {
  it("'retry': one retry names what the summary left out, and its better summary is kept", async () => {
    const summarizer = scriptedSummarizer(
      GENERIC,
      'InvoiceRoundingError in src/billing/invoice.ts; module notes read.',
    );
    const result = await new Compactor({ summarizer, ...options }).compact(run());
    expect(summarizer.requests).toHaveLength(2);
    expect(systemText(summarizer.requests[1])).toContain('`InvoiceRoundingError`, `src/billing/invoice.ts`');
    expect(summarizer.requests[1]?.instructions).toContain('`src/billing/invoice.ts`');
    expect(result.summary).toContain('InvoiceRoundingError in src/billing/invoice.ts');
    expect(result.summary).not.toContain(CARRIED_FACTS_PREFIX);
    expect(result.coverage).toEqual({ required: 2, kept: 2, carried: 0, missing: [] });
  });

  it("'retry': still missing after the retry, the identifiers are carried on a line of their own", async () => {
    const summarizer = scriptedSummarizer(GENERIC);
    const result = await new Compactor({ summarizer, ...options }).compact(run());
    expect(summarizer.requests).toHaveLength(2);
    expect(result.summary).toContain(`${CARRIED_FACTS_PREFIX} \`InvoiceRoundingError\`, \`src/billing/invoice.ts\``);
    expect(result.coverage).toEqual({ required: 2, kept: 2, carried: 2, missing: [] });
  });

  it("'carry' appends without a retry; 'off' and REFERENCE_EXACT check nothing", async () => {
    const carry = scriptedSummarizer(GENERIC);
    const carried = await new Compactor({ summarizer: carry, ...options, summaryCoverage: 'carry' }).compact(run());
    expect(carry.requests).toHaveLength(1);
    expect(carried.coverage).toEqual({ required: 2, kept: 2, carried: 2, missing: [] });
    for (const off of [{ summaryCoverage: 'off' as const }, REFERENCE_EXACT]) {
      const summarizer = scriptedSummarizer(GENERIC);
      const result = await new Compactor({ summarizer, ...options, ...off }).compact(run());
      expect(summarizer.requests).toHaveLength(1);
      expect(result.coverage).toBeUndefined();
      expect(result.summary).not.toContain(CARRIED_FACTS_PREFIX);
    }
  });

  it("'retry': the first request already names what the check will require; 'carry' and 'off' name nothing", async () => {
    const summarizer = scriptedSummarizer('InvoiceRoundingError in src/billing/invoice.ts.');
    await new Compactor({ summarizer, ...options }).compact(run());
    expect(summarizer.requests[0]?.instructions).toBe(
      'Keep these identifiers: `InvoiceRoundingError`, `src/billing/invoice.ts`',
    );
    // The caller's own instructions come first, the identifiers after them.
    const instructed = scriptedSummarizer('InvoiceRoundingError in src/billing/invoice.ts.');
    await new Compactor({ summarizer: instructed, ...options, summaryInstructions: 'Keep the totals.' }).compact(run());
    expect(instructed.requests[0]?.instructions).toBe(
      'Keep the totals.\nKeep these identifiers: `InvoiceRoundingError`, `src/billing/invoice.ts`',
    );
    for (const summaryCoverage of ['carry', 'off'] as const) {
      const other = scriptedSummarizer('InvoiceRoundingError in src/billing/invoice.ts.');
      await new Compactor({ summarizer: other, ...options, summaryCoverage }).compact(run());
      expect(other.requests[0]?.instructions, summaryCoverage).toBeUndefined();
    }
  });

  it('a summary that covers everything is asked once and says so', async () => {
    const summarizer = scriptedSummarizer('InvoiceRoundingError in src/billing/invoice.ts.');
    const result = await new Compactor({ summarizer, ...options }).compact(run());
    expect(summarizer.requests).toHaveLength(1);
    expect(result.coverage).toEqual({ required: 2, kept: 2, carried: 0, missing: [] });
  });

  it('a summary too long and incomplete: the tighter retry names the identifiers too', async () => {
    const summarizer = scriptedSummarizer('x'.repeat(5000), 'short');
    const result = await new Compactor({ summarizer, ...options }).compact(run());
    expect(summarizer.requests).toHaveLength(2);
    const tighter = systemText(summarizer.requests[1]);
    expect(tighter).toContain('Your last attempt was too long');
    expect(tighter).toContain('`InvoiceRoundingError`, `src/billing/invoice.ts`');
    expect(result.coverage).toEqual({ required: 2, kept: 2, carried: 2, missing: [] });
  });
});

describe('a middle sharing more identifiers with the kept messages than a retry names', () => {
  /** `count` modules read early, every one named again in the latest message. */
  function manyIdentifiers(count: number): ChatMessage[] {
    const names = Array.from({ length: count }, (_, index) => `pkg_${index}/mod_${index}.py`);
    const messages: ChatMessage[] = [system('You are an agent.'), user('Fix the build.')];
    names.forEach((name, index) => {
      messages.push(
        assistant(`Reading ${index}.`, [[`call_${index}`, 'read_file', JSON.stringify({ path: `notes/${index}.md` })]]),
        tool(`call_${index}`, `${'filler text '.repeat(30)}\nthe failing import is in ${name}`),
      );
    });
    messages.push(assistant(`Still failing: ${names.join(' ')}.`));
    return messages;
  }
  /** A summarizer that keeps exactly the identifiers its request names: what a careful summarizer does. */
  const keepsWhatItIsTold = async (request: SummarizeRequest): Promise<string> =>
    `## Files and commands\n${(request.instructions ?? '').split('\n').find((line) => line.startsWith(KEEP_IDENTIFIERS_PREFIX)) ?? 'None.'}`;
  const many = { contextBudget: 6000, keepRecent: 1, counter: charCounter };

  it('(regression) the first request names every identifier the check requires: one request, none carried', async () => {
    const summarizer = scriptedSummarizer(keepsWhatItIsTold);
    const result = await new Compactor({ summarizer, ...many }).compact(manyIdentifiers(60));
    expect(result.coverage).toEqual({ required: 60, kept: 60, carried: 0, missing: [] });
    expect(summarizer.requests).toHaveLength(1);
  });

  it(`requires at most ${MAX_REQUIRED_IDENTIFIERS}, the first the middle uses, and names them all`, async () => {
    const summarizer = scriptedSummarizer(keepsWhatItIsTold);
    const result = await new Compactor({ summarizer, ...many, contextBudget: 12_000 }).compact(manyIdentifiers(130));
    expect(result.coverage).toEqual({
      required: MAX_REQUIRED_IDENTIFIERS,
      kept: MAX_REQUIRED_IDENTIFIERS,
      carried: 0,
      missing: [],
    });
    expect(summarizer.requests).toHaveLength(1);
    const named = summarizer.requests[0]?.instructions ?? '';
    expect(named).toContain('`pkg_0/mod_0.py`');
    expect(named).toContain(`\`pkg_${MAX_REQUIRED_IDENTIFIERS - 1}/mod_${MAX_REQUIRED_IDENTIFIERS - 1}.py\``);
    expect(named).not.toContain(`pkg_${MAX_REQUIRED_IDENTIFIERS}/`);
  });
});

describe('ten successive compactions', () => {
  /** Ten batches of rounds; each ends with the agent naming the two facts of the first batch again. */
  async function compactTenTimes(summaryCoverage: 'retry' | 'off'): Promise<string[]> {
    const summarizer = scriptedSummarizer(GENERIC);
    const compactor = new Compactor({ summarizer, ...options, summaryCoverage });
    let messages = run();
    const summaries: string[] = [];
    for (let batch = 1; batch <= 10; batch += 1) {
      const result = await compactor.compact(messages);
      if (result.summary === null) throw new Error(`compaction ${batch} wrote no summary`);
      summaries.push(result.summary);
      messages = [...result.messages];
      for (let index = 0; index < 5; index += 1) {
        const id = `call_${batch}_${index}`;
        messages.push(
          assistant(`Batch ${batch} step ${index}.`, [
            [id, 'read_file', JSON.stringify({ path: `lib/b${batch}_${index}.md` })],
          ]),
          tool(id, `batch ${batch} output `.repeat(20)),
        );
      }
      messages.push(assistant('Still on InvoiceRoundingError in src/billing/invoice.ts.'));
    }
    return summaries;
  }

  it('facts a summary carried and the run still uses survive every later compaction', async () => {
    const summaries = await compactTenTimes('retry');
    expect(summaries).toHaveLength(10);
    for (const summary of summaries) {
      expect(summary).toContain('InvoiceRoundingError');
      expect(summary).toContain('src/billing/invoice.ts');
    }
    // Without the check, the first summary already lost them (what this test proves needs the check).
    const unchecked = await compactTenTimes('off');
    expect(unchecked.filter((summary) => summary.includes('src/billing/invoice.ts'))).toEqual([]);
  });
});
