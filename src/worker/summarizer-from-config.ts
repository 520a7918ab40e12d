// Node only: the summarizer a configuration (src/config.ts) selects, built on the worker so API keys
// never enter workflow history.
import { DEFAULT_OPENAI_BASE_URL, type CompactorConfig } from '../config.js';
import { describedAs } from '../described.js';
import { redactUrls } from '../redact.js';
import { createExtractiveSummarizer } from '../summarizers/extractive.js';
import { createOpenAISummarizer } from '../summarizers/openai.js';

/** The summarizer the configuration selects (see COMPACTOR_SUMMARIZER), and a line for start-up logs naming it. */
export function summarizerFromConfig(config: CompactorConfig) {
  const openaiConfigured = config.openaiApiKey !== undefined || config.openaiBaseUrl !== undefined;
  const useOpenAI = config.summarizer === 'openai' || (config.summarizer === 'auto' && openaiConfigured);
  if (useOpenAI) {
    const summarizer = createOpenAISummarizer({
      model: config.summarizerModel,
      baseURL: config.openaiBaseUrl,
      apiKey: config.openaiApiKey,
      timeout: config.summarizerTimeoutMs,
      ...(config.summarizerMaxTokens === undefined ? {} : { maxTokens: config.summarizerMaxTokens }),
    });
    // Printed at start-up: never with a password or a key the URL might carry.
    const where = redactUrls(config.openaiBaseUrl ?? DEFAULT_OPENAI_BASE_URL);
    const describe = `OpenAI-compatible summarizer: model ${config.summarizerModel} at ${where}, timeout ${config.summarizerTimeoutMs} ms`;
    return { summarizer: describedAs(summarizer, describe), kind: 'openai' as const, describe };
  }
  const why =
    config.summarizer === 'extractive'
      ? 'COMPACTOR_SUMMARIZER=extractive'
      : 'no model configured; set OPENAI_API_KEY or OPENAI_BASE_URL to use one';
  const describe = `built-in offline extractive summarizer (${why})`;
  return { summarizer: describedAs(createExtractiveSummarizer(), describe), kind: 'extractive' as const, describe };
}
