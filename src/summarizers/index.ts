// Summarizer backends. The OpenAI-compatible one is Node only (it does I/O); the extractive one is
// pure and also runs anywhere.
export { createOpenAISummarizer, DEFAULT_SUMMARIZER_TIMEOUT_MS, type OpenAISummarizerOptions } from './openai.js';
export { parseRetryAfter, type HeaderBag } from '../llm/openai-adapter.js';
export {
  createExtractiveSummarizer,
  extractiveSummary,
  EXTRACTIVE_SUMMARY_NOTICE,
  DEFAULT_EXTRACTIVE_MAX_CHARS,
  DEFAULT_EXTRACTIVE_MAX_RATIO,
  MIN_EXTRACTIVE_SUMMARY_CHARS,
  type ExtractiveSummarizerOptions,
} from './extractive.js';
