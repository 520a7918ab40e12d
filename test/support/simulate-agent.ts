// An in-process model of agentRun's compaction schedule over a replayed trajectory, used to pick
// test windows that force a given number of compactions. It mirrors the loop — the task pinned,
// and the preflight for one replay backend with no tools (room = window − maxOutputTokens; the
// replay provider bills the workflow's own BPE count, so a calibrated counter counts exactly what
// this BPE counter counts) — with the same Compactor engine and the same deterministic summarizer.
import { Compactor } from '../../src/compactor.js';
import type { CompactionOptions } from '../../src/core/compaction/options.js';
import { pinTask } from '../../src/core/agent/agent-input.js';
import { createBpeCounter } from '../../src/core/counting/bpe-counter.js';
import { replayScript } from '../../src/core/agent/trajectory.js';
import type { ChatMessage } from '../../src/core/types.js';
import { createExtractiveSummarizer } from '../../src/summarizers/extractive.js';
import { loadTrajectory } from './agent.js';

const bpe = createBpeCounter();

export interface SimulatedRun {
  compactions: number;
  exhausted: boolean;
}

export async function simulateReplay(
  name: string,
  room: number,
  options: Omit<CompactionOptions, 'contextBudget'>,
): Promise<SimulatedRun> {
  const script = replayScript(loadTrajectory(name));
  const compactor = new Compactor({
    summarizer: createExtractiveSummarizer(),
    contextBudget: room,
    counter: bpe,
    ...options,
  });
  // As agentRun does by default (keepTask): the task is pinned.
  let messages: ChatMessage[] = pinTask(script.opening);
  let compactions = 0;
  for (const turn of script.turns) {
    // The simulation is CPU alone (the summarizer answers at once): a turn at a time, so that a
    // worker polling in this process is not starved. Run whole, a large recording held the event
    // loop for 26 s here; activities and workflow tasks of the runs in flight timed out meanwhile.
    await new Promise((resolve) => setImmediate(resolve));
    const overRoom = bpe.count(messages) > room;
    if (overRoom || compactor.needsCompaction(messages)) {
      const result = await compactor.compact(messages, overRoom ? { target: room } : {});
      if (result.cutIndex >= 0 || result.elisions.length > 0 || result.fallback || result.exhausted) compactions += 1;
      messages = result.messages;
      if (result.exhausted || (overRoom && result.tokensAfter > room)) return { compactions, exhausted: true };
    }
    messages.push(turn.message);
    for (const call of turn.message.tool_calls ?? []) {
      const recorded = turn.results.get(call.id);
      if (recorded !== undefined) messages.push(recorded);
    }
    messages.push(...turn.userMessages);
  }
  return { compactions, exhausted: false };
}

/**
 * The largest room (tokens for the conversation) at which the replayed run compacts at least
 * `atLeast + 1` times and completes; else at least `atLeast` times and completes; else at least
 * `atLeast` times before it is exhausted. Rooms are tried from 60% of the whole recording down.
 */
export async function chooseRoom(
  name: string,
  options: Omit<CompactionOptions, 'contextBudget'>,
  atLeast = 3,
): Promise<{ room: number; expected: SimulatedRun }> {
  const total = bpe.count(loadTrajectory(name));
  const tried: Array<{ room: number; run: SimulatedRun }> = [];
  let pick: { room: number; run: SimulatedRun } | undefined;
  for (let fraction = 0.6; fraction > 0.02 && pick === undefined; fraction *= 0.88) {
    const room = Math.ceil(total * fraction);
    const run = await simulateReplay(name, room, options);
    tried.push({ room, run });
    if (!run.exhausted && run.compactions >= atLeast + 1) pick = { room, run };
  }
  pick ??=
    tried.find(({ run }) => !run.exhausted && run.compactions >= atLeast) ??
    tried.find(({ run }) => run.compactions >= atLeast);
  if (pick === undefined)
    throw new Error(
      `${name}: no room forces ${atLeast} compactions (${tried.map(({ room, run }) => `${room}:${run.compactions}`).join(' ')})`,
    );
  return { room: pick.room, expected: pick.run };
}
