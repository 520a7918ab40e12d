// Node only (activities): `countTokens` — BPE counts of texts, taken outside the workflow sandbox.
// An agent run counts its conversation in each backend's units; a large batch of new text (a
// 1M-token conversation at the start, a huge tool result) would hold a workflow activation for
// seconds, past the SDK's deadlock timeout. Counted here, the numbers enter the history once and
// a replaying worker reads them instead of tokenizing again.
import { BPE_ENCODING_NAMES, countTextTokens, type BpeEncodingName } from '../core/counting/bpe-counter.js';
import { invalidActivityInput } from './to-failure.js';

export interface CountTokensInput {
  encoding: BpeEncodingName;
  texts: string[];
}

export interface CountTokensOutput {
  /** Tokens of each text, in the order given. */
  tokens: number[];
}

/** Creates the `countTokens` activity. */
export function createCountTokensActivity() {
  return async function countTokens(input: CountTokensInput): Promise<CountTokensOutput> {
    const encoding: unknown = input?.encoding;
    const texts: unknown = input?.texts;
    if (
      typeof encoding !== 'string' ||
      !BPE_ENCODING_NAMES.some((name) => name === encoding) ||
      !Array.isArray(texts) ||
      !texts.every((text) => typeof text === 'string')
    )
      throw invalidActivityInput(
        `countTokens: the input must be { encoding: ${BPE_ENCODING_NAMES.join(' | ')}, texts: string[] }`,
      );
    const name = BPE_ENCODING_NAMES.find((known) => known === encoding) ?? 'o200k_base';
    return { tokens: texts.map((text: string) => (text.length === 0 ? 0 : countTextTokens(text, name))) };
  };
}
