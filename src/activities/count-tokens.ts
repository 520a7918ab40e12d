// Node only (activities): `countTokens`, BPE counts taken outside the sandbox: a large batch of new
// text would hold a workflow activation past the deadlock timeout; here the counts enter history once.
import { BPE_ENCODING_NAMES, countTextTokens, type BpeEncodingName } from '../core/counting/bpe-counter.js';
import { invalidActivityInput } from './to-failure.js';

/** Creates the `countTokens` activity: the tokens of each text, in the order given. */
export function createCountTokensActivity() {
  return async function countTokens(input: {
    encoding: BpeEncodingName;
    texts: string[];
  }): Promise<{ tokens: number[] }> {
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
