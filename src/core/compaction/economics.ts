// Sandbox-safe: the economic rules of docs/design.md#economics — how far the recent window gives way, whether a
// compaction is worth its cache miss, and whether an elision epoch pays for the suffix it re-bills.
//
// The cost model behind them (bench/cost.ts, docs/design.md#economics): a provider bills the longest unchanged
// message prefix of a request at `cachedInputPrice` of the normal price. Any rewrite of the
// conversation re-bills everything after the first changed message at the full price once; what
// it removes is then not billed again (at the cached price) on every later request.
import type { Aim, ResolvedOptions } from './options.js';
import { findCut, lastTurnCut, regionsAt, windowStarts, type Regions } from './regions.js';
import { isSummaryMessage } from './transcript.js';
import type { ChatMessage, Elision, TokenCounter } from '../types.js';

/**
 * Share of the low-water mark left for the summary when the recent window gives way (the window
 * shrinks until it and the sticky messages fit the rest); also the room `worthStarting` allows for.
 * Chosen with bench:cost: larger shares defer more compactions, leaving more requests over the window.
 */
export const SUMMARY_ROOM_SHARE = 0.25;

/** The messages a compaction with window start `cut` keeps: the sticky ones before it, everything from it. */
function keptMessages(messages: readonly ChatMessage[], regions: Regions): (cut: number) => ChatMessage[] {
  const pinnedBefore: ChatMessage[] = [];
  for (let index = 0; index < regions.cut; index += 1) {
    const message = messages[index];
    if (message !== undefined && regions.removable[index] !== 1) pinnedBefore.push(message);
  }
  return (cut) => {
    const kept = [...pinnedBefore];
    for (let index = regions.cut; index < messages.length; index += 1) {
      const message = messages[index];
      if (message !== undefined && (index >= cut || regions.removable[index] !== 1)) kept.push(message);
    }
    return kept;
  };
}

/** Where a compaction puts its recent window, and what that window and the sticky messages weigh. */
export interface WindowPlan {
  regions: Regions;
  /** Count of every message the compaction keeps (sticky ones and the window): the summary comes on top. */
  keptTokens: number;
  /** The tokens the plan leaves for the summary under the mark. */
  summaryRoom: number;
}

/**
 * docs/design.md#window-gives-way: the recent window is `keepRecent` messages when they fit the low-water mark with
 * room for the summary; otherwise it gives way, one valid window start at a time, down to the last
 * complete turn. With `recentWindowGivesWay` off, the window is the reference's.
 */
export function planWindow(
  messages: readonly ChatMessage[],
  standard: Regions,
  aim: Aim,
  options: ResolvedOptions,
): WindowPlan {
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
  if (chosen === standard.cut) return { regions: standard, keptTokens, summaryRoom };
  return {
    regions: regionsAt(messages, chosen, standard.groups, standard.removable),
    keptTokens: chosenTokens,
    summaryRoom,
  };
}

/**
 * docs/design.md#no-thrash: a compaction over the trigger (but within the limit) is worth starting when its
 * plan can bring the conversation back to the low-water mark: then the next one is a whole
 * trigger-to-mark of growth away. One that cannot (the last turn alone is too big) would reclaim a
 * little and come back next round, re-billing the conversation each time; it waits until the
 * conversation is over the limit, where a compaction is no longer optional.
 */
export function worthStarting(plan: WindowPlan, aim: Aim): boolean {
  return plan.regions.middle.length > 0 && plan.keptTokens + plan.summaryRoom <= aim.mark;
}

/**
 * docs/design.md#no-thrash: whether the newest summary may have been written last round, as far as
 * the conversation shows (the engine keeps no state): set aside the last complete turn, and
 * everything after the summary lies inside a `keepRecent` window. With `keepUserMessages`, the user
 * messages the summary kept in place after it do not count as growth.
 */
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
    // docs/design.md#user-words: the user messages a compaction kept stand after its summary, outside the window.
    if (keepUserMessages && message?.role === 'user') continue;
    if (regions.removable[index] === 1) return false;
  }
  return true;
}

/**
 * docs/design.md#elision-that-pays: whether an elision-only epoch below the trigger pays for itself, in a model of one
 * compaction cycle (the conversation grows by `g` tokens a round from `A`, what a summary leaves,
 * to the trigger `T`, where it is summarized back to `A`). An epoch at `X` that reclaims `R`:
 * - re-bills everything from its first stub on (`S` tokens) at the full price once: `(1 − c)·S`;
 * - saves `c·R` on each of the `(T − X)/g` rounds until the summary would have come;
 * - but defers that summary by `R/g` rounds, which are then spent near `T` instead of near `A`:
 *   `c·(T − A)·R/g` lost;
 * - and so saves a share `R/(T − A)` of a summary's own re-billing, `(1 − c)·A`.
 * It pays when `c·R·(A − X)/g + (1 − c)·A·R/(T − A) > (1 − c)·S` (the first term is never
 * positive: in a cycle, reclaiming early mostly moves the summary later). `c` is
 * `cachedInputPrice`; `g` the newest rounds' tokens per assistant turn; `A` the plan of a summary
 * now. Counts are of suffixes, so before and after are measured the same way whatever the counter
 * (a calibrated counter counts a changed conversation with its estimator: docs/design.md#never-worse, one count).
 */
export function epochPays(
  input: readonly ChatMessage[],
  elided: readonly ChatMessage[],
  elisions: readonly Elision[],
  regions: Regions,
  aim: Aim,
  tokensBefore: number,
  options: ResolvedOptions,
): boolean {
  const first = elisions[0]?.index;
  if (first === undefined) return false;
  const counter: TokenCounter = aim.counter;
  const rebilled = counter.count(elided.slice(first));
  const reclaimed = counter.count(input.slice(first)) - rebilled;
  if (reclaimed <= 0) return false;
  // Growth per round: the newest rounds, which no elision or summary has touched yet — the recent
  // window, or at least the last complete turn — per assistant turn in them.
  const newest = input.slice(Math.min(regions.cut, lastTurnCut(input, regions.groups)));
  const turns = Math.max(1, newest.filter((message) => message.role === 'assistant').length);
  const growth = Math.max(1, counter.count(newest) / turns);
  const trigger = aim.target ?? aim.trigger;
  const plan = planWindow(input, regions, aim, options);
  const afterSummary = Math.min(trigger - 1, plan.keptTokens + plan.summaryRoom);
  // A summary due next round anyway (the trigger is less than a round of growth away) leaves the stubs nothing to save.
  if (tokensBefore - reclaimed + growth > trigger) return false;
  const price = options.cachedInputPrice;
  const saving =
    (price * reclaimed * (afterSummary - tokensBefore)) / growth +
    ((1 - price) * afterSummary * reclaimed) / Math.max(1, trigger - afterSummary);
  return saving > (1 - price) * rebilled;
}
