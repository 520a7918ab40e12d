// Sandbox-safe: task queue names checked before use: a name the server refuses fails the workflow task at every retry.
import { InvalidInputError } from '../errors.js';
import { utf8Length } from './payload-size.js';

export const TASK_QUEUE_MAX_BYTES = 1000;

/** A non-empty name without surrounding whitespace (a queue nobody polls would leave the run waiting forever). */
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
