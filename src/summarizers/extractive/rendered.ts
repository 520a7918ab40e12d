// Sandbox-safe: the reader for requests that carry only the rendered transcript — summarize
// activity inputs written before `temporal-compactor:summarize-middle-v1`, and requests built by
// hand. It turns the renderer's text (src/core/compaction/transcript.ts) back into messages, the
// one place that reads that format; everything after it works on the messages.
import type { ChatMessage, ToolCall } from '../../core/types.js';

const BLOCK_HEADER = /^\[(user|assistant|system|developer|tool result(?: (.+?))? \((.*)\)|tool)\]$/;
const CALL_LINE = /^-> call (\S+) \(([^()]*)\) ?(.*)$/;

/**
 * The messages of a rendered transcript (`[user]`, `[assistant]` with its `-> call NAME (id) ARGS`
 * lines, `[tool result NAME (id)]`), or `undefined` when the text holds no block header at all.
 * A header counts only at the start or after a blank line (the renderer joins blocks with one), so
 * a `[user]` line inside a tool result does not split it. Best effort: text that happens to look
 * like a header after a blank line splits a block the renderer wrote as one.
 */
export function readRenderedTranscript(text: string): ChatMessage[] | undefined {
  const lines = text.split(/\r?\n/);
  const blocks: Array<{ header: RegExpExecArray; body: string[] }> = [];
  for (let index = 0; index < lines.length; index += 1) {
    const line = lines[index] ?? '';
    const header = index === 0 || lines[index - 1] === '' ? BLOCK_HEADER.exec(line) : null;
    if (header !== null) {
      const previous = blocks.at(-1);
      if (previous !== undefined && previous.body.at(-1) === '') previous.body.pop();
      blocks.push({ header, body: [] });
    } else {
      blocks.at(-1)?.body.push(line);
    }
  }
  if (blocks.length === 0) return undefined;
  return blocks.map(({ header, body }) => {
    const label = header[1] ?? '';
    if (label === 'assistant') return assistantMessage(body);
    if (label.startsWith('tool')) {
      const message: ChatMessage = { role: 'tool', content: body.join('\n') };
      if (header[3] !== undefined) message.tool_call_id = header[3];
      if (header[2] !== undefined) message.name = header[2];
      return message;
    }
    return {
      role: label === 'user' ? 'user' : label === 'developer' ? 'developer' : 'system',
      content: body.join('\n'),
    };
  });
}

/** An assistant block: its text, then one call per call line (an argument string may run over several lines). */
function assistantMessage(body: readonly string[]): ChatMessage {
  const text: string[] = [];
  const calls: ToolCall[] = [];
  for (const line of body) {
    const call = CALL_LINE.exec(line);
    const current = calls.at(-1);
    if (call !== null)
      calls.push({ id: call[2] ?? '', type: 'function', function: { name: call[1] ?? '', arguments: call[3] ?? '' } });
    else if (current !== undefined) current.function.arguments += `\n${line}`;
    else text.push(line);
  }
  const message: ChatMessage = { role: 'assistant', content: text.join('\n') };
  if (calls.length > 0) message.tool_calls = calls;
  return message;
}
