// Summarizer backends (Node only: they do I/O and never run in the workflow sandbox).
export {
  createOpenAISummarizer,
  parseRetryAfter,
  DEFAULT_SUMMARIZER_TIMEOUT_MS,
  type HeaderBag,
  type OpenAISummarizerOptions,
} from './openai.js';
