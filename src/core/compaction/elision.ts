// Sandbox-safe: observation aging — call identity, eligibility, stubs (docs/design.md#elision).
import type { Regions } from './regions.js';
import { contentText, messageChars } from '../counting/tokens.js';
import type { ChatMessage, Elision } from '../types.js';

/** Canonical JSON: sorted keys, no whitespace. Arguments that are not JSON stay as they are. */
export function canonicalArguments(args: string): string {
  try {
    return JSON.stringify(sortKeys(JSON.parse(args)));
  } catch {
    return args.trim();
  }
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (typeof value !== 'object' || value === null) return value;
  const sorted: Record<string, unknown> = {};
  const entries = Object.entries(value).sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0));
  for (const [key, entry] of entries) sorted[key] = sortKeys(entry);
  return sorted;
}

/**
 * The stub that replaces an elided result: a pure function of the content length and the tool
 * name, so two runs of the same conversation produce the same bytes.
 */
export function elisionStub(contentLength: number, toolName: string): string {
  return `[elided by the harness: ${contentLength}-char ${toolName} result; re-run the call if you need it again]`;
}

const stubPattern = /^\[elided by the harness: \d+-char .+ result; re-run the call if you need it again\]$/;

export function isStub(message: ChatMessage): boolean {
  return typeof message.content === 'string' && stubPattern.test(message.content);
}

interface CallInfo {
  name: string;
  identity: string;
}

/** Tool name and call identity of each answered tool result whose assistant turn is present. */
function callInfoByResult(messages: readonly ChatMessage[], regions: Regions): Map<number, CallInfo> {
  const info = new Map<number, CallInfo>();
  // Agents repeat the same arguments (the same file, the same command) many times: canonicalise
  // each distinct string once per pass (JSON.parse + sort + stringify is the cost of this function).
  const canonical = new Map<string, string>();
  for (const [resultIndex, askerIndex] of regions.groups.askedBy) {
    const result = messages[resultIndex];
    const call = messages[askerIndex]?.tool_calls?.find((candidate) => candidate.id === result?.tool_call_id);
    if (call === undefined) continue;
    const args = call.function.arguments;
    let canonicalArgs = canonical.get(args);
    if (canonicalArgs === undefined) {
      canonicalArgs = canonicalArguments(args);
      canonical.set(args, canonicalArgs);
    }
    info.set(resultIndex, { name: call.function.name, identity: `${call.function.name}\u0000${canonicalArgs}` });
  }
  return info;
}

export interface ElisionPlan {
  elisions: Elision[];
  /** Characters of content in the eligible results (the pool the epoch floor is measured on). */
  poolChars: number;
}

/**
 * Every tool result eligible for elision (docs/design.md#elision): in the middle, not a stub, and either an
 * older copy of a repeated call identity, or longer than `ageMinChars` with at least
 * `ageReclaimMin` characters of content after it — never the newest copy of a repeated identity.
 * With `stubsShorterOnly` (docs/design.md#never-worse), never a result its stub would not shorten.
 */
export function planElisions(
  messages: readonly ChatMessage[],
  regions: Regions,
  {
    ageMinChars,
    ageReclaimMin,
    stubsShorterOnly = false,
  }: { ageMinChars: number; ageReclaimMin: number; stubsShorterOnly?: boolean },
): ElisionPlan {
  const calls = callInfoByResult(messages, regions);
  const copies = new Map<string, number>();
  const newest = new Map<string, number>();
  for (const [index, { identity }] of calls) {
    copies.set(identity, (copies.get(identity) ?? 0) + 1);
    newest.set(identity, Math.max(newest.get(identity) ?? -1, index));
  }

  let poolChars = 0;
  let charsAfter = 0;
  const eligibleFromEnd: Elision[] = [];
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index];
    if (message === undefined) continue;
    if (regions.inMiddle[index] === true && message.role === 'tool' && !isStub(message)) {
      const call = calls.get(index);
      const length = contentText(message.content).length;
      const repeated = call !== undefined && (copies.get(call.identity) ?? 0) > 1;
      const eligible = repeated
        ? newest.get(call.identity) !== index
        : length > ageMinChars && charsAfter >= ageReclaimMin;
      if (eligible) {
        const stub = elisionStub(length, call?.name ?? message.name ?? 'tool');
        // A longer stub would spend a cache miss to make the prompt bigger.
        if (!stubsShorterOnly || stub.length < length) {
          eligibleFromEnd.push({ index, stub });
          poolChars += length;
        }
      }
    }
    charsAfter += messageChars(message);
  }
  return { elisions: eligibleFromEnd.reverse(), poolChars };
}

/** Applies elisions: only `content` changes; every other field and every position stays. */
export function applyElisions(messages: readonly ChatMessage[], elisions: readonly Elision[]): ChatMessage[] {
  if (elisions.length === 0) return [...messages];
  const stubs = new Map(elisions.map(({ index, stub }) => [index, stub]));
  return messages.map((message, index) => {
    const stub = stubs.get(index);
    return stub === undefined ? message : { ...message, content: stub };
  });
}
