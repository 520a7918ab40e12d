// Sandbox-safe: the economic rules of docs/design.md#economics: a rewrite re-bills everything after its first
// change once (the unchanged prefix costs `cachedInputPrice`), and what it removes is not billed again.
import { applyElisions } from './elision.js';
import type { Aim } from './options.js';
import type { Pass } from './pass.js';
import { findCut, lastTurnCut, regionsAt, windowStarts, type Regions } from './regions.js';
import { isSummaryMessage } from './transcript.js';
import type { ChatMessage, Elision } from '../types.js';

/** Share of the low-water mark left for the summary when the window gives way, and in `worthStarting`. Chosen with bench:cost. */
export const SUMMARY_ROOM_SHARE = 0.25;

function keptMessages(messages: readonly ChatMessage[], regions: Regions): (cut: number) => ChatMessage[] {
  const { cut: start, removable } = regions;
  const pinnedBefore = messages.slice(0, start).filter((_, index) => removable[index] !== 1);
  return (cut) => [
    ...pinnedBefore,
    ...messages.slice(start).filter((_, offset) => start + offset >= cut || removable[start + offset] !== 1),
  ];
}

export interface WindowPlan {
  regions: Regions;
  /** Count of every message the compaction keeps: the summary comes on top. */
  keptTokens: number;
  summaryRoom: number;
}

/** docs/design.md#window-gives-way: the window gives way one valid start at a time until it fits, down to the last complete turn. */
export function planWindow({ input: messages, regions: standard, aim, options }: Pass): WindowPlan {
  const summaryRoom = Math.ceil(SUMMARY_ROOM_SHARE * aim.mark);
  const kept = keptMessages(messages, standard);
  const weigh = (cut: number): number => aim.counter.count(kept(cut));
  const keptTokens = weigh(standard.cut);
  if (!options.recentWindowGivesWay || keptTokens + summaryRoom <= aim.mark)
    return { regions: standard, keptTokens, summaryRoom };
  const floor = Math.max(standard.cut, lastTurnCut(messages, standard.groups));
  let chosen = standard.cut;
  let chosenTokens = keptTokens;
  for (const cut of windowStarts(messages, standard.cut, floor, standard.groups)) {
    chosen = cut;
    chosenTokens = weigh(cut);
    if (chosenTokens + summaryRoom <= aim.mark) break;
  }
  const regions = chosen === standard.cut ? standard : regionsAt(chosen, standard.groups, standard.removable);
  return { regions, keptTokens: chosenTokens, summaryRoom };
}

/** docs/design.md#no-thrash: within the limit, only a compaction that can reach the low-water mark is worth its re-billing. */
export function worthStarting(plan: WindowPlan, aim: Aim): boolean {
  return plan.regions.middle.length > 0 && plan.keptTokens + plan.summaryRoom <= aim.mark;
}

/** docs/design.md#no-thrash: whether the newest summary may be last round's: all after it but the last turn is in a `keepRecent` window. */
export function summarizedLastRound(
  messages: readonly ChatMessage[],
  regions: Regions,
  keepRecent: number,
  keepUserMessages = false,
): boolean {
  let summary = messages.length - 1;
  while (summary >= 0 && !isSummaryMessage(messages[summary] ?? { role: 'user', content: null })) summary -= 1;
  if (summary < 0) return false;
  const lastTurn = lastTurnCut(messages, regions.groups);
  if (lastTurn <= summary) return true;
  const before = messages.slice(0, lastTurn);
  const window = findCut(before, keepRecent);
  for (let index = summary + 1; index < window; index += 1) {
    const message = messages[index];
    // docs/design.md#user-words: the user messages a compaction kept stand after its summary.
    if (keepUserMessages && message?.role === 'user') continue;
    if (regions.removable[index] === 1) return false;
  }
  return true;
}

/**
 * docs/design.md#elision-that-pays: whether an elision-only epoch pays, in a model of one cycle (growth `g`
 * a round from `A`, what a summary leaves, to the trigger `T`). An epoch at `X` reclaiming `R` re-bills
 * its suffix `S` once, `(1 − c)·S`; saves `c·R` a round until the summary; defers the summary by `R/g`
 * rounds spent near `T`; and saves a share `R/(T − A)` of a summary's re-billing, `(1 − c)·A`. It pays
 * when `c·R·(A − X)/g + (1 − c)·A·R/(T − A) > (1 − c)·S`, with `c` = `cachedInputPrice`.
 */
export function epochPays(pass: Pass, elisions: readonly Elision[]): boolean {
  const first = elisions[0]?.index;
  if (first === undefined) return false;
  const { input, regions, aim, tokensBefore, options } = pass;
  const { counter } = aim;
  const elided = applyElisions(input, elisions);
  const rebilled = counter.count(elided.slice(first));
  const reclaimed = counter.count(input.slice(first)) - rebilled;
  if (reclaimed <= 0) return false;
  // Growth per round: the newest rounds (the recent window, or at least the last turn) per assistant turn.
  const newest = input.slice(Math.min(regions.cut, lastTurnCut(input, regions.groups)));
  const turns = Math.max(1, newest.filter((message) => message.role === 'assistant').length);
  const growth = Math.max(1, counter.count(newest) / turns);
  const trigger = aim.target ?? aim.trigger;
  const plan = planWindow(pass);
  const afterSummary = Math.min(trigger - 1, plan.keptTokens + plan.summaryRoom);
  // A summary due next round anyway leaves the stubs nothing to save.
  if (tokensBefore - reclaimed + growth > trigger) return false;
  const price = options.cachedInputPrice;
  const saving =
    (price * reclaimed * (afterSummary - tokensBefore)) / growth +
    ((1 - price) * afterSummary * reclaimed) / Math.max(1, trigger - afterSummary);
  return saving > (1 - price) * rebilled;
}
