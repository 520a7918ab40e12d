// The transcript property (docs/design.md#replay): every corpus trajectory replayed through agentRun
// at a window that forces at least three compactions (two for one recording, see
// `compactionsWanted`), across continue-as-new — JSON of replaySession(session) equals JSON of the
// live final conversation. agent-run-transcript.test.ts runs it without ageObservations and
// agent-run-transcript-aged.test.ts with them: two files, so that vitest runs the two halves in two
// processes at once (over the extended corpus the matrix takes minutes, and one file was the
// longest of the run).
//
// The trajectories: the repository set (MIT recordings, generated runs) always, the rest of the
// extended corpus when it is present (else one skipped test says so). Some end with a tool result
// no window that forces three compactions can hold (the generated 650,000-char `find`,
// jackson-databind-4304's 666,865-char one); those runs end in RunFailed.ContextExhausted after
// their compactions, and the property is checked on the transcript and conversation they hold at
// that point (read by query).
//
// Default: every trajectory, four runs at a time on one worker per file. AGENT_TRANSCRIPT_SUBSET=1
// runs a representative few instead.
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { FailureType } from '../../src/core/errors.js';
import { replaySession } from '../../src/core/agent/session.js';
import { repositoryCorpus } from '../../corpus/index.js';
import { openingOf, replayActivities, runAgent, startBackgroundWorker } from '../support/agent.js';
import { extendedCases } from '../support/corpus.js';
import { chooseRoom } from '../support/simulate-agent.js';
import { bundleWorkflows, testConnection, type TestConnection } from '../support/temporal.js';

const SUBSET = [
  'claudecode_django__django-11797',
  'generated_huge-result',
  'generated_parallel-calls',
  'openhands_gpt4o_Project-MONAI__MONAI-3715',
  'sweagent_doubao_fasterxml__jackson-databind-4304',
  'taubench_gpt4o_airline_task46_trial3',
];
const MAX_OUTPUT_TOKENS = 1000;

const COMPACTION = { keepRecent: 4, ageReclaimMin: 8000, ageMinChars: 1000 } as const;

/**
 * Compactions each run must show. moto-pr_6055 reads a 100,266-character file at round 2: the
 * reference compacted again every round while that read sat in the recent window; without thrash
 * (docs/design.md#no-thrash) no window makes that recording compact more than twice.
 */
const compactionsWanted = (name: string): number => (name === 'swesmith_claude37_getmoto__moto-pr_6055' ? 2 : 3);

/** Registers the property's tests, for every trajectory, in the calling test file. */
export function transcriptProperty(ageObservations: boolean): void {
  // In the calling file, not at import: a process runs several files with the modules it loaded.
  const all = [...repositoryCorpus(), ...extendedCases()].map(({ name }) => name);
  const names = process.env.AGENT_TRANSCRIPT_SUBSET === '1' ? all.filter((name) => SUBSET.includes(name)) : all;
  let t: TestConnection;
  beforeAll(async () => {
    t = await testConnection();
    const bundle: WorkflowBundleWithSourceMap = await bundleWorkflows(
      new URL('../../src/workflows/index.ts', import.meta.url),
    );
    await startBackgroundWorker(t, {
      workflowBundle: bundle,
      activities: replayActivities(),
      maxConcurrentWorkflowTaskExecutions: 8,
    });
  });

  describe.concurrent(
    `replaySession(session) equals the live conversation, ageObservations: ${ageObservations}`,
    { timeout: 240_000 },
    () => {
      for (const name of names) {
        it(name, async () => {
          // The window comes from an in-process model of the loop (test/support/simulate-agent.ts).
          const wanted = compactionsWanted(name);
          const { room, expected } = await chooseRoom(name, { ...COMPACTION, ageObservations }, wanted);
          const contextWindow = room + MAX_OUTPUT_TOKENS;
          const outcome = await runAgent(t, {
            messages: openingOf(name),
            model: { provider: 'replay', trajectory: name, contextWindow, maxOutputTokens: MAX_OUTPUT_TOKENS },
            compaction: { ...COMPACTION, ageObservations },
            maxRounds: 1000,
            continueAsNewAfterRounds: 15,
            searchAttributes: false,
          });
          if (outcome.status === 'failed') expect(outcome.failureType).toBe(FailureType.RunFailed.ContextExhausted);
          const summary = `${name} ${ageObservations} window=${contextWindow} ${outcome.status} compactions=${outcome.compactions.length} (${outcome.compactions.map((record) => record.kind[0]).join('')}), modelled ${expected.compactions}${expected.exhausted ? ' then exhausted' : ''}`;
          expect(outcome.status, summary).toBe(expected.exhausted ? 'failed' : 'completed');
          if (outcome.status === 'completed') expect(outcome.result?.continuedAsNew, summary).toBeGreaterThan(0);
          expect(outcome.compactions.length, summary).toBeGreaterThanOrEqual(wanted);
          expect(outcome.session.filter((line) => line.type !== 'message').length).toBeGreaterThan(0);
          expect(JSON.stringify(replaySession(outcome.session))).toBe(JSON.stringify(outcome.messages));
        });
      }
    },
  );
}
