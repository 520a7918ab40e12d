// Sandbox-safe: the four sections laid out within the summary's budget in characters.
import {
  bySection,
  EXTRACTIVE_SUMMARY_NOTICE,
  NOTHING,
  OMITTED_LINE,
  omittedLine,
  SECTIONS,
  type Candidate,
  type SectionName,
  type Sections,
} from './format.js';
import { instructedRoom } from './instructions.js';
import { clip } from './text.js';

/** The shortest cut of an item worth showing: less says nothing a reader can use. */
const SHORTEST_CUT = 24;

/**
 * A section's body within `allowance` characters: the highest-priority candidates that fit, in
 * transcript order, and a line counting the rest plus `earlierOmitted`. The count alone only when
 * not even a cut item fits; `NOTHING` when there is nothing at all.
 */
function sectionBody(candidates: readonly Candidate[], allowance: number, earlierOmitted = 0): string {
  if (candidates.length === 0) return earlierOmitted > 0 ? omittedLine(earlierOmitted) : NOTHING;
  const ordered = [...candidates].sort((a, b) => a.order - b.order).map((candidate) => candidate.text);
  if (earlierOmitted > 0) ordered.push(omittedLine(earlierOmitted));
  const all = ordered.reduce((sum, line) => sum + line.length + 1, -1);
  if (all <= allowance) return ordered.join('\n');
  const ranked = [...candidates].sort((a, b) => b.priority - a.priority || a.order - b.order);
  const whole = earlierOmitted === 0 ? fit(ranked, allowance) : [];
  const kept =
    whole.length === candidates.length
      ? whole
      : fit(ranked, allowance - omittedLine(candidates.length + earlierOmitted).length);
  const omitted = candidates.length - kept.length + earlierOmitted;
  return [...kept.map((candidate) => candidate.text), ...(omitted > 0 ? [omittedLine(omitted)] : [])].join('\n');
}

/**
 * The highest-priority candidates that fit in `room` (each with its newline), in transcript order;
 * an item of several lines keeps the first lines that fit (the first request must not vanish for
 * long details). When none fits, the best one cut to the room, unless under {@link SHORTEST_CUT}.
 */
function fit(ranked: readonly Candidate[], room: number): Candidate[] {
  const kept: Candidate[] = [];
  let used = 0;
  for (const candidate of ranked) {
    const lines = candidate.text.split('\n');
    const fitting = lines
      .map((_, index) => lines.slice(0, lines.length - index).join('\n'))
      .find((text) => used + text.length + 1 <= room);
    if (fitting === undefined) continue;
    kept.push({ ...candidate, text: fitting });
    used += fitting.length + 1;
  }
  const best = ranked[0];
  if (kept.length === 0 && best !== undefined && room - 1 >= SHORTEST_CUT)
    kept.push({ ...best, text: clip(best.text.split('\n')[0] ?? '', room - 1) });
  return kept.sort((a, b) => a.order - b.order);
}

/** The room a section that shows no item yet gets first, for its best item. */
const FIRST_ITEM_ROOM = 160;
/** At most this share of the room goes first to lines that match the instructions. */
const INSTRUCTED_SHARE = 0.5;

/** The order sections get room in, and their shares: what an agent needs to continue first. */
const FILL_ORDER: ReadonlyArray<readonly [keyof Sections, number]> = [
  ['unresolved', 0.2],
  ['goals', 0.2],
  ['files', 0.3],
  ['decisions', 0.3],
];

/**
 * The notice and the four sections within `budget` characters: each section gets its share, then
 * what others leave, in fill order. The bare skeleton when not even it fits (the engine rejects it).
 */
export function renderSummary(
  sections: Sections,
  budget: number,
  omitted: Readonly<Record<SectionName, number>>,
): string {
  const layout = (bodies: Record<keyof Sections, string>): string =>
    [EXTRACTIVE_SUMMARY_NOTICE, ...SECTIONS.map(([name, heading]) => `${heading}\n${bodies[name]}`)].join('\n\n');
  const body = (name: SectionName, allowance: number): string => sectionBody(sections[name], allowance, omitted[name]);
  const bodies = bySection((name) => body(name, 0));
  const extra = budget - layout(bodies).length;
  if (extra <= 0) return layout(bodies);

  let spare = extra;
  const grow = (name: SectionName, more: number): number => {
    const before = bodies[name].length;
    bodies[name] = body(name, before + more);
    const took = bodies[name].length - before;
    spare -= took;
    return took;
  };
  // Lines that match the instructions get room first, up to half of it (docs/design.md#summary-instructions).
  let instructed = Math.floor(extra * INSTRUCTED_SHARE);
  for (const [name] of FILL_ORDER) {
    const need = Math.min(instructed, instructedRoom(sections[name]));
    if (need > 0) instructed -= grow(name, need);
  }
  // A section that shows only its count gets an equal part for its best item before the shares.
  const bare = FILL_ORDER.filter(([name]) => OMITTED_LINE.test(bodies[name]));
  const part = Math.min(FIRST_ITEM_ROOM, Math.floor(spare / Math.max(1, bare.length)));
  for (const [name] of bare) grow(name, Math.min(spare, part));
  const shared = spare;
  for (const [name, share] of FILL_ORDER) grow(name, Math.floor(shared * share));
  for (const [name] of FILL_ORDER) grow(name, spare);
  return layout(bodies);
}
