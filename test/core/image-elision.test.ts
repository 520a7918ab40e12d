// Issue 19 item 3 (docs/design.md#image-elision): `keepImages: N` — images older than the last N become a
// one-line stub saying what they were, in the batches observation elision uses (never one a
// round), and the summarizer never sees base64. Off by default: nothing changes without it.
import { describe, expect, it } from 'vitest';
import { Compactor, InvalidInputError, REFERENCE_EXACT, type ChatMessage, type ContentPart } from '../../src/index.js';
import { recordCompaction, replaySession, type SessionEntry } from '../../src/core/agent/session.js';
import { planImageElisions } from '../../src/core/compaction/elision.js';
import { compactionSteps } from '../../src/core/compaction/engine.js';
import { runCompactionSteps } from '../../corpus/fake-summarizer.js';
import { needsCompactionCore } from '../../src/core/compaction/needs-compaction.js';
import { resolveOptions, type CompactionOptions } from '../../src/core/compaction/options.js';
import { findRegions } from '../../src/core/compaction/regions.js';
import { imagePartInfo, imageStub } from '../../src/core/counting/parts.js';
import { defaultCounter } from '../../src/core/counting/tokens.js';
import { dataUrl, gifBytes, pngBytes } from '../support/images.js';
import { scriptedSummarizer } from '../support/messages.js';

const SCREENSHOT = dataUrl(pngBytes(1280, 800), 'image/png', 30_000);
const screenshot = (detail?: 'low'): ContentPart => ({
  type: 'image_url',
  image_url: detail === undefined ? { url: SCREENSHOT } : { url: SCREENSHOT, detail },
});

/** A browser agent: the task, then `turns` rounds of a screenshot (user) and a short reply (assistant). */
function browsing(turns: number): ChatMessage[] {
  const messages: ChatMessage[] = [
    { role: 'system', content: 'You drive a browser.' },
    { role: 'user', content: 'Find the cheapest flight to Lisbon.' },
  ];
  for (let turn = 0; turn < turns; turn += 1) messages.push(...turnOf(turn));
  return messages;
}

function turnOf(turn: number): ChatMessage[] {
  return [
    { role: 'user', content: [{ type: 'text', text: `Screen after step ${turn}:` }, screenshot()] },
    { role: 'assistant', content: `Clicked result ${turn}.` },
  ];
}

const imagesIn = (messages: readonly ChatMessage[]): number =>
  messages.reduce(
    (sum, message) =>
      sum + (Array.isArray(message.content) ? message.content.filter((part) => imagePartInfo(part)).length : 0),
    0,
  );

const answerShort = (): { kind: 'summary'; text: string } => ({ kind: 'summary', text: 'short summary' });

describe('the image stub', () => {
  it('says what the image was and what it cost, a pure function of the part', () => {
    const info = (part: ContentPart) => imagePartInfo(part)!;
    expect(imageStub(info(screenshot()))).toBe('[image elided: 1280×800 png, ~1,105 tokens]');
    expect(imageStub(info(screenshot('low')))).toBe('[image elided: 1280×800 png, ~85 tokens]');
    expect(imageStub(info({ type: 'image_url', image_url: { url: dataUrl(gifBytes(300, 200), 'image/gif') } }))).toBe(
      '[image elided: 300×200 gif, ~255 tokens]',
    );
    expect(imageStub(info({ type: 'image_url', image_url: { url: 'https://example.test/a.png' } }))).toBe(
      '[image elided: ~1,445 tokens]',
    );
  });
});

describe('keepImages', () => {
  it('is off by default: images are never elided, with or without REFERENCE_EXACT', () => {
    const messages = browsing(30);
    for (const options of [{}, REFERENCE_EXACT, { ageObservations: true, ageReclaimMin: 0 }]) {
      const resolved = resolveOptions({ contextBudget: 20_000, ...options });
      expect(resolved.keepImages).toBeUndefined();
      const result = runCompactionSteps(compactionSteps(messages, resolved, {}, defaultCounter), answerShort);
      expect(result.elisions).toEqual([]);
    }
  });

  it('is a whole number; a typo names it', () => {
    expect(resolveOptions({ contextBudget: 100, keepImages: 0 }).keepImages).toBe(0);
    expect(() => resolveOptions({ contextBudget: 100, keepImages: -1 })).toThrow(/options\.keepImages/);
    expect(() => resolveOptions({ contextBudget: 100, keepImages: 1.5 })).toThrow(InvalidInputError);
    expect(() => resolveOptions({ contextBudget: 100, keepImage: 2 })).toThrow(/did you mean keepImages/);
  });

  it('elides every image in the middle older than the last N, and only the images', () => {
    const messages = browsing(10);
    const regions = findRegions(messages, 8);
    const plan = planImageElisions(messages, regions, 5);
    // The last 5 images: 4 in the recent window (8 messages), 1 in the middle; the 5 before it go.
    expect(plan.elisions.map(({ index }) => index)).toEqual([2, 4, 6, 8, 10]);
    const elided = plan.elisions[0]!;
    expect(elided.stub).toBe('[image elided: 1280×800 png, ~1,105 tokens]');
    expect(elided.content).toEqual([
      { type: 'text', text: 'Screen after step 0:' },
      { type: 'text', text: '[image elided: 1280×800 png, ~1,105 tokens]' },
    ]);
    // the pool weighs each image at 4 characters per token, less its stub
    expect(plan.poolChars).toBe(5 * (1105 * 4 - elided.stub.length));
    // images in the recent window count among the last N but are never elided: keepImages 0 keeps them
    expect(planImageElisions(messages, regions, 0).elisions.map(({ index }) => index)).toEqual([2, 4, 6, 8, 10, 12]);
  });

  it('in a compaction over the trigger: stubs in place, every other message and field as it was', () => {
    const messages = browsing(12);
    const resolved = resolveOptions({
      contextBudget: 12_000,
      keepImages: 2,
      keepRecent: 4,
      elisionEndsPass: 'under-trigger',
    });
    const before = defaultCounter.count(messages);
    expect(before).toBeGreaterThan(0.8 * 12_000);
    const result = runCompactionSteps(compactionSteps(messages, resolved, {}, defaultCounter), answerShort);
    // elision was enough: no summary, no message dropped
    expect([result.summary, result.dropped]).toEqual([null, 0]);
    expect(result.messages).toHaveLength(messages.length);
    expect(imagesIn(result.messages)).toBe(2);
    expect(result.elisions).toHaveLength(10);
    result.messages.forEach((message, index) => {
      const elision = result.elisions.find((candidate) => candidate.index === index);
      if (elision === undefined) expect(message).toBe(messages[index]);
      else expect(message).toEqual({ ...messages[index], content: elision.content });
    });
    expect(result.tokensAfter).toBeLessThan(before - 10 * 1000);
  });

  it('batches like elided tool output: an epoch waits for ageReclaimMin worth of images, never one a round', () => {
    // ageReclaimMin 10,000 characters: an image weighs 4,420 less its stub, so epochs come three images at a time.
    const options: CompactionOptions = {
      contextBudget: 1_000_000,
      keepImages: 3,
      keepRecent: 4,
      ageReclaimMin: 10_000,
      elisionEpochs: 'batch',
    };
    const resolved = resolveOptions(options);
    let messages = browsing(3);
    const epochs: Array<{ round: number; elided: number }> = [];
    for (let round = 3; round < 40; round += 1) {
      messages = [...messages, ...turnOf(round)];
      if (!needsCompactionCore(messages, resolved, {}, defaultCounter)) continue;
      const result = runCompactionSteps(compactionSteps(messages, resolved, {}, defaultCounter), answerShort);
      expect(result.summary).toBeNull();
      epochs.push({ round, elided: result.elisions.length });
      messages = result.messages;
    }
    expect(epochs.length).toBeGreaterThanOrEqual(8);
    for (const epoch of epochs) expect(epoch.elided).toBeGreaterThanOrEqual(3);
    for (let index = 1; index < epochs.length; index += 1)
      expect(epochs[index]!.round - epochs[index - 1]!.round).toBeGreaterThanOrEqual(3);
    // the images kept: the last 3 (and none older, in the middle, once an epoch ran)
    expect(imagesIn(messages)).toBeLessThanOrEqual(3 + 2);
  });

  it('with the default epochs (paying): no epoch that does not pay; the images go with the compaction at the trigger', () => {
    const resolved = resolveOptions({ contextBudget: 40_000, keepImages: 1 });
    let messages = browsing(2);
    const compactions: Array<{ round: number; elided: number }> = [];
    for (let round = 2; round < 120; round += 1) {
      messages = [...messages, ...turnOf(round)];
      if (!needsCompactionCore(messages, resolved, {}, defaultCounter)) continue;
      const result = runCompactionSteps(compactionSteps(messages, resolved, {}, defaultCounter), answerShort);
      compactions.push({ round, elided: result.elisions.length });
      expect(result.tokensBefore).toBeGreaterThan(0.8 * 40_000);
      messages = result.messages;
    }
    expect(compactions.length).toBeGreaterThanOrEqual(3);
    for (const { elided } of compactions) expect(elided).toBeGreaterThan(10);
    for (let index = 1; index < compactions.length; index += 1)
      expect(compactions[index]!.round - compactions[index - 1]!.round).toBeGreaterThan(10);
  });

  it('the summarizer sees [image: 1280×800 png], never base64', async () => {
    const summarizer = scriptedSummarizer('## Goals\nFind the flight.');
    const compactor = new Compactor({ summarizer, contextBudget: 8000, keepRecent: 2, retryBackoff: 1 });
    const result = await compactor.compact(browsing(12));
    expect(result.summary).not.toBeNull();
    const transcript = JSON.stringify(summarizer.requests);
    expect(transcript).toContain('[image: 1280×800 png]');
    expect(transcript).not.toContain('base64');
    expect(transcript).not.toContain(SCREENSHOT.slice(30, 80));
  });

  it('an agent run records an image elision so that its transcript replays to the same conversation', () => {
    const messages = browsing(12);
    const resolved = resolveOptions({ contextBudget: 12_000, keepImages: 2, elisionEndsPass: 'under-trigger' });
    const result = runCompactionSteps(compactionSteps(messages, resolved, {}, defaultCounter), answerShort);
    expect(result.elisions.length).toBeGreaterThan(0);
    const entries: SessionEntry[] = messages.map((message, index) => ({ id: `m${index}`, message }));
    const { lines, entries: after } = recordCompaction(entries, result);
    expect(lines.filter((line) => line.type === 'elision').every((line) => 'content' in line)).toBe(true);
    expect(after.map((entry) => entry.message)).toEqual(result.messages);
    const transcript = [...entries.map((entry) => ({ type: 'message' as const, ...entry })), ...lines];
    expect(replaySession(JSON.parse(JSON.stringify(transcript)))).toEqual(result.messages);
  });
});
