// Sandbox-safe: task queue names checked before a workflow schedules anything on them. The server
// refuses to schedule an activity on a name over its length limit, and the SDK fails the workflow
// task when it does, again at every retry: the run would wedge instead of failing.
import { InvalidInputError } from '../errors.js';
import { utf8Length } from './payload-size.js';

/**
 * The longest task queue name the server accepts by default (`limit.maxIDLength`), in bytes.
 * @default 1000
 */
export const TASK_QUEUE_MAX_BYTES = 1000;

/**
 * Checks an optional task queue name: a non-empty string without surrounding whitespace (a queue
 * nobody polls would leave the run waiting for ever), of at most {@link TASK_QUEUE_MAX_BYTES}.
 * @throws InvalidInputError naming `field`
 */
export function assertTaskQueueName(value: unknown, field: string): void {
  if (value === undefined) return;
  if (typeof value !== 'string' || value === '') throw new InvalidInputError(field, 'must be a non-empty string');
  if (value.trim() !== value)
    throw new InvalidInputError(
      field,
      `must not be blank or start or end with whitespace, got ${JSON.stringify(value)}`,
    );
  const bytes = utf8Length(value);
  if (bytes > TASK_QUEUE_MAX_BYTES)
    throw new InvalidInputError(field, `must be at most ${TASK_QUEUE_MAX_BYTES} bytes, got ${bytes}`);
}
