// Vitest setupFiles entry: runs in every test file before its own code. Its afterAll is
// registered first, so it runs after the file's own afterAll hooks (sequence.hooks "stack").
import { afterAll } from 'vitest';
import { runCleanups } from './cleanup.js';

afterAll(runCleanups);
