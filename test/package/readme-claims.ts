// Node: what the README says its quick start does when no model is configured, read from the README
// itself, for `npm run test:package` to check against a run of the snippets with OPENAI_API_KEY and
// OPENAI_BASE_URL unset. Two sources of claims:
//   - the client's `// Prints "…"` comments (`N`, `M` a number, `...` anything): what the client
//     prints, each before the statements it describes;
//   - the prose: the summarizer without a model ("else the built-in offline extractive one") and the
//     sentence saying what agentRun needs ("`agentRun` needs a model (`OPENAI_BASE_URL` … or
//     `OPENAI_API_KEY`): without either the run fails naming both").
import type { TsBlock } from './markdown-blocks.js';

/** A README claim that cannot be read (the wording moved): names the file and what was looked for. */
export class ReadmeClaimError extends Error {
  override readonly name = 'ReadmeClaimError';
}

/** One `// Prints "…"` comment's quoted output, as a pattern, and where it stands. */
export interface PrintedLine {
  /** The quoted text as written in the comment, e.g. `compact: 62 -> N messages, ...`. */
  text: string;
  /** Matches one output line the text describes (anchored at the line's start). */
  pattern: RegExp;
  /** The 1-based markdown line of the comment. */
  line: number;
  /** Whether the comment stands after the line that starts agentRun (its output needs the run to succeed). */
  afterAgentRun: boolean;
}

/** What the README says happens to the quick start with no model configured. */
export interface NoModelClaims {
  /** The client's printed lines (every `// Prints` comment of the client block). */
  printed: PrintedLine[];
  /** The settings the sentence about agentRun names: its failure without them names each. */
  agentRunSettings: string[];
  /** The summarizer the README says runs without a model, e.g. `offline extractive`. */
  summarizer: string;
  /** The sentence the settings were read from, for messages. */
  sentence: string;
}

/** A line of a client block that starts agentRun: `client.workflow.execute(agentRun, …)` or `.start(agentRun, …)`. */
const STARTS_AGENT_RUN = /\.workflow\.(?:execute|start)\(\s*agentRun\b/;
/** `// Prints "a" then "b"` (or `, then`): the quoted texts of one comment. */
const PRINTS_COMMENT = /^\s*\/\/\s*Prints\s+(.*)$/;

/**
 * The pattern of one quoted output: `N` and `M` (whole words) stand for a number, `...` (or `…`)
 * for anything; everything else is literal. Anchored at the start of a line.
 */
export function printedPattern(text: string): RegExp {
  const parts = text.split(/(\.\.\.|…|\b[NM]\b)/);
  const source = parts
    .map((part) =>
      part === '...' || part === '…'
        ? '.*'
        : /^[NM]$/.test(part)
          ? '\\d[\\d,]*'
          : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
    )
    .join('');
  return new RegExp(`^${source}`, 'm');
}

/** The `// Prints "…"` comments of a block, in order, each quoted text a {@link PrintedLine}. */
export function printedLines(block: TsBlock): PrintedLine[] {
  const lines = block.code.split('\n');
  const agentRunAt = lines.findIndex((line) => STARTS_AGENT_RUN.test(line));
  return lines.flatMap((line, index) => {
    const comment = PRINTS_COMMENT.exec(line);
    if (comment === null) return [];
    const quoted = [...(comment[1] ?? '').matchAll(/"([^"]+)"/g)].map((match) => match[1] ?? '');
    return quoted.map((text) => ({
      text,
      pattern: printedPattern(text),
      line: block.firstLine + index,
      afterAgentRun: agentRunAt >= 0 && index > agentRunAt,
    }));
  });
}

/** The README's sentences (prose outside code fences, joined across line breaks), split at `. ` and `; `. */
function sentences(markdown: string): string[] {
  const prose: string[] = [];
  let fenced = false;
  for (const line of markdown.split(/\r?\n/)) {
    if (/^\s{0,3}(```|~~~)/.test(line)) fenced = !fenced;
    else if (!fenced) prose.push(line);
  }
  return prose
    .join('\n')
    .split(/\n\s*\n/)
    .flatMap((paragraph) =>
      paragraph
        .replace(/\s*\n\s*/g, ' ')
        .trim()
        .split(/(?<=\.)\s+(?=[`A-Z])|(?<=;)\s+/),
    );
}

/**
 * The README's no-model claims: the client block's printed lines, the settings agentRun's failure
 * names, and the summarizer that runs without a model.
 * @throws ReadmeClaimError naming `source` and the wording looked for when a claim is not there.
 */
export function noModelClaims(source: string, markdown: string, client: TsBlock): NoModelClaims {
  const printed = printedLines(client);
  if (printed.length === 0)
    throw new ReadmeClaimError(
      `${source}: the ${client.name ?? 'client'} block (line ${client.firstLine - 1}) has no \`// Prints "…"\` comment saying what it prints`,
    );
  if (!printed.some((line) => !line.afterAgentRun))
    throw new ReadmeClaimError(
      `${source}: no \`// Prints\` comment of the ${client.name ?? 'client'} block stands before agentRun starts (${STARTS_AGENT_RUN.source})`,
    );
  const all = sentences(markdown);
  const sentence = all.find(
    (text) => /`agentRun` needs a model/.test(text) && /fails naming (both|each|them)/.test(text),
  );
  if (sentence === undefined)
    throw new ReadmeClaimError(
      `${source}: no sentence says what agentRun needs and that it fails naming the settings ("\`agentRun\` needs a model … fails naming both")`,
    );
  const agentRunSettings = [...new Set([...sentence.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((match) => match[1] ?? ''))];
  if (agentRunSettings.length < 2)
    throw new ReadmeClaimError(`${source}: the sentence names fewer than two settings: ${JSON.stringify(sentence)}`);
  const summarizer = all
    .map((text) => /\belse the built-in ([a-z][a-z -]*?) one\b/.exec(text)?.[1])
    .find((name) => name !== undefined);
  if (summarizer === undefined)
    throw new ReadmeClaimError(
      `${source}: no sentence says which summarizer runs without a model ("… else the built-in <name> one")`,
    );
  return { printed, agentRunSettings, summarizer, sentence };
}
