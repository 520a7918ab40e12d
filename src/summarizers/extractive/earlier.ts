// Sandbox-safe: earlier summaries read back into items, so that a summary of a summary merges
// with it rather than nesting it.
import { isSummaryMessage } from '../../core/compaction/transcript.js';
import { CARRIED_FACTS_PREFIX } from '../../core/compaction/coverage.js';
import {
  bySection,
  IDENTIFIERS_PREFIX,
  NOTHING,
  NOTICE_WORDS,
  OMITTED_LINE,
  SECTIONS,
  LATEST_REQUEST,
  type SectionName,
} from './format.js';
import { clip, withoutMarker } from './text.js';

/** The sections of the engine's earlier summaries, oldest first, as lines ready to be reused. */
export interface EarlierSummaries {
  /** Each a head line and its `  - ` lines. */
  goals: string[];
  decisions: string[];
  files: string[];
  /** Open items besides the latest request: failures, calls without results, the agent's last words. */
  unresolved: string[];
  /** After `Latest user request: ` in the newest earlier summary that had one. */
  latestRequest: string | undefined;
  /** Each section's `(N more not shown)`, summed (0 for Unresolved). */
  omitted: Record<SectionName, number>;
  /** The newest one's carried-facts line, then its identifiers line. */
  identifiers: string[];
}

/** The identifiers a line after the sections lists (`Identifiers seen: a, b`, `Carried facts (…): …`); else undefined. */
function listedIdentifiers(line: string): string[] | undefined {
  const trimmed = line.trim();
  const prefix = [CARRIED_FACTS_PREFIX, IDENTIFIERS_PREFIX].find((candidate) => trimmed.startsWith(candidate));
  if (prefix === undefined) return undefined;
  return trimmed
    .slice(prefix.length)
    .split(', ')
    .map((item) => item.trim().replace(/^`|`$/g, ''))
    .filter((item) => item !== '');
}

/** A section's heading as we write it (`## Goals`) or a model may (`**Goals:**`, `Goals:`), not a bare `Goals`. */
function sectionOfHeading(line: string): SectionName | undefined {
  const trimmed = line.trim();
  if (!/^(?:#{1,6}\s|\*\*)/.test(trimmed) && !trimmed.endsWith(':')) return undefined;
  const name = trimmed
    .replace(/^#{1,6}\s+/, '')
    .replace(/\*\*/g, '')
    .replace(/:$/, '')
    .trim()
    .toLowerCase();
  return SECTIONS.find(([, heading]) => heading.slice(3).toLowerCase() === name)?.[0];
}

/** Lines never copied from an earlier summary: the engine's header, the notice, and bare section names. */
function isScaffolding(line: string): boolean {
  const text = withoutMarker(line.trim());
  if (isSummaryMessage({ role: 'user', content: `${text}\n\n` })) return true;
  if (text.includes(NOTICE_WORDS)) return true;
  return SECTIONS.some(([, heading]) => heading.slice(3) === text);
}

export function readEarlierSummaries(texts: readonly string[]): EarlierSummaries {
  const earlier: EarlierSummaries = {
    ...bySection((): string[] => []),
    latestRequest: undefined,
    omitted: bySection(() => 0),
    identifiers: [],
  };
  for (const whole of texts) {
    // The lines after the sections list identifiers, not items: read apart, never copied as an item.
    const lines = whole.split(/\r?\n/);
    const listed = lines.map(listedIdentifiers);
    if (listed.some((identifiers) => identifiers !== undefined))
      earlier.identifiers = [...new Set(listed.flatMap((identifiers) => identifiers ?? []))];
    const text = lines.filter((_, index) => listed[index] === undefined).join('\n');
    for (const { section, lines } of summaryItems(text)) {
      const head = lines[0] ?? '';
      const omitted = OMITTED_LINE.exec(head);
      if (head === NOTHING) continue;
      if (omitted !== null) {
        // Unresolved lets go of what is no longer recent rather than what does not fit: nothing to count.
        if (section !== 'unresolved') earlier.omitted[section] += Number(omitted[1]);
        continue;
      }
      const body = head.slice(2);
      if (section === 'unresolved' && body.startsWith(LATEST_REQUEST))
        earlier.latestRequest = body.slice(LATEST_REQUEST.length);
      else earlier[section].push(lines.join('\n'));
    }
  }
  return earlier;
}

/**
 * The items of one earlier summary by section: a `- ` line with the indented lines under it; other
 * lines (a model's prose) are items of their own, Decisions before the first heading. Scaffolding
 * is dropped; the lines under a scaffolding item (a nested summary) become items: they are the facts.
 */
function summaryItems(text: string): Array<{ section: SectionName; lines: string[] }> {
  const items: Array<{ section: SectionName; lines: string[] }> = [];
  let section: SectionName = 'decisions';
  let current: { section: SectionName; lines: string[] } | undefined;
  let underScaffolding = false;
  // The first line is the engine's header (the caller checked it with `isSummaryMessage`).
  for (const line of text.split(/\r?\n/).slice(1)) {
    const heading = sectionOfHeading(line);
    if (line.trim() === '' || heading !== undefined) {
      section = heading ?? section;
      current = undefined;
      underScaffolding = false;
      continue;
    }
    const indented = /^\s/.test(line);
    if (isScaffolding(line)) {
      if (!indented || current === undefined) {
        current = undefined;
        underScaffolding = true;
      }
      continue;
    }
    // Our own lines are far shorter; the cap only bounds a model's paragraphs.
    const copied = clip(withoutMarker(line.trim()), 600);
    if (copied === '') continue;
    if (indented && current !== undefined) current.lines.push(`  - ${copied}`);
    else if (indented && underScaffolding) items.push({ section, lines: [`- ${copied}`] });
    else {
      const trimmed = line.trim();
      current = { section, lines: [OMITTED_LINE.test(trimmed) || trimmed === NOTHING ? trimmed : `- ${copied}`] };
      underScaffolding = false;
      items.push(current);
    }
  }
  return items;
}
