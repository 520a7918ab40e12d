// Sandbox-safe: the extractive summary's format — its notice, sections and fixed phrases, which a
// later summary reads back (earlier.ts).

/** The first line of every extractive summary: whoever reads it must know no model wrote it. */
export const EXTRACTIVE_SUMMARY_NOTICE =
  '_Offline extractive summary: lines copied from the transcript, not written by a model._';

/** In the order the instruction asks for them. */
export const SECTIONS = [
  ['goals', '## Goals'],
  ['decisions', '## Decisions'],
  ['files', '## Files and commands'],
  ['unresolved', '## Unresolved'],
] as const;
export type SectionName = (typeof SECTIONS)[number][0];

export const NOTHING = '- nothing recorded';
export const LATEST_REQUEST = 'Latest user request: ';
export const LAST_AGENT_MESSAGE = 'Last agent message: ';
/** The notice without its emphasis marks: found however an item quoted it. */
export const NOTICE_WORDS = EXTRACTIVE_SUMMARY_NOTICE.replace(/^_|_$/g, '');
export const OMITTED_LINE = /^- \((\d+) more not shown\)$/;
/** The start of the line after the sections that lists identifiers they did not copy (identifiers.ts). */
export const IDENTIFIERS_PREFIX = 'Identifiers seen:';

export function omittedLine(omitted: number): string {
  return `- (${omitted} more not shown)`;
}

/** One line the summary may hold: higher `priority` is kept first, `order` sorts what is kept. */
export interface Candidate {
  text: string;
  priority: number;
  order: number;
}

export type Sections = Record<SectionName, Candidate[]>;

export function bySection<T>(value: (name: SectionName) => T): Record<SectionName, T> {
  return Object.fromEntries(SECTIONS.map(([name]) => [name, value(name)])) as Record<SectionName, T>;
}
