// Sandbox-safe: the candidate lines of the four sections, ranked — from the middle's turns, and the
// items earlier summaries carry over.
import { LAST_AGENT_MESSAGE, LATEST_REQUEST, type Candidate, type Sections } from './format.js';
import { fileAndCommandCandidates } from './files.js';
import type { TurnCall, Turns } from './turns.js';
import {
  argumentFields,
  clip,
  code,
  COMMAND_KEYS,
  decisionScore,
  firstLine,
  PATH_KEYS,
  proseLines,
  sentencesOf,
  withoutMarker,
} from './text.js';

export function buildSections(transcript: Turns): Sections {
  return {
    goals: goalCandidates(transcript),
    decisions: decisionCandidates(transcript.assistants, transcript.earlier.decisions),
    files: fileAndCommandCandidates(transcript),
    unresolved: unresolvedCandidates(transcript),
  };
}

/** A user turn's opening: its first line, and after a short one a few more, up to about 400 characters; bare tags skipped. */
function goalLines(text: string): string[] {
  const lines = proseLines(text).filter((line) => !/^<\/?[\w-]+>$/.test(line));
  const first = lines[0];
  if (first === undefined) return [];
  if (first.length >= 120) return [clip(withoutMarker(first), 240)];
  const picked: string[] = [];
  let used = 0;
  for (const line of lines.slice(0, 5)) {
    const copied = clip(withoutMarker(line), 200);
    if (copied === '' || (picked.length > 0 && used + copied.length > 400)) break;
    picked.push(copied);
    used += copied.length;
  }
  return picked;
}

/** Without our list markers (`- `, `  - `). */
function itemLines(item: string): string[] {
  return item.split('\n').map((line) => line.replace(/^\s*- /, ''));
}

function goalCandidates(transcript: Turns): Candidate[] {
  const seen = new Set<string>();
  // Earlier goals stand for the older user turns: the run's first request keeps its place.
  const carried = transcript.earlier.goals;
  const turns = [
    ...carried.map((item, index) => {
      const [head = '', ...rest] = itemLines(item);
      return { lines: [clip(head, 240), ...rest.map((line) => clip(line, 200))], order: index - carried.length };
    }),
    ...transcript.users.map((turn) => ({ lines: goalLines(turn.text), order: turn.order })),
  ];
  const last = turns.length - 1;
  return turns.flatMap((turn, index) => {
    const [head, ...rest] = turn.lines;
    if (head === undefined || seen.has(head)) return [];
    seen.add(head);
    // The first request sets the task, the latest is where the run stands; of the others the newer rank higher.
    const priority = index === 0 ? 100 : index === last ? 90 : 10 + (40 * index) / Math.max(1, last);
    const text = [`- ${head}`, ...rest.map((line) => `  - ${line}`)].join('\n');
    return [{ text, priority, order: turn.order }];
  });
}

/** A heading in prose (`Updated Plan:`, `**Next steps:**`): it says nothing itself. */
function isLabel(sentence: string): boolean {
  const text = sentence.replace(/\*\*/g, '').trim();
  return text.endsWith(':') && text.split(/\s+/).length <= 4;
}

/** Decision sentences of the assistant turns, then those of earlier summaries (`carried`, oldest first). */
function decisionCandidates(assistants: Turns['assistants'], carried: readonly string[] = []): Candidate[] {
  const candidates: Candidate[] = [];
  const seen = new Set<string>();
  const add = (line: string, score: number, rank: number, order: number): void => {
    const key = line.toLowerCase().replace(/\s+/g, ' ');
    if (seen.has(key)) return;
    seen.add(key);
    candidates.push({ text: `- ${line}`, priority: (score === 0 ? 1 : score) + rank, order });
  };
  assistants.forEach((turn, turnIndex) => {
    const sentences = proseLines(turn.text)
      .filter((line) => !line.startsWith('|'))
      .flatMap((line) => sentencesOf(withoutMarker(line)));
    sentences.forEach((sentence, sentenceIndex) => {
      const score = decisionScore(sentence);
      if (score === 0 && sentenceIndex > 0) return;
      if (sentence.length < 12 || isLabel(sentence)) return;
      const recency = turnIndex / Math.max(1, assistants.length);
      add(clip(sentence, 240), score, recency, turn.order + sentenceIndex / 1000);
    });
  });
  // Earlier decisions rank below new ones of the same strength, in [-1, 0) by age: the oldest go first.
  const lines = carried.flatMap(itemLines).map((line) => clip(line, 240));
  lines.forEach((line, index) => {
    const age = (index - lines.length) / lines.length;
    if (line !== '') add(line, decisionScore(line), age, index - lines.length);
  });
  return candidates;
}

/** Unresolved looks for errors among this many of the latest tool results. */
const RECENT_RESULTS = 6;

function unresolvedCandidates(transcript: Turns): Candidate[] {
  const candidates: Candidate[] = [];
  const { earlier } = transcript;
  const latestUser = transcript.users.at(-1);
  const opening = latestUser === undefined ? [] : goalLines(latestUser.text);
  // No user turn since the earlier summary: the request it recorded is still the latest.
  const request = opening.find((line) => line.length >= 20) ?? opening[0] ?? earlier.latestRequest;
  if (request !== undefined) candidates.push({ text: `- ${LATEST_REQUEST}${request}`, priority: 100, order: -1 });

  // Errors among the latest tool results that no later identical call cleared.
  const recent = transcript.results.slice(-RECENT_RESULTS);
  for (const [index, { name, call, result }] of recent.entries()) {
    if (result.error === undefined) continue;
    const clears = (later: (typeof recent)[number]): boolean =>
      later.call?.name === call?.name && later.call?.args === call?.args && later.result.error === undefined;
    if (call !== undefined && recent.slice(index + 1).some(clears)) continue;
    const subject = call === undefined ? (name ?? 'a tool') : callSubject(call);
    candidates.push({ text: `- ${subject} failed: ${result.error}`, priority: 80 + index, order: result.order });
  }
  for (const call of transcript.calls.filter((item) => item.result === undefined).slice(-3))
    candidates.push({ text: `- No result recorded for ${callSubject(call)}`, priority: 70, order: call.order });

  // The agent's last words say where it stood; skip headings and one-word lines ("Perfect!").
  let lastWords = false;
  for (const turn of [...transcript.assistants].reverse()) {
    const line = proseLines(turn.text)
      .map(withoutMarker)
      .find((candidate) => candidate.length >= 20);
    if (line === undefined) continue;
    candidates.push({ text: `- ${LAST_AGENT_MESSAGE}${clip(line, 200)}`, priority: 60, order: turn.order });
    lastWords = true;
    break;
  }

  // Earlier open items stay while there are fewer than RECENT_RESULTS new results and no later
  // call of the same command, file or tool; earlier last words until new ones.
  const subjects = new Set(transcript.calls.map(callSubject));
  const open = earlier.unresolved.filter((item) => {
    if (item.startsWith(`- ${LAST_AGENT_MESSAGE}`)) return !lastWords;
    if (transcript.results.length >= RECENT_RESULTS) return false;
    const subject = /^- (.+?) failed: /.exec(item)?.[1] ?? /^- No result recorded for (.+)$/.exec(item)?.[1];
    return subject === undefined || !subjects.has(subject);
  });
  open.forEach((item, index) => {
    const rank = (index + 1) / (open.length + 1);
    const priority = item.startsWith(`- ${LAST_AGENT_MESSAGE}`) ? 60 : 65 + rank;
    candidates.push({ text: item, priority, order: -1 + rank });
  });
  return candidates;
}

/** A call's name in a line: its command, else its path, else its tool. */
function callSubject(call: TurnCall): string {
  const fields = argumentFields(call.args);
  const command = COMMAND_KEYS.map((key) => fields[key]).find((value) => /\s/.test(value?.trim() ?? ''));
  if (command !== undefined) return `${code(clip(firstLine(command), 120))} (${call.name})`;
  const path = PATH_KEYS.map((key) => fields[key]).find((value) => value !== undefined && value.trim() !== '');
  if (path !== undefined) return `${call.name} ${code(path.trim())}`;
  return call.name;
}
