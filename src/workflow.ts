// Sandbox-safe entry point (`temporal-compactor/workflow`): the pure core, usable in workflow code.
export * from './core/types.js';
export * from './core/errors.js';
export { isSticky, toProviderMessages, validateMessages } from './core/schema.js';
export { resolveOptions, parseDuration, backoffDelayMs, type CompactionOptions, type ResolvedOptions, type Duration, type CallOverrides } from './core/options.js';
export { createCharCounter, defaultCounter, messageChars, contentText, type CharCounterOptions } from './core/tokens.js';
export { elisionStub, isStub, canonicalArguments, planElisions, applyElisions } from './core/elision.js';
export { findRegions, findCut, removableMask, toolGroups } from './core/regions.js';
export { SUMMARY_INSTRUCTION, tooLongInstruction, renderTranscript, summarizeRequest, summaryContent, capText } from './core/transcript.js';
export { compactionSteps, needsCompactionCore, hardTrim, runCompactionSteps, type SummarizeStep, type SummarizeOutcome, type CompactionSteps } from './core/engine.js';
