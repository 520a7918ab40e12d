// Sandbox-safe: how a pass that summarizes ends: the summary in place of the middle (docs/design.md#assembly) if it
// passes the proof (docs/design.md#proof), with what it left out carried (docs/design.md#coverage); else the hard trim.
import {
  coverageOf,
  MAX_REQUIRED_IDENTIFIERS,
  missingFrom,
  requiredIdentifiers,
  withCarriedFacts,
} from './coverage.js';
import { planWindow } from './economics.js';
import { elidedContents } from './elision.js';
import { hardTrim } from './hard-trim.js';
import { elidedExcept, finish, messagesAt, type Elided, type NameReplaced, type Pass } from './pass.js';
import type { Regions } from './regions.js';
import { capMiddle, summaryContent } from './transcript.js';
import { keepUserWords, userMessagesOf, type UserWords } from './user-words.js';
import type { ChatMessage, CompactionResult, ContentPart, Coverage, FallbackReason } from '../types.js';

function assemble(messages: readonly ChatMessage[], regions: Regions, summary: string): ChatMessage[] {
  const first = regions.middle[0];
  return messages.flatMap((message, index): ChatMessage[] =>
    index === first ? [{ role: 'user', content: summary }] : regions.inMiddle[index] === 1 ? [] : [message],
  );
}

/**
 * What a summary replaces, once the window gave way (docs/design.md#window-gives-way: planned on the input, it weighs
 * only messages no elision touches) and the user's words left it (docs/design.md#user-words); and `seen`, the middle
 * as the summarizer sees it, cut once for every request (docs/design.md#summarizer-request).
 */
export function summarizedMiddle(pass: Pass, stubbed: Elided): SummarizedMiddle {
  const { input, options, regions, aim } = pass;
  const windowPlan = options.recentWindowGivesWay ? planWindow(pass) : undefined;
  const words = pass.keepUserMessages
    ? keepUserWords(input, windowPlan?.regions ?? regions, aim, options.keepUserMessagesShare)
    : undefined;
  const planned = words?.regions ?? windowPlan?.regions ?? regions;
  const floor = windowPlan && windowPlan.keptTokens + (words?.keptTokens ?? 0) + windowPlan.summaryRoom;
  const elided = words === undefined ? stubbed : elidedExcept(pass, stubbed, words.kept);
  const messages = messagesAt(input, planned.middle);
  const contents = elidedContents(planned.middle, elided.elisions);
  const seen = capMiddle(messages, options.toolResultCap, contents);
  return { planned, floor, messages, contents, words, elided, seen };
}

interface SummarizedMiddle {
  planned: Regions;
  /** With the window giving way: what the kept messages and the summary's room take together. */
  floor: number | undefined;
  messages: ChatMessage[];
  contents: (string | ContentPart[] | undefined)[] | undefined;
  /** With `keepUserMessages`: the user messages kept out of `planned`'s middle. */
  words?: UserWords | undefined;
  elided: Elided;
  seen: ChatMessage[];
}

export class Assembly {
  /** Counted at most once, and only when the proof asks. */
  private trimFits: boolean | undefined;
  /** Asked only once a summary came back. */
  private requiredOnce: string[] | undefined;
  /** docs/design.md#coverage */
  readonly checking: boolean;
  private readonly named: string;

  constructor(
    private readonly pass: Pass,
    private readonly middle: SummarizedMiddle,
    private readonly nameReplaced: NameReplaced | undefined,
  ) {
    this.checking = pass.options.summaryCoverage !== 'off';
    this.named = nameReplaced?.('summary', middle.planned.middle) ?? '';
  }

  /** docs/design.md#hard-trim The fallback; `reason` says why. */
  trimmed(reason: FallbackReason): CompactionResult {
    const trim = this.hardTrim();
    return finish(this.pass, {
      ...trim,
      fallback: true,
      fallbackReason: reason,
      elisions: this.middle.elided.elisions,
      summary: null,
      ...this.userMessages(trim.cutIndex),
    });
  }

  private hardTrim(): ReturnType<typeof hardTrim> {
    return hardTrim(this.middle.elided.messages(), this.middle.planned, this.pass.aim, this.nameReplaced);
  }

  /** docs/design.md#never-worse Without a target, a summary over contextBudget loses to a hard trim that fits. */
  private trimWouldFit(): boolean {
    return (this.trimFits ??= this.pass.aim.counter.count(this.hardTrim().messages) <= this.pass.aim.limit);
  }

  /** docs/design.md#proof Whether an assembled conversation is shorter than the input and fits the target. */
  accepts(candidate: ChatMessage[]): boolean {
    const { aim, options, tokensBefore } = this.pass;
    const tokens = aim.counter.count(candidate);
    if (!(tokens < tokensBefore && (aim.target === undefined || tokens <= aim.target))) return false;
    return !(options.trimBeatsOverflow && aim.target === undefined && tokens > aim.limit && this.trimWouldFit());
  }

  /** The identifiers the middle shares with what stays: a summary must keep them (docs/design.md#coverage). */
  required(): string[] {
    const { pass, middle } = this;
    return (this.requiredOnce ??= this.checking
      ? requiredIdentifiers(
          middle.messages,
          pass.input.filter((_, index) => middle.planned.inMiddle[index] !== 1),
          pass.options.toolResultCap,
          middle.contents,
        ).slice(0, MAX_REQUIRED_IDENTIFIERS)
      : []);
  }

  missing(summary: string): string[] {
    return missingFrom(summary, this.required());
  }

  private contentOf(written: string): string {
    return `${summaryContent(written, this.middle.planned.middle.length)}${this.named}`;
  }

  assembledOf(written: string): ChatMessage[] {
    return assemble(this.pass.input, this.middle.planned, this.contentOf(written));
  }

  /** The summary, with what it left out carried when that still fits; undefined when neither fits. */
  accepted(written: string): CompactionResult | undefined {
    const missing = this.checking ? this.missing(written) : [];
    if (missing.length > 0) {
      const carried = withCarriedFacts(written, missing);
      const assembled = this.assembledOf(carried);
      if (this.accepts(assembled))
        return this.result(this.contentOf(carried), assembled, coverageOf(this.required(), written, carried));
    }
    const assembled = this.assembledOf(written);
    if (!this.accepts(assembled)) return undefined;
    const coverage = this.checking ? coverageOf(this.required(), written, written) : undefined;
    return this.result(this.contentOf(written), assembled, coverage);
  }

  private userMessages(cutIndex: number): Pick<CompactionResult, 'userMessages'> {
    const userMessages = this.middle.words && userMessagesOf(this.middle.words, cutIndex);
    return userMessages === undefined ? {} : { userMessages };
  }

  private result(summary: string, assembled: ChatMessage[], coverage?: Coverage): CompactionResult {
    const { aim } = this.pass;
    const { planned, floor } = this.middle;
    const result = finish(this.pass, {
      messages: assembled,
      dropped: planned.middle.length,
      fallback: false,
      elisions: this.middle.elided.elisions,
      summary,
      cutIndex: planned.middle.at(-1) ?? -1,
      ...(coverage === undefined ? {} : { coverage }),
      ...this.userMessages(planned.middle.at(-1) ?? -1),
    });
    if (floor === undefined || result.tokensAfter <= aim.mark) return result;
    // docs/design.md#window-gives-way: over the mark, say why.
    const reason = floor > aim.mark ? 'recent-window' : 'summary-length';
    return { ...result, aboveMark: { mark: aim.mark, reason } };
  }
}
