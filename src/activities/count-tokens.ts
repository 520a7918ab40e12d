// Node only (activities): `countTokens`, BPE counts taken outside the sandbox: a large batch of new
// text would hold a workflow activation past the deadlock timeout; here the counts enter history once.
import { z } from 'zod';
import { BPE_ENCODING_NAMES, countTextTokens, type BpeEncodingName } from '../core/counting/bpe-counter.js';
import { checkWith } from '../core/schema.js';
import { failOnInvalidInput } from '../shared/failures.js';

const inputSchema = z.object({
  encoding: z.custom<BpeEncodingName>((value) => BPE_ENCODING_NAMES.some((name) => name === value), {
    message: `must be one of ${BPE_ENCODING_NAMES.join(', ')}`,
  }),
  texts: z.array(z.string()),
});

/** Creates the `countTokens` activity: the tokens of each text, in the order given. */
export function createCountTokensActivity() {
  return async function countTokens(input: z.input<typeof inputSchema>): Promise<{ tokens: number[] }> {
    const { encoding, texts } = failOnInvalidInput(() => checkWith(inputSchema, input, 'input'));
    return { tokens: texts.map((text) => (text.length === 0 ? 0 : countTextTokens(text, encoding))) };
  };
}
