// Sandbox-safe: the steering updates of an agent run waiting for its loop (docs/design.md#steering): `compact`
// updates, served together before the next chat request, `pin`/`unpin` ones, and the pins they leave.
import type { ApplicationFailure } from '@temporalio/common';
import { condition } from '@temporalio/workflow';
import {
  pinChange,
  unpinChange,
  type CheckedPinInput,
  type CompactAnswer,
  type PinChange,
  type Pins,
} from '../../core/agent/steering.js';
import type { SessionEntry } from '../../core/agent/session.js';
import { InvalidInputError } from '../../core/errors.js';
import { invalidInputFailure } from '../../shared/failures.js';
import type { LiveConversation } from './live-conversation.js';

interface CompactRequest {
  instructions: string | undefined;
  answer?: CompactAnswer;
}

type PinKind = 'pin' | 'unpin';

/** A `pin` or `unpin` update waiting for the loop, answered once applied. */
interface PinRequest {
  kind: PinKind;
  input: CheckedPinInput;
  outcome?: { pins: Pins } | { failure: ApplicationFailure };
}

function changeOf(request: Omit<PinRequest, 'outcome'>, entries: readonly SessionEntry[], pins: Pins): PinChange {
  return request.kind === 'pin' ? pinChange(request.input, entries, pins) : unpinChange(request.input, pins);
}

export class SteeringRequests {
  private readonly compactRequests: CompactRequest[] = [];
  /** `pin`/`unpin` updates that arrived while a compaction held the conversation. */
  private readonly pinRequests: PinRequest[] = [];
  /** True while a compaction's summary is being written or reviewed: the conversation is not to change under it. */
  private compacting = false;

  constructor(
    private pins: Pins,
    private readonly conversation: LiveConversation,
    private readonly pinsApplied: () => void,
  ) {}

  get currentPins(): Pins {
    return this.pins;
  }

  get compactionAsked(): boolean {
    return this.compactRequests.length > 0;
  }

  /** The `compact` update's handler: waits for the loop to compact before its next chat request. */
  async requestCompaction(instructions: string | undefined): Promise<CompactAnswer> {
    const request: CompactRequest = { instructions };
    this.compactRequests.push(request);
    await condition(() => request.answer !== undefined);
    if (request.answer === undefined) throw new Error('unreachable: the compact request was not answered');
    return request.answer;
  }

  /** Every `compact` update waiting, for one compaction: their instructions joined, and the one answer they all get. */
  takeCompactRequests() {
    const requests = this.compactRequests.splice(0);
    if (requests.length === 0) return undefined;
    const asked = requests.flatMap((request) => (request.instructions === undefined ? [] : [request.instructions]));
    return {
      instructions: asked.length === 0 ? undefined : asked.join('\n\n'),
      answer: (answer: CompactAnswer) => {
        for (const request of requests) request.answer = answer;
      },
    };
  }

  /** Answers the `compact` updates the loop will not serve, the run having finished; true when there was any. */
  refuseCompactions(): boolean {
    const requests = this.compactRequests.splice(0);
    for (const request of requests)
      request.answer = { compacted: false, reason: 'the run finished before its next chat request' };
    return requests.length > 0;
  }

  /** Checks a `pin`/`unpin` against the live conversation and the pins once the requests queued before it apply. */
  checkPins(kind: PinKind, input: CheckedPinInput): void {
    const entries = this.conversation.liveEntries;
    let pins = this.pins;
    for (const queued of this.pinRequests) {
      try {
        pins = changeOf(queued, entries, pins).pins;
      } catch (error) {
        if (!(error instanceof InvalidInputError)) throw error;
      }
    }
    changeOf({ kind, input }, entries, pins);
  }

  /** A `pin`/`unpin`: applied at once, or, while a compaction holds the conversation, as soon as it is done. */
  async requestPins(kind: PinKind, input: CheckedPinInput): Promise<Pins> {
    const request: PinRequest = { kind, input };
    if (this.compacting) {
      this.pinRequests.push(request);
      await condition(() => request.outcome !== undefined);
    } else this.applyPins(request);
    const { outcome } = request;
    if (outcome === undefined) throw new Error('unreachable: the pin request was not answered');
    if ('failure' in outcome) throw outcome.failure;
    return outcome.pins;
  }

  /** While a compaction holds the conversation, pins wait for its result (which replaces messages). */
  hold(held: boolean): void {
    this.compacting = held;
  }

  /** Forgets the pins of messages that left the conversation (an undo took out the summary they were on). */
  forgetPins(ids: readonly string[]): void {
    const gone = this.pins.ids.filter((id) => ids.includes(id));
    if (gone.length > 0) this.pins = { ...this.pins, ids: this.pins.ids.filter((id) => !gone.includes(id)) };
  }

  applyHeldPins(): void {
    this.applyPins(...this.pinRequests.splice(0));
  }

  /** A `pin` transcript line for the messages whose flag changes, and the new pins. */
  private applyPins(...requests: PinRequest[]): void {
    for (const request of requests) {
      try {
        const change = changeOf(request, this.conversation.liveEntries, this.pins);
        if (change.ids.length > 0)
          this.conversation.writeLine({ type: 'pin', ids: change.ids, pinned: request.kind === 'pin' });
        this.pins = change.pins;
        request.outcome = { pins: change.pins };
      } catch (error) {
        // The conversation moved since the update was accepted (the compaction removed the message).
        if (!(error instanceof InvalidInputError)) throw error;
        request.outcome = { failure: invalidInputFailure(error) };
      }
    }
    if (requests.length > 0) this.pinsApplied();
  }
}
