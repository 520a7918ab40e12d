// Sandbox-safe: whether a conversation needs compaction now, and in how many pieces (docs/design.md#needs-compaction).
import { epochPays, planWindow, summarizedLastRound, worthStarting } from './economics.js';
import { summarizedMiddle } from './assembly.js';
import { elides, planPassElisions } from './elision.js';
import type { CallOverrides, ResolvedOptions } from './options.js';
import { elide, elisionEnds, startPass, triggerOf, type Pass } from './pass.js';
import { newCalibration, plannedWindow, type SummarizerCalibration } from './calibration.js';
import { cutPieces } from './pieces.js';
import { baseInstruction } from './transcript.js';
import type { CompactionPlan, TokenCounter } from '../types.js';

/** Over the trigger, or an elision pool of at least `ageReclaimMin` characters; narrowed by the economic rules. */
export function needsCompactionCore(
  messages: unknown,
  options: ResolvedOptions,
  overrides: CallOverrides = {},
  counter?: TokenCounter,
): boolean {
  return needsOf(startPass(messages, options, overrides, counter));
}

function needsOf(pass: Pass): boolean {
  const { aim, options } = pass;
  const lastRound = (): boolean =>
    summarizedLastRound(pass.input, pass.regions, options.keepRecent, pass.keepUserMessages);
  if (pass.tokensBefore > triggerOf(aim)) {
    if (!options.deferShallowCompactions || pass.tokensBefore > aim.limit) return true;
    // docs/design.md#no-thrash Within the limit, never two compactions in consecutive rounds.
    if (lastRound()) return false;
    if (elisionEnds(pass, elide(pass))) return true;
    return worthStarting(planWindow(pass), aim);
  }
  if (!elides(options) || pass.regions.middle.length === 0 || options.elisionEpochs === 'never') return false;
  // An epoch is a compaction too.
  if (options.deferShallowCompactions && lastRound()) return false;
  const plan = planPassElisions(pass.input, pass.regions, options);
  if (plan.poolChars < options.ageReclaimMin) return false;
  if (options.elisionEpochs === 'batch') return true;
  return epochPays(pass, plan.elisions);
}

/** `needsCompactionCore`, and how many pieces the summary would take as `calibration` stands. */
export function compactionPlanCore(
  messages: unknown,
  options: ResolvedOptions,
  overrides: CallOverrides = {},
  counter?: TokenCounter,
  calibration: SummarizerCalibration = newCalibration(),
): CompactionPlan {
  const pass = startPass(messages, options, overrides, counter);
  const needed = needsOf(pass);
  const window = plannedWindow(options.summarizerContextWindow, calibration);
  if (!needed || window === undefined) return { needed };
  // Only a pass that would summarize takes pieces.
  const stubbed = elide(pass);
  if (elisionEnds(pass, stubbed)) return { needed };
  const { planned, seen } = summarizedMiddle(pass, stubbed);
  if (planned.middle.length === 0) return { needed };
  const cut = cutPieces(seen, baseInstruction(pass.text), pass.aim.counter, window);
  return cut === undefined || cut === 'unfit' ? { needed } : { needed, summaryPieces: cut.pieces.length };
}
