// Sandbox-safe: gpt-tokenizer's two BPE encoders, built once per V8 context that loads this module.
//
// A workflow bundle built by this package preloads this module (workflow-bundling.ts), so a
// worker's reusable V8 context evaluates it once and every workflow on that worker thread shares the
// encoders. Without that, each workflow run (and each continue-as-new, replay or cache eviction)
// would build its own 200,000-entry table again and hold it while cached (docs/design.md#bpe).
// Sharing is sound because an encoder is a pure function of the text: its merge cache changes how
// fast it answers, never what. Imports nothing of this package, so no per-workflow state can be
// reached from here.
import { GptEncoding } from 'gpt-tokenizer/GptEncoding';
import cl100kBaseRanks from 'gpt-tokenizer/bpeRanks/cl100k_base';
import o200kBaseRanks from 'gpt-tokenizer/bpeRanks/o200k_base';

/** `o200k_base` (GPT-4o, GPT-4.1, GPT-5, o-series) or `cl100k_base` (GPT-4, GPT-3.5). */
export type BpeEncodingName = 'o200k_base' | 'cl100k_base';

/** Each built on first use. */
const encoders = new Map<BpeEncodingName, GptEncoding>();

/** The encoder of `encoding`, built on first use. */
export function bpeEncoder(encoding: BpeEncodingName): GptEncoding {
  const built = encoders.get(encoding);
  if (built !== undefined) return built;
  const ranks = encoding === 'o200k_base' ? o200kBaseRanks : cl100kBaseRanks;
  const encoder = GptEncoding.getEncodingApi(encoding, () => ranks);
  encoders.set(encoding, encoder);
  return encoder;
}
