// Node only (dev): the static summary and details the demo gives the agent run it starts, which the
// Temporal UI shows above the run.
import { jsonPayloadBytes } from '../src/core/limits/payload-size.js';
import {
  fitStaticMetadata,
  groupDigits,
  oneLine,
  STATIC_METADATA_MAX_BYTES,
} from '../src/core/agent/compaction-history.js';

/**
 * The static summary and details a client gives an agent run when it starts it, e.g.
 * `agentRun · replay:openhands… (window 9,000 tokens)`; each at most `maxBytes` of JSON.
 */
export function agentRunStaticMetadata(
  input: { model: unknown; compaction?: unknown; maxRounds?: number },
  what?: string,
  maxBytes = STATIC_METADATA_MAX_BYTES,
): { staticSummary: string; staticDetails: string } {
  const models = (Array.isArray(input.model) ? input.model : [input.model]).flatMap((model: unknown) => {
    if (typeof model !== 'object' || model === null) return [];
    const provider: unknown = Reflect.get(model, 'provider');
    const name: unknown = provider === 'replay' ? Reflect.get(model, 'trajectory') : Reflect.get(model, 'model');
    const window: unknown = Reflect.get(model, 'contextWindow');
    return [
      `${String(provider)}:${String(name)}${typeof window === 'number' ? ` (window ${groupDigits(window)} tokens)` : ''}`,
    ];
  });
  const staticSummary = fitStaticMetadata(oneLine(`agentRun · ${what ?? models[0] ?? 'agent run'}`, 120), maxBytes);
  const compaction =
    typeof input.compaction === 'object' && input.compaction !== null ? JSON.stringify(input.compaction) : '{}';
  // Markdown paragraphs, the first always there; each further one only whole, the backends cut to fit.
  const paragraphs = ['Compactions: the *Memo* tab (no worker needed); live, *Current Details*.'];
  const fits = (paragraph: string): boolean => jsonPayloadBytes([...paragraphs, paragraph].join('\n\n')) <= maxBytes;
  const backends = `**Backends:** ${models.join(' → ') || '—'}`;
  const room = maxBytes - jsonPayloadBytes(`${paragraphs.join('\n\n')}\n\n`) + 2;
  const backendsFitted = fitStaticMetadata(backends, room);
  if (backendsFitted.length > '**Backends:** '.length) paragraphs.push(backendsFitted);
  for (const paragraph of [
    `**Compaction:** \`${compaction}\``,
    ...(input.maxRounds === undefined ? [] : [`**Max rounds:** ${input.maxRounds}`]),
  ])
    if (fits(paragraph)) paragraphs.push(paragraph);
  const staticDetails = fitStaticMetadata(paragraphs.join('\n\n'), maxBytes);
  return { staticSummary, staticDetails };
}
