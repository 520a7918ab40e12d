// Malformed input, found by a fuzzer (issue 11 §3), against the real workflow functions run outside
// a worker (no server needed): every class of test/support/malformed.ts ends in a non-retryable
// `Compaction.InvalidInput` that names the exact field, and random mutations of valid inputs end
// either accepted or in such a failure — never in any other error, which in a worker would fail the
// workflow task and retry it for ever. A sample of every class runs on the dev server in
// malformed-input-e2e.test.ts.
import type { ApplicationFailure } from '@temporalio/common';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FailureType } from '../../src/index.js';
import {
  MALFORMED_CLASSES,
  fieldFor,
  inputFor,
  mutatedFormatInputArb,
  mutatedInputArb,
  validAgentInput,
  validCompactOptions,
  validAiSdkInputArb,
  validAnthropicInputArb,
  validConversationArb,
  verdictOf,
  workflowsOf,
  type FuzzWorkflow,
  type MalformedClass,
} from '../support/malformed.js';

/** Cases per class and workflow. */
const RUNS_PER_CLASS = 25;

/** What a rejection must look like: typed, non-retryable, naming `field` in its message and details. */
function expectNamedRejection(failure: ApplicationFailure, field: string, reason?: RegExp): void {
  expect([failure.type, failure.nonRetryable]).toEqual([FailureType.Compaction.InvalidInput, true]);
  const details: unknown = failure.details?.[0];
  expect(details).toHaveProperty('field', field);
  const text = typeof details === 'object' && details !== null ? Reflect.get(details, 'reason') : undefined;
  expect(typeof text === 'string' && text.length > 0, 'a reason is given').toBe(true);
  expect(failure.message).toBe(`${field}: ${String(text)}`);
  if (reason !== undefined) expect(String(text)).toMatch(reason);
}

async function rejection(workflow: FuzzWorkflow, input: unknown): Promise<ApplicationFailure> {
  const verdict = await verdictOf(workflow, input);
  if (verdict.kind !== 'rejected') throw new Error(`${workflow} accepted ${JSON.stringify(input).slice(0, 300)}`);
  return verdict.failure;
}

describe('malformed workflow input, class by class (fast-check)', () => {
  it(`names at least 30 distinct classes (${MALFORMED_CLASSES.length})`, () => {
    const names = MALFORMED_CLASSES.map((malformed) => malformed.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names.length).toBeGreaterThanOrEqual(30);
  });

  const classes: Array<[string, MalformedClass, FuzzWorkflow]> = MALFORMED_CLASSES.filter(
    (malformed) => malformed.scope !== 'update',
  ).flatMap((malformed) =>
    workflowsOf(malformed).map((workflow): [string, MalformedClass, FuzzWorkflow] => [
      `${malformed.name} → ${workflow}`,
      malformed,
      workflow,
    ]),
  );
  it.each(classes)('%s: Compaction.InvalidInput naming the field', async (_name, malformed, workflow) => {
    await fc.assert(
      fc.asyncProperty(malformed.cases, async ({ value, field, reason }) => {
        const failure = await rejection(workflow, inputFor(malformed, workflow, value));
        expectNamedRejection(failure, fieldFor(malformed, workflow, field), reason);
      }),
      { numRuns: RUNS_PER_CLASS },
    );
  });

  it.each(
    MALFORMED_CLASSES.filter((malformed) => malformed.scope === 'agent-messages').map(
      (malformed): [string, MalformedClass] => [malformed.name, malformed],
    ),
  )(
    '%s: compaction accepts the same conversation (docs/design.md#messages: well-formed but unusual)',
    async (_name, malformed) => {
      await fc.assert(
        fc.asyncProperty(malformed.cases, async ({ value }) => {
          expect(await verdictOf('compactConversation', inputFor(malformed, 'compactConversation', value))).toEqual({
            kind: 'accepted',
          });
        }),
        { numRuns: RUNS_PER_CLASS },
      );
    },
  );

  it('the valid inputs the classes start from are accepted', async () => {
    await fc.assert(
      fc.asyncProperty(validConversationArb, async (messages) => {
        expect(await verdictOf('agentRun', { ...validAgentInput(), messages })).toEqual({ kind: 'accepted' });
        expect(await verdictOf('compactConversation', { messages, options: validCompactOptions() })).toEqual({
          kind: 'accepted',
        });
      }),
      { numRuns: 100 },
    );
  });

  it('the valid Anthropic and AI SDK inputs their classes start from are accepted', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(validAnthropicInputArb, validAiSdkInputArb), async (input) => {
        expect(await verdictOf('compactConversation', input)).toEqual({ kind: 'accepted' });
      }),
      { numRuns: 100 },
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Random mutations of valid inputs
// ---------------------------------------------------------------------------------------------

describe('random mutations of valid inputs (fast-check)', () => {
  it.each<FuzzWorkflow>(['agentRun', 'compactConversation'])(
    '%s: accepted, or a non-retryable Compaction.InvalidInput naming a field — never another error',
    async (workflow) => {
      let rejected = 0;
      await fc.assert(
        fc.asyncProperty(mutatedInputArb(workflow), async (input) => {
          const verdict = await verdictOf(workflow, input);
          if (verdict.kind === 'accepted') return;
          rejected += 1;
          const field: unknown = Reflect.get(Object(verdict.failure.details?.[0]), 'field');
          expect(typeof field).toBe('string');
          expect(String(field)).toMatch(/^(input|messages|options)\b/);
          expectNamedRejection(verdict.failure, String(field));
        }),
        { numRuns: 1500 },
      );
      // Most mutations break something; a fuzzer whose inputs all pass would test nothing.
      expect(rejected).toBeGreaterThan(500);
    },
  );

  it.each([
    ['Anthropic', validAnthropicInputArb],
    ['AI SDK', validAiSdkInputArb],
  ])(
    'compactConversation, %s input: accepted, or a non-retryable Compaction.InvalidInput naming a field',
    async (_name, base) => {
      let rejected = 0;
      await fc.assert(
        fc.asyncProperty(mutatedFormatInputArb(base), async (input) => {
          const verdict = await verdictOf('compactConversation', input);
          if (verdict.kind === 'accepted') return;
          rejected += 1;
          const field: unknown = Reflect.get(Object(verdict.failure.details?.[0]), 'field');
          expect(String(field)).toMatch(/^(input|messages|options|system)\b/);
          expectNamedRejection(verdict.failure, String(field));
        }),
        { numRuns: 1000 },
      );
      expect(rejected).toBeGreaterThan(300);
    },
  );
});
