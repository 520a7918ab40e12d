// Sandbox-safe: the four sections laid out within the summary's budget in characters.
import {
  EXTRACTIVE_SUMMARY_NOTICE,
  NOTHING,
  omittedLine,
  SECTIONS,
  type Candidate,
  type SectionName,
  type Sections,
} from './format.js';
import { instructedRoom } from './instructions.js';

/**
 * A section's body within `allowance` characters: the highest-priority candidates that fit (an
 * item of several lines by its first lines alone if need be), in transcript order, and a line
 * counting the ones that did not plus the `earlierOmitted` that earlier summaries did not show.
 * Never empty: `NOTHING` when the section has no candidates and nothing was left out, the count
 * alone when none fits.
 */
function sectionBody(candidates: readonly Candidate[], allowance: number, earlierOmitted = 0): string {
  if (candidates.length === 0) return earlierOmitted > 0 ? omittedLine(earlierOmitted) : NOTHING;
  const ordered = [...candidates].sort((a, b) => a.order - b.order).map((candidate) => candidate.text);
  if (earlierOmitted > 0) ordered.push(omittedLine(earlierOmitted));
  const all = ordered.reduce((sum, line) => sum + line.length + 1, -1);
  if (all <= allowance) return ordered.join('\n');
  const ranked = [...candidates].sort((a, b) => b.priority - a.priority || a.order - b.order);
  const room = allowance - omittedLine(candidates.length + earlierOmitted).length;
  const kept: Candidate[] = [];
  let used = 0;
  for (const candidate of ranked) {
    // An item with lines under it (a goal's opening) that does not fit whole keeps the first lines
    // that do: the run's first request must not vanish because its details are long.
    const lines = candidate.text.split('\n');
    const fitting = lines
      .map((_, index) => lines.slice(0, lines.length - index).join('\n'))
      .find((text) => used + text.length + 1 <= room);
    if (fitting === undefined) continue;
    kept.push({ ...candidate, text: fitting });
    used += fitting.length + 1;
  }
  kept.sort((a, b) => a.order - b.order);
  return [
    ...kept.map((candidate) => candidate.text),
    omittedLine(candidates.length - kept.length + earlierOmitted),
  ].join('\n');
}

/** At most this share of the room goes first to lines that match the instructions. */
const INSTRUCTED_SHARE = 0.5;

/** The order sections get room in, and their shares of it: what an agent needs to continue first. */
const FILL_ORDER: ReadonlyArray<readonly [keyof Sections, number]> = [
  ['unresolved', 0.2],
  ['goals', 0.2],
  ['files', 0.3],
  ['decisions', 0.3],
];

/**
 * Lays out the notice and the four sections within `budget` characters. Each section first gets
 * its share of the room; room a section does not need then goes to the others, in fill order.
 * When even the bare skeleton does not fit, the skeleton is returned (the engine then rejects it
 * as too long and falls back to the hard trim).
 */
export function renderSummary(
  sections: Sections,
  budget: number,
  omitted: Readonly<Record<SectionName, number>>,
): string {
  const layout = (bodies: Record<keyof Sections, string>): string =>
    [EXTRACTIVE_SUMMARY_NOTICE, ...SECTIONS.map(([name, heading]) => `${heading}\n${bodies[name]}`)].join('\n\n');
  const body = (name: SectionName, allowance: number): string => sectionBody(sections[name], allowance, omitted[name]);
  const bodies: Record<keyof Sections, string> = {
    goals: body('goals', 0),
    decisions: body('decisions', 0),
    files: body('files', 0),
    unresolved: body('unresolved', 0),
  };
  const extra = budget - layout(bodies).length;
  if (extra <= 0) return layout(bodies);

  // docs/design.md#summary-instructions What matches the caller's instructions gets room first, in
  // every section, before any share is handed out — up to half the room, so that the other
  // sections keep theirs: within a section a matching line is never let go for one that does not.
  let spare = extra;
  let instructed = Math.floor(extra * INSTRUCTED_SHARE);
  for (const [name] of FILL_ORDER) {
    const need = Math.min(instructed, instructedRoom(sections[name]));
    if (need <= 0) continue;
    const before = bodies[name].length;
    bodies[name] = body(name, before + need);
    spare -= bodies[name].length - before;
    instructed -= bodies[name].length - before;
  }
  const shared = spare;
  for (const [name, share] of FILL_ORDER) {
    const before = bodies[name].length;
    bodies[name] = body(name, before + Math.floor(shared * share));
    spare -= bodies[name].length - before;
  }
  for (const [name] of FILL_ORDER) {
    const before = bodies[name].length;
    bodies[name] = body(name, before + spare);
    spare -= bodies[name].length - before;
  }
  return layout(bodies);
}
