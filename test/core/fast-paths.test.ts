// The engine's fast paths (bench/README.md#core) against what they stand in for: the transcript's
// length counted without rendering it, the request that holds its middle and nothing more, the
// identifiers a summary must keep found by a scanner of their own, and messages validated by hand
// before zod. Each is compared with the slow definition over generated and hand-made inputs.
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { argumentValues, identifiersIn, requiredIdentifiers } from '../../src/core/compaction/coverage.js';
import {
  capMiddle,
  capText,
  renderTranscript,
  requestChars,
  requestFor,
  summarizerMessages,
  transcriptLength,
} from '../../src/core/compaction/transcript.js';
import { contentText } from '../../src/core/counting/tokens.js';
import { findRegions, toolGroups } from '../../src/core/compaction/regions.js';
import {
  applyElisions,
  canonicalArguments,
  elidedContents,
  isCanonicalJson,
  elisionStub,
  planElisions,
} from '../../src/core/compaction/elision.js';
import { chatMessageSchema, validateMessages } from '../../src/core/schema.js';
import type { ChatMessage, Elision, ToolCall } from '../../src/core/types.js';
import { createRandom } from '../../corpus/random.js';
import { assistant, tool, transcriptOf, user } from '../support/messages.js';
import { askers } from '../support/conversations.js';

/** Words, identifiers of every kind the coverage check knows, near misses and punctuation that ends or splits tokens. */
const WORDS = [
  'the', 'fix', 'src/app.ts', 'src/app.ts.', 'src/app.ts:12', 'foo_bar', 'fooBar', 'E2BIG', 'np.array', 'a.b',
  'x9', 'ab', 'a/b/', 'a/b', '//double/', 'path/', 'dir/sub/', 'v1.2.3', 'call_abc', 'toolu_X1', 'https://example.test/a_b?q=1.',
  'http://x.io/src/app.ts)', 'see:https://y.test/p', '#tag@home-', '-_-', 'file-9', 'TypeError', 'naïve_ß', '\n', '"', ',',
]; // prettier-ignore

function text(random: () => number, words: number): string {
  const parts: string[] = [];
  for (let index = 0; index < words; index += 1) parts.push(WORDS[Math.floor(random() * WORDS.length)] ?? '');
  return parts.join(random() < 0.5 ? ' ' : '');
}

/** A run of turns with tool calls, results (some named, some answering no call), parts and long arguments. */
function conversation(seed: number, turns: number): ChatMessage[] {
  const random = createRandom(seed).next;
  const messages: ChatMessage[] = [user(text(random, 12))];
  for (let turn = 0; turn < turns; turn += 1) {
    const ids = [`call_${seed}_${turn}`, ...(random() < 0.4 ? [`call_${seed}_${turn}b`] : [])];
    const args = (): string => JSON.stringify({ path: text(random, 3), note: text(random, Math.floor(random() * 80)) });
    messages.push(
      assistant(
        random() < 0.3 ? null : text(random, 10),
        ids.map((id) => [id, random() < 0.5 ? 'read_file' : 'bash', args()]),
      ),
    );
    for (const id of ids) {
      const result = text(random, Math.floor(random() * 120));
      messages.push(
        random() < 0.2
          ? tool(id, result, {
              content: [
                { type: 'text', text: result },
                { type: 'image_url', image_url: { url: 'x' } },
              ],
            })
          : tool(random() < 0.1 ? `orphan_${turn}` : id, result, random() < 0.2 ? { name: 'named' } : {}),
      );
    }
    if (random() < 0.2) messages.push(user(text(random, 20)));
  }
  return messages;
}

/**
 * Turns whose results come long after them (more messages between than the engine looks back
 * through before it collects every call), ids a later turn reuses, and results answering no call.
 */
function farConversation(seed: number): ChatMessage[] {
  const random = createRandom(seed).next;
  const messages: ChatMessage[] = [user('task src/app.ts')];
  const open: string[] = [];
  for (let index = 0; index < 160; index += 1) {
    // A turn whose result comes 40 messages later, every 50.
    if (index % 50 === 0) messages.push(assistant(null, [[`far_${index}`, 'read_file', '{}']]));
    if (index % 50 === 40) messages.push(tool(`far_${index - 40}`, text(random, 30)));
    const roll = random();
    if (roll < 0.2) {
      const id = random() < 0.5 ? `call_${index}` : `call_${Math.floor(random() * 6)}`;
      messages.push(assistant(null, [[id, random() < 0.5 ? 'read_file' : 'bash', `{"path":"src/f${index}.ts"}`]]));
      open.push(id);
    } else if (roll < 0.45 && open.length > 0) {
      const [id] = open.splice(random() < 0.3 ? 0 : Math.floor(random() * open.length), 1);
      messages.push(tool(id ?? 'none', text(random, 30)));
    } else if (roll < 0.5) messages.push(tool(`orphan_${index}`, 'no call asked for this'));
    else messages.push(user(text(random, 8)));
  }
  return messages;
}

describe('the transcript counted without rendering it', () => {
  it('transcriptLength is the length of renderTranscript, capped or not', () => {
    for (let seed = 1; seed <= 40; seed += 1) {
      const messages = conversation(seed, 12);
      for (const cap of [Number.POSITIVE_INFINITY, 2000, 40, 3])
        expect(transcriptLength(messages, cap), `seed ${seed}, cap ${cap}`).toBe(
          renderTranscript(messages, cap).length,
        );
    }
  });

  it('names the tool of a result found far after its turn, or after a later turn reused its id', () => {
    for (let seed = 1; seed <= 30; seed += 1) {
      const messages = farConversation(seed);
      for (const cap of [Number.POSITIVE_INFINITY, 50])
        expect(transcriptLength(messages, cap), `seed ${seed}, cap ${cap}`).toBe(
          renderTranscript(messages, cap).length,
        );
    }
  });

  it("finds a result's turn however far back it is, as the spec's map of ids does", () => {
    for (let seed = 1; seed <= 30; seed += 1) {
      const messages = farConversation(seed);
      const { askedBy, groupOf } = toolGroups(messages);
      const reference = askers(messages);
      expect([...askedBy], `seed ${seed}`).toEqual(reference);
      expect([...groupOf]).toEqual(reference.map((owner, index) => (owner >= 0 ? owner : index)));
      expect(
        reference.some((owner, index) => owner >= 0 && index - owner > 32),
        `seed ${seed}`,
      ).toBe(true);
    }
  });

  it("a request is data: its instruction, middle and instructions; its rendered messages' characters are requestChars", () => {
    const middle = capMiddle(conversation(7, 10), 50);
    for (const instructions of [undefined, 'keep src/app.ts']) {
      const request = requestFor('Summarize.', middle, instructions);
      expect(Object.keys(request)).toEqual([
        'instruction',
        'middle',
        ...(instructions === undefined ? [] : ['instructions']),
      ]);
      const rendered = summarizerMessages(request);
      const characters = rendered.reduce((sum, message) => sum + contentText(message.content).length, 0);
      expect(characters).toBe(requestChars('Summarize.', middle));
      expect(rendered[0]).toEqual({ role: 'system', content: 'Summarize.' });
      expect(transcriptOf(request)).toBe(
        `Transcript to summarize (${middle.length} messages):\n\n${renderTranscript(middle, Number.POSITIVE_INFINITY)}`,
      );
      expect(JSON.parse(JSON.stringify(request))).toEqual(request);
    }
  });

  it('a request no longer read frees its middle at the next young collection', () => {
    // Nothing may keep what a request holds by the request: V8's young collector keeps the values of
    // a WeakMap past the death of their keys, so every scavenge would copy the middles cut since the last one.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as (options: { type: 'minor' }) => void;
    const young = (): number =>
      getHeapSpaceStatistics().find(({ space_name }) => space_name === 'new_space')?.space_used_size ?? 0;
    const cutMiddles = (): number => {
      let messages = 0;
      for (let request = 0; request < 20; request += 1) {
        const middle = Array.from({ length: 200 }, (_, index) => user(`message ${request}.${index}`));
        messages += requestFor('Summarize.', middle).middle.length;
      }
      return messages;
    };
    // A sample counts when no collection ran while it allocated (the young space grew by what was
    // cut); the heap left by the files before this one in its process decides when one runs.
    let sample: { allocated: number; survived: number } | undefined;
    for (let attempt = 0; attempt < 10 && sample === undefined; attempt += 1) {
      // Twice: what survives one young collection stays young until the next.
      gc({ type: 'minor' });
      gc({ type: 'minor' });
      const before = young();
      expect(cutMiddles()).toBe(4_000);
      const allocated = young() - before;
      gc({ type: 'minor' });
      if (allocated > 200_000) sample = { allocated, survived: young() - before };
    }
    expect(sample, 'a sample with no collection while it allocated').toBeDefined();
    expect(sample!.survived).toBeLessThan(sample!.allocated / 4);
  });
});

describe('the middle as the summarizer sees it', () => {
  /** The calls of a seen message by their definition: each rebuilt as `{ id, type, function: { name, arguments } }`, the arguments capped. */
  const callsByDefinition = (calls: readonly ToolCall[], cap: number): string =>
    JSON.stringify(
      calls.map((call) => ({
        id: call.id,
        type: call.type,
        function: { name: call.function.name, arguments: capText(call.function.arguments, cap) },
      })),
    );
  const call = (id: string, args = '{"path":"src/app.ts"}'): ToolCall => ({
    id,
    type: 'function',
    function: { name: 'read_file', arguments: args },
  });
  const shapes: Record<string, { calls: ToolCall[]; kept: boolean }> = {
    'in the shape built': { calls: [call('a'), call('b')], kept: true },
    'keys in another order': {
      calls: [call('a'), { type: 'function', id: 'b', function: { name: 'bash', arguments: '{}' } }],
      kept: false,
    },
    'function keys in another order': {
      calls: [{ id: 'a', type: 'function', function: { arguments: '{}', name: 'bash' } }],
      kept: false,
    },
    'a key of its own': { calls: [{ ...call('a'), extra: 1 } as ToolCall], kept: false },
    'no type': { calls: [{ id: 'a', function: { name: 'bash', arguments: '{}' } } as ToolCall], kept: false },
    'arguments over the cap': { calls: [call('a'), call('b', `{"note":"${'x'.repeat(80)}"}`)], kept: false },
  };

  it('keeps calls already in the shape it builds, and rebuilds every other one to that shape', () => {
    for (const [shape, { calls, kept }] of Object.entries(shapes)) {
      const message: ChatMessage = { role: 'assistant', content: 'reading', tool_calls: calls, name: 'agent' };
      const [seen] = capMiddle([message], 50);
      expect(JSON.stringify(seen?.tool_calls), shape).toBe(callsByDefinition(calls, 50));
      expect(Object.keys(seen ?? {}), shape).toEqual(['role', 'content', 'tool_calls', 'name']);
      // Kept, the array is the message's own (no copy of each call); rebuilt, it is a new one.
      expect(seen?.tool_calls === calls, shape).toBe(kept);
    }
  });

  /** A seen message by its definition: role, content, tool_calls, tool_call_id, name, in that order, each only when defined. */
  const seenByDefinition = (message: ChatMessage, content: ChatMessage['content']): Record<string, unknown> => {
    const seen: Record<string, unknown> = { role: message.role, content };
    for (const key of ['tool_calls', 'tool_call_id', 'name'] as const)
      if (message[key] !== undefined) seen[key] = message[key];
    return seen;
  };
  const messages: Record<string, { message: ChatMessage; kept: boolean; content?: ChatMessage['content'] }> = {
    'a user message': { message: { role: 'user', content: 'go on' }, kept: true },
    'a turn with calls in the shape built': {
      message: { role: 'assistant', content: null, tool_calls: [call('a')] },
      kept: true,
    },
    'a result with its keys in order': {
      message: { role: 'tool', content: 'ok', tool_call_id: 'a', name: 'read_file' },
      kept: true,
    },
    'a result of text parts within the cap': {
      message: { role: 'tool', content: [{ type: 'text', text: 'ok' }], tool_call_id: 'a' },
      kept: true,
    },
    'a result with its id before its content': {
      message: { role: 'tool', tool_call_id: 'a', content: 'ok' },
      kept: false,
    },
    'content before role': { message: { content: 'go on', role: 'user' }, kept: false },
    'a key it leaves out': { message: { role: 'user', content: 'go on', id: 'm1' } as ChatMessage, kept: false },
    'a key set to undefined': { message: { role: 'user', content: 'go on', name: undefined }, kept: false },
    'a result over the cap': {
      message: { role: 'tool', content: 'x'.repeat(80), tool_call_id: 'a' },
      kept: false,
      content: capText('x'.repeat(80), 50),
    },
    'an image part': {
      message: { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] },
      kept: false,
      content: [{ type: 'text', text: '[image]' }],
    },
  };

  it('keeps a message already as it would build it, and builds every other one to its definition', () => {
    for (const [shape, { message, kept, content = message.content }] of Object.entries(messages)) {
      const [seen] = capMiddle([message], 50);
      expect(seen === message, shape).toBe(kept);
      // Same keys, in the same order, as the definition (undefined ones left out), and the same values.
      expect(Object.keys(seen ?? {}), shape).toEqual(Object.keys(seenByDefinition(message, content)));
      expect(seen, shape).toEqual(seenByDefinition(message, content));
    }
  });
});

describe('the identifiers a summary must keep', () => {
  /** The definition: every identifier of the middle's texts (contents, argument values), in order, that the kept messages use too. */
  function reference(middle: readonly ChatMessage[], kept: readonly ChatMessage[]): string[] {
    const factText = (message: ChatMessage): string =>
      [
        contentText(message.content),
        ...(message.tool_calls ?? []).flatMap((call) => argumentValues(call.function.arguments)),
      ].join('\n');
    const used = new Set<string>();
    for (const message of kept) if (message.role !== 'system') identifiersIn(factText(message), used);
    const fromMiddle = new Set<string>();
    for (const message of middle) identifiersIn(factText(message), fromMiddle);
    return [...fromMiddle].filter((identifier) => used.has(identifier));
  }

  /** A generated conversation cut at a random place: the middle after its first message, the first message and the rest kept. */
  function cutAt(seed: number): { middle: ChatMessage[]; kept: ChatMessage[] } {
    const messages = conversation(seed, 15);
    const cut = 3 + Math.floor(createRandom(seed).next() * (messages.length - 6));
    return { middle: messages.slice(1, cut), kept: [messages[0] as ChatMessage, ...messages.slice(cut)] };
  }

  it('are those the definition finds, in the same order', () => {
    let nonEmpty = 0;
    for (let seed = 1; seed <= 60; seed += 1) {
      const { middle, kept } = cutAt(seed);
      const expected = reference(middle, kept);
      if (expected.length > 0) nonEmpty += 1;
      expect(requiredIdentifiers(middle, kept), `seed ${seed}`).toEqual(expected);
    }
    expect(nonEmpty).toBeGreaterThan(30);
  });

  it('with a cap, are those of the middle as capMiddle cuts it (an identifier cut short is not the identifier)', () => {
    let differ = 0;
    for (let seed = 1; seed <= 60; seed += 1) {
      const { middle, kept } = cutAt(seed);
      for (const cap of [3, 25, 120]) {
        const expected = reference(capMiddle(middle, cap), kept);
        if (expected.length !== reference(middle, kept).length) differ += 1;
        expect(requiredIdentifiers(middle, kept, cap), `seed ${seed}, cap ${cap}`).toEqual(expected);
      }
    }
    expect(differ).toBeGreaterThan(20);
    const cutShort = [
      tool('c1', `${'x'.repeat(10)} src/app.ts`),
      assistant(null, [['c2', 'bash', '{"cmd":"make src/lib.ts"}']]),
    ];
    expect(requiredIdentifiers(cutShort, [user('src/app.ts src/lib.ts')], 17)).toEqual([]);
    expect(requiredIdentifiers(cutShort, [user('src/app.ts src/lib.ts')], 21)).toEqual(['src/app.ts']);
  });

  it('of a middle with elisions are those of the elided middle, read from the input and elidedContents', () => {
    let elided = 0;
    for (let seed = 1; seed <= 60; seed += 1) {
      const { middle, kept } = cutAt(seed);
      const indices = middle.map((_, index) => index);
      // Every third tool result elided, some to a stub naming an identifier the kept messages use,
      // every image message to text parts: what a pass's elisions leave.
      const elisions: Elision[] = middle.flatMap((message, index): Elision[] => {
        if (Array.isArray(message.content) && message.role !== 'tool')
          return [{ index, stub: 'src/app.ts', content: [{ type: 'text', text: `[image elided] src/app.ts` }] }];
        if (message.role !== 'tool' || index % 3 !== 0) return [];
        return [{ index, stub: index % 2 === 0 ? `[elided: 20-char bash result] src/app.ts` : '[elided]' }];
      });
      elided += elisions.length;
      const applied = applyElisions(middle, elisions);
      const contents = elidedContents(indices, elisions);
      for (const cap of [Number.POSITIVE_INFINITY, 25, 120]) {
        expect(JSON.stringify(capMiddle(middle, cap, contents)), `seed ${seed}, cap ${cap}`).toBe(
          JSON.stringify(capMiddle(applied, cap)),
        );
        expect(requiredIdentifiers(middle, kept, cap, contents), `seed ${seed}, cap ${cap}`).toEqual(
          requiredIdentifiers(applied, kept, cap),
        );
      }
    }
    expect(elided).toBeGreaterThan(100);
  });

  it('are found when the kept messages use more identifiers than are searched for one by one', () => {
    const many = Array.from({ length: 30 }, (_, index) => `id_${index}`);
    const random = createRandom(5).next;
    const middle = Array.from({ length: 40 }, (_, index) =>
      index % 2 === 0
        ? user(
            `${many[Math.floor(random() * many.length)] ?? ''} and ${many[Math.floor(random() * many.length)] ?? ''}`,
          )
        : tool(`c${index}`, `${text(random, 6)} id_${index}`),
    );
    const kept = [user(many.join(' '))];
    const found = requiredIdentifiers(middle, kept);
    expect(found).toEqual(reference(middle, kept));
    expect(found.length).toBeGreaterThan(16);
    expect(requiredIdentifiers(middle, kept, 8)).toEqual(reference(capMiddle(middle, 8), kept));
  });

  it('of a text are what the regular expressions of their definition find, in order', () => {
    // The definition (docs/design.md#coverage): URLs whole, then every match of the token pattern in
    // the rest, trailing punctuation cut, kept when it is an identifier.
    const url = /\bhttps?:\/\/[^\s"'`<>()[\]{}]+[^\s"'`<>()[\]{}.,;:!?]/g;
    const token = /[A-Za-z0-9_][A-Za-z0-9_./#@-]*[A-Za-z0-9_/]/g;
    const isIdentifier = (candidate: string): boolean =>
      candidate.length >= 3 &&
      /[A-Za-z]/.test(candidate) &&
      !/^(?:call|toolu|tool|fc)_[A-Za-z0-9]+$/.test(candidate) &&
      (candidate.includes('/') ||
        /\w\.\w/.test(candidate) ||
        candidate.includes('_') ||
        /[a-z][A-Z]/.test(candidate) ||
        /\d/.test(candidate));
    const definition = (source: string): string[] => {
      const found = new Set<string>(source.match(url) ?? []);
      for (const match of source.replace(url, ' ').matchAll(token)) {
        const candidate = match[0].replace(/[.:/#@-]+$/, '');
        if (isIdentifier(candidate)) found.add(candidate);
      }
      return [...found];
    };
    let identifiers = 0;
    for (let seed = 1; seed <= 300; seed += 1) {
      const sample = text(createRandom(seed).next, 40);
      const expected = definition(sample);
      identifiers += expected.length;
      expect([...identifiersIn(sample)], sample).toEqual(expected);
    }
    expect(identifiers).toBeGreaterThan(1000);
  });

  it('finds identifiers at the edges of texts, inside URLs only as the URL, and after many still to find', () => {
    const kept = [user(`src/app.ts a/b a_1 b_2 c_3 d_4 e_5 f_6 g_7 h_8 i_9 https://example.test/a_b?q=1 x.io/y`)];
    const middle = [
      user('(a_1.) a/b/'),
      assistant('see https://example.test/a_b?q=1, then x.io/y/ and b_2.'),
      user('i_9 h_8 g_7 f_6 e_5 d_4 c_3 src/app.ts.'),
    ];
    expect(requiredIdentifiers(middle, kept)).toEqual(reference(middle, kept));
    expect(requiredIdentifiers(middle, kept)).toEqual([
      'a_1',
      'a/b',
      'https://example.test/a_b?q=1',
      'x.io/y',
      'b_2',
      'i_9',
      'h_8',
      'g_7',
      'f_6',
      'e_5',
      'd_4',
      'c_3',
      'src/app.ts',
    ]);
  });
});

describe('call identities', () => {
  /** The definition: the arguments parsed, every object's keys sorted, stringified; text that is not JSON, trimmed. */
  function definition(args: string): string {
    const sortKeys = (value: unknown): unknown => {
      if (Array.isArray(value)) return value.map(sortKeys);
      if (typeof value !== 'object' || value === null) return value;
      const sorted: Record<string, unknown> = {};
      for (const [key, entry] of Object.entries(value).sort(([left], [right]) =>
        left < right ? -1 : left > right ? 1 : 0,
      ))
        sorted[key] = sortKeys(entry);
      return sorted;
    };
    try {
      return JSON.stringify(sortKeys(JSON.parse(args)));
    } catch {
      return args.trim();
    }
  }

  it('are the canonical arguments of the definition, keys already in order or not', () => {
    const samples = [
      '{"path":"src/app.ts"}', '{ "b": 1, "a": [ {"d": 2, "c": 3} ] }', '{"a":1,"b":{"c":[1,{"e":1,"d":2}]}}',
      '{"10":1,"9":2,"a":3}', '{"a":1,"__proto__":{"x":1}}', '{"__proto__":1}', '[{"b":1,"a":2},3]', '"text"', '12.50',
      'not json ', '{"a":1,"a":2}', '{"b":1,"a":1,"b":3}', '{"é":1,"e":2}', '{"":1,"A":2,"a":3}', '{"z":{"y":{"x":{}}}}',
    ]; // prettier-ignore
    const random = createRandom(11).next;
    for (let index = 0; index < 300; index += 1) {
      const keys = ['a', 'b', 'B', '1', '02', 'path', 'cmd', '_x'];
      const object = (depth: number): unknown => {
        const value: Record<string, unknown> = {};
        const count = Math.floor(random() * 4);
        for (let key = 0; key < count; key += 1) {
          const name = keys[Math.floor(random() * keys.length)] ?? 'a';
          value[name] = depth > 0 && random() < 0.4 ? object(depth - 1) : random() < 0.5 ? [1, { b: 2, a: 1 }] : 'v';
        }
        return value;
      };
      samples.push(JSON.stringify(object(3)));
    }
    for (const args of samples) expect(canonicalArguments(args), args).toBe(definition(args));
  });

  /** Hand-made edges of the scan: each is canonical or one step from it. */
  const edges = [
    '{}', '[]', '""', '0', '-1', '7', 'true', 'false', 'null', '{"a":[]}', '{"a":{}}', '[[],{},""]',
    '{"":1,"a":2}', '{"a":1,"b":2}', '{"command":"npm test -- file1"}', '{"path":"src/app.ts"}',
    '{"a":"line\\nnext\\t\\"quoted\\" \\\\ \\b\\f\\r"}', '{"a":"é → ✓ \u2028 \u007f"}',
    '-0', '01', '00', '-', '1.5', '1.0', '1e2', '1E2', '-1.5', '123456789012345', '1234567890123456', '9007199254740993',
    '{"a":"\\u0041"}', '{"a":"\\/"}', '{"a":"\\x"}', '{"a":"\\"}', '{"a":"\u0001"}', '{"a":"\ud83d\ude00"}', '{"a":"\ud83d"}',
    '{"b":1,"a":2}', '{"a":1,"a":2}', '{"A":1,"a":2}', '{"a":1,"A":2}', '{"1":1}', '{"01":1}', '{"a1":1,"a10":2,"a9":3}',
    '{"__proto__":1}', '{"a":{"__proto__":{}}}', '{"\\u0061":1}', '{"a\\n":1}', '{"a":1,}', '[1,]', '[,1]', '{"a"1}', '{"a":}',
    ' {}', '{} ', '{ }', '{"a": 1}', '[1, 2]', 'tru', 'truex', 'nul', '"open', '{"a":1', '[1', '', 'not json',
    '{"a":[1,{"c":3,"b":2}]}', '{"a":[1,{"b":2,"c":3}]}', `${'['.repeat(40)}${']'.repeat(40)}`, `${'['.repeat(20)}1${']'.repeat(20)}`,
  ]; // prettier-ignore

  it('are the text itself, unparsed, only where the parse would give it back', () => {
    const random = createRandom(29).next;
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
    const keys = ['a', 'b', 'B', 'path', 'cmd', '_x', 'é', '', '1', 'a b'];
    const scalars: unknown[] = [
      0,
      -0,
      1,
      -17,
      1.5,
      1e21,
      2 ** 53 + 2,
      'v',
      '',
      'é',
      'a"b',
      'a\\b',
      '\n\t',
      '\u0001',
      '\ud83d',
      true,
      null,
    ];
    const value = (depth: number): unknown => {
      const roll = random();
      if (depth <= 0 || roll < 0.4) return pick(scalars);
      if (roll < 0.6) return Array.from({ length: Math.floor(random() * 3) }, () => value(depth - 1));
      const record: Record<string, unknown> = {};
      for (let key = Math.floor(random() * 4); key > 0; key -= 1) record[pick(keys)] = value(depth - 1);
      return record;
    };
    const samples = [...edges];
    for (let index = 0; index < 2000; index += 1) {
      const written = JSON.stringify(value(3));
      samples.push(written, definition(written));
      // One character changed, dropped or added: mostly not JSON, sometimes other JSON.
      const at = Math.floor(random() * (written.length + 1));
      const char = pick(['"', '\\', ',', ':', '{', '}', '[', ']', ' ', '0', '-', '.', 'e', 'a']);
      samples.push(
        `${written.slice(0, at)}${char}${written.slice(at + 1)}`,
        `${written.slice(0, at)}${char}${written.slice(at)}`,
      );
    }
    let scanned = 0;
    for (const args of samples) {
      const expected = definition(args);
      if (isCanonicalJson(args)) {
        scanned += 1;
        expect(expected, `scanned as canonical: ${args}`).toBe(args);
      }
      expect(canonicalArguments(args), args).toBe(expected);
    }
    // The scan takes most of what models write (compact, keys in order) and refuses what it must.
    expect(scanned).toBeGreaterThan(samples.length / 4);
    for (const args of [
      '{"path":"src/app.ts"}',
      '{"command":"npm test -- file1","timeout":120}',
      '["a",1,{"b":null}]',
      '{"a":"x\\ny"}',
    ])
      expect(isCanonicalJson(args), args).toBe(true);
    for (const args of [
      '-0',
      '1.5',
      '{"b":1,"a":2}',
      '{"1":1}',
      '{"__proto__":1}',
      '{"a":"\\u0041"}',
      '{"a":"\\/"}',
      '{"a": 1}',
      '[1,]',
    ])
      expect(isCanonicalJson(args), args).toBe(false);
  });
});

describe('stubs only where shorter, decided before they are made', () => {
  it('elides a result exactly when its stub is shorter, at every length around the stub and across a digit', () => {
    // A tool name whose stub for a `digits`-digit length (10^(digits-1)) is exactly that long: one
    // character less and the stub loses a digit, so a miscounted digit flips what is elided.
    const atDigit = (digits: number): string => {
      const length = 10 ** (digits - 1);
      return 'x'.repeat(length - elisionStub(length, '').length);
    };
    for (const name of ['bash', atDigit(3), atDigit(4)]) {
      const stubAt = (length: number): number => elisionStub(length, name).length;
      const edge = stubAt(100);
      const lengths = [
        9,
        10,
        11,
        99,
        100,
        101,
        999,
        1000,
        1001,
        ...Array.from({ length: 9 }, (_, at) => edge - 4 + at),
      ];
      for (const length of lengths) {
        const content = 'r'.repeat(length);
        // A read repeated: the older copy is eligible whatever its length; the newer never is.
        const messages = [
          user('task'),
          assistant(null, [['c1', name, '{"path":"a"}']]),
          tool('c1', content),
          assistant(null, [['c2', name, '{"path":"a"}']]),
          tool('c2', content),
          user('go on'),
        ];
        const options = { ageMinChars: 1e9, ageReclaimMin: 1e9, stubsShorterOnly: true };
        const { elisions } = planElisions(messages, findRegions(messages, 1), options);
        const shorter = stubAt(length) < length;
        expect(elisions, `${name.length}-char name, ${length} characters`).toEqual(
          shorter ? [{ index: 2, stub: elisionStub(length, name) }] : [],
        );
      }
    }
  });
});

describe('messages validated by hand before zod', () => {
  const call = { id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } };
  const bases: Record<string, unknown>[] = [
    { role: 'user', content: 'hi' },
    { role: 'assistant', content: null, tool_calls: [call] },
    { role: 'tool', content: 'out', tool_call_id: 'c1', name: 'f' },
    {
      role: 'system',
      content: [
        { type: 'text', text: 'a' },
        { type: 'image_url', image_url: { url: 'x' } },
      ],
      sticky: true,
    },
    { role: 'developer', content: 'd', depth: 0, extra: { kept: true } },
  ];
  const values: unknown[] = [
    undefined, null, '', 'x', 'text', 'user', 'assistant', 'tool', 'function', 0, -1, 1.5, 2 ** 60, Number.NaN,
    Number.POSITIVE_INFINITY, true, [], {}, [null], [[]], [{}], [{ type: 'text' }], [{ type: 'text', text: 1 }],
    [{ type: 'image_url' }], [{ type: 5 }], [call], [call, call], [{ ...call, id: '' }], [{ ...call, type: 'fn' }],
    [{ ...call, function: { name: '', arguments: '' } }], [{ ...call, function: { name: 'f', arguments: {} } }],
    [{ ...call, function: null }], [{ id: 'c2', type: 'function' }], new Array(2),
  ]; // prettier-ignore
  const fields = ['role', 'content', 'tool_calls', 'tool_call_id', 'name', 'sticky', 'depth'];

  it('accepts exactly what the schema accepts (a fault is still named by zod)', () => {
    let accepted = 0;
    let refused = 0;
    for (const base of bases)
      for (const field of fields)
        for (const value of values) {
          const message = { ...base, [field]: value };
          const valid = chatMessageSchema.safeParse(message).success;
          let outcome = 'accepted';
          try {
            validateMessages([message]);
          } catch (error) {
            outcome = error instanceof Error ? error.message : String(error);
          }
          expect(outcome === 'accepted', `${JSON.stringify(message)}: ${outcome}`).toBe(valid);
          if (valid) accepted += 1;
          else refused += 1;
        }
    expect(accepted).toBeGreaterThan(50);
    expect(refused).toBeGreaterThan(500);
  });
});
