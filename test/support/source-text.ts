// Generated tool output for tests that need big, realistic text: source-like lines that tokenize
// like code, different for every seed, and the assistant turn that reads a file.
import type { ChatMessage } from '../../src/index.js';

/** Numbered lines of Python-like code, `chars` long, different for every `seed`. */
export function sourceText(chars: number, seed: string): string {
  const lines: string[] = [];
  let length = 0;
  for (let i = 0; length < chars; i += 1) {
    const line = `${String(i + 1).padStart(6)}  def ${seed}_handler_${i}(request, session=None):  # returns ${(i * 7919) % 100_003} rows from table_${i % 97}`;
    lines.push(line);
    length += line.length + 1;
  }
  return lines.join('\n').slice(0, chars);
}

/** An assistant turn that calls `fs_read` on `path`, with tool call id `id`. */
export function readTurn(id: string, path: string): ChatMessage {
  return {
    role: 'assistant',
    content: `Reading ${path}.`,
    tool_calls: [{ id, type: 'function', function: { name: 'fs_read', arguments: JSON.stringify({ path }) } }],
  };
}
