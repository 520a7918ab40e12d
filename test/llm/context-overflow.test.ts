// readContextOverflow on each documented shape of a context-overflow answer (the sources are named
// in src/llm/context-overflow.ts). Each sample body is written here in the documented shape with
// numbers of our own, and goes through openai-node's own `APIError.generate`, so the error read is
// the one the client throws for that body.
import { APIError } from 'openai';
import { describe, expect, it } from 'vitest';
import { SummarizerError } from '../../src/core/errors.js';
import { readContextOverflow } from '../../src/llm/context-overflow.js';

/** What openai-node throws when a server answers `status` with `body` (a JSON body, parsed). */
function clientError(status: number, body: object | undefined): APIError {
  return APIError.generate(status, body, undefined, new Headers({ 'content-type': 'application/json' }));
}

describe('readContextOverflow', () => {
  describe('llama.cpp llama-server (exceed_context_size_error)', () => {
    it('reads n_ctx and n_prompt_tokens', () => {
      const error = clientError(400, {
        error: {
          code: 400,
          message: 'request (12001 tokens) exceeds the available context size (4096 tokens), try increasing it',
          type: 'exceed_context_size_error',
          n_prompt_tokens: 12001,
          n_ctx: 4096,
        },
      });
      expect(readContextOverflow(error)).toEqual({
        source: 'llama.cpp',
        contextWindow: 4096,
        requestTokens: 12001,
        promptTokens: 12001,
      });
    });

    it('reads the numbers from the message when the fields are missing', () => {
      const error = clientError(400, {
        error: {
          code: 400,
          message: 'input (9000 tokens) is larger than the max context size (8192 tokens). skipping',
          type: 'exceed_context_size_error',
        },
      });
      expect(readContextOverflow(error)).toEqual({
        source: 'llama.cpp',
        contextWindow: 8192,
        requestTokens: 9000,
        promptTokens: 9000,
      });
    });

    it('prefers the numeric fields to the message', () => {
      const error = clientError(400, {
        error: {
          message: 'request (1 tokens) exceeds the available context size (2 tokens), try increasing it',
          type: 'exceed_context_size_error',
          n_prompt_tokens: 5000,
          n_ctx: 2048,
        },
      });
      expect(readContextOverflow(error)).toMatchObject({ contextWindow: 2048, promptTokens: 5000 });
    });
  });

  describe('OpenAI (context_length_exceeded)', () => {
    it('reads "your messages resulted in"', () => {
      const error = clientError(400, {
        error: {
          message:
            "This model's maximum context length is 16385 tokens. However, your messages resulted in 17002 tokens. Please reduce the length of the messages.",
          type: 'invalid_request_error',
          param: 'messages',
          code: 'context_length_exceeded',
        },
      });
      expect(readContextOverflow(error)).toEqual({
        source: 'openai',
        contextWindow: 16385,
        requestTokens: 17002,
        promptTokens: 17002,
      });
    });

    it('reads the messages and the completion of "you requested"', () => {
      const error = clientError(400, {
        error: {
          message:
            "This model's maximum context length is 8192 tokens. However, you requested 9100 tokens (8100 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
          type: 'invalid_request_error',
          param: 'messages',
          code: 'context_length_exceeded',
        },
      });
      expect(readContextOverflow(error)).toEqual({
        source: 'openai',
        contextWindow: 8192,
        requestTokens: 9100,
        promptTokens: 8100,
        completionTokens: 1000,
      });
    });

    it('reads the legacy completions wording (prompt; completion)', () => {
      const error = clientError(400, {
        error: {
          message:
            "This model's maximum context length is 4097 tokens, however you requested 4300 tokens (4044 in your prompt; 256 for the completion). Please reduce your prompt; or completion length.",
          type: 'invalid_request_error',
          code: null,
        },
      });
      expect(readContextOverflow(error)).toEqual({
        source: 'openai',
        contextWindow: 4097,
        requestTokens: 4300,
        promptTokens: 4044,
        completionTokens: 256,
      });
    });

    it('recognizes the code alone, with no numbers in the message', () => {
      const error = clientError(400, {
        error: {
          message: 'Your input exceeds the context window of this model. Please adjust your input and try again.',
          type: 'invalid_request_error',
          param: 'input',
          code: 'context_length_exceeded',
        },
      });
      expect(readContextOverflow(error)).toEqual({ source: 'openai' });
    });
  });

  describe('vLLM', () => {
    it('reads "you requested ... in the messages ... in the completion" (serving_engine up to v0.10)', () => {
      const error = clientError(400, {
        error: {
          message:
            "This model's maximum context length is 32768 tokens. However, you requested 33500 tokens (31500 in the messages, 2000 in the completion). Please reduce the length of the messages or completion.",
          type: 'BadRequestError',
          param: null,
          code: 400,
        },
      });
      expect(readContextOverflow(error)).toEqual({
        source: 'vllm',
        contextWindow: 32768,
        requestTokens: 33500,
        promptTokens: 31500,
        completionTokens: 2000,
      });
    });

    it('reads "your request has M input tokens" (the renderer)', () => {
      const error = clientError(400, {
        error: {
          message:
            "This model's maximum context length is 4096 tokens. However, your request has 5120 input tokens. Please reduce the length of the input messages.",
          type: 'BadRequestError',
          param: null,
          code: 400,
        },
      });
      expect(readContextOverflow(error)).toEqual({
        source: 'vllm',
        contextWindow: 4096,
        requestTokens: 5120,
        promptTokens: 5120,
      });
    });

    it('reads "your prompt contains at least M input tokens"', () => {
      const error = clientError(400, {
        error: {
          message:
            "This model's maximum context length is 2048 tokens. However, your prompt contains at least 2049 input tokens. Please reduce the length of the messages.",
          type: 'BadRequestError',
          code: 400,
        },
      });
      expect(readContextOverflow(error)).toMatchObject({ source: 'vllm', contextWindow: 2048, promptTokens: 2049 });
    });

    it('reads "you requested M tokens in the messages" (no max_tokens sent)', () => {
      const error = clientError(400, {
        error: {
          message:
            "This model's maximum context length is 8192 tokens. However, you requested 8300 tokens in the messages, Please reduce the length of the messages.",
          type: 'BadRequestError',
          code: 400,
        },
      });
      expect(readContextOverflow(error)).toEqual({
        source: 'vllm',
        contextWindow: 8192,
        requestTokens: 8300,
        promptTokens: 8300,
      });
    });

    it('reads a max_tokens too large for what the prompt leaves', () => {
      const error = clientError(400, {
        error: {
          message:
            "'max_tokens' or 'max_completion_tokens' is too large: 3000. This model's maximum context length is 4096 tokens and your request has 2500 input tokens (3000 > 4096 - 2500). None",
          type: 'BadRequestError',
          param: null,
          code: 400,
        },
      });
      expect(readContextOverflow(error)).toEqual({
        source: 'vllm',
        contextWindow: 4096,
        requestTokens: 5500,
        promptTokens: 2500,
        completionTokens: 3000,
      });
    });

    it('reads the engine\'s "decoder prompt is longer than the maximum model length"', () => {
      const error = clientError(400, {
        error: {
          message:
            'The decoder prompt (length 9000) is longer than the maximum model length of 8192. Make sure that `max_model_len` is no smaller than the number of text tokens.',
          type: 'BadRequestError',
          code: 400,
        },
      });
      expect(readContextOverflow(error)).toEqual({
        source: 'vllm',
        contextWindow: 8192,
        requestTokens: 9000,
        promptTokens: 9000,
      });
    });

    it('reads a top-level error body handed in as { status, body }', () => {
      const body = {
        object: 'error',
        message:
          "This model's maximum context length is 4096 tokens. However, you requested 4500 tokens (4000 in the messages, 500 in the completion). Please reduce the length of the messages or completion.",
        type: 'BadRequestError',
        param: null,
        code: 400,
      };
      expect(readContextOverflow({ status: 400, body })).toMatchObject({
        source: 'vllm',
        contextWindow: 4096,
        requestTokens: 4500,
      });
      // openai-node drops such a body: its error says nothing a reader could use.
      expect(readContextOverflow(clientError(400, body))).toBeUndefined();
    });
  });

  describe('Ollama', () => {
    it('recognizes the chat answer with context shift off, through its OpenAI layer', () => {
      const error = clientError(400, {
        error: {
          message:
            'the prompt is longer than the context length currently available to the model; shorten the prompt, adjust the context length in settings, or use a model with a longer context length',
          type: 'invalid_request_error',
        },
      });
      expect(readContextOverflow(error)).toEqual({ source: 'ollama' });
    });

    it('recognizes the embeddings answer of its native API (a string error)', () => {
      const error = clientError(400, { error: 'the input length exceeds the context length' });
      expect(readContextOverflow(error)).toEqual({ source: 'ollama' });
    });
  });

  describe('Anthropic (prompt is too long)', () => {
    it('reads the prompt and the maximum', () => {
      const error = clientError(400, {
        type: 'error',
        error: { type: 'invalid_request_error', message: 'prompt is too long: 210500 tokens > 200000 maximum' },
        request_id: 'req_test',
      });
      expect(readContextOverflow(error)).toEqual({
        source: 'anthropic',
        contextWindow: 200000,
        requestTokens: 210500,
        promptTokens: 210500,
      });
    });
  });

  describe('what wraps the client error', () => {
    it('follows a SummarizerError to its cause', () => {
      const cause = clientError(400, {
        error: {
          message: 'request (50000 tokens) exceeds the available context size (8192 tokens), try increasing it',
          type: 'exceed_context_size_error',
          n_prompt_tokens: 50000,
          n_ctx: 8192,
        },
      });
      const wrapped = new SummarizerError(`summarizer: HTTP ${cause.message}`, 'rejected', 400, undefined, { cause });
      expect(readContextOverflow(wrapped)).toMatchObject({ source: 'llama.cpp', contextWindow: 8192 });
    });

    it('follows a bounded number of causes', () => {
      let error: unknown = clientError(400, {
        error: { type: 'exceed_context_size_error', message: 'x', n_ctx: 10, n_prompt_tokens: 11 },
      });
      for (let depth = 0; depth < 4; depth++) error = new Error('wrapped', { cause: error });
      expect(readContextOverflow(error)).toMatchObject({ contextWindow: 10 });
      expect(readContextOverflow(new Error('wrapped', { cause: error }))).toBeUndefined();
    });
  });

  describe('what is not a context overflow', () => {
    it.each([
      [
        'a rate limit',
        clientError(429, { error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } }),
      ],
      [
        "OpenAI's completion limit (a max_tokens above the model's output cap)",
        clientError(400, {
          error: {
            message:
              'max_tokens is too large: 10000. This model supports at most 4096 completion tokens, whereas you provided 10000.',
            type: 'invalid_request_error',
            param: 'max_tokens',
            code: null,
          },
        }),
      ],
      [
        'a bad request of another kind',
        clientError(400, { error: { message: 'Invalid model name', type: 'invalid_request_error' } }),
      ],
      ['a server error without a body', clientError(500, undefined)],
      ['a plain error', new Error('socket hang up')],
      ['a string', 'maximum context length is 10 tokens'],
      ['null', null],
    ])('%s', (_name, error) => {
      expect(readContextOverflow(error)).toBeUndefined();
    });

    it('reads only the start of a huge message', () => {
      const message = `${'x'.repeat(5_000)} prompt is too long: 300000 tokens > 200000 maximum`;
      expect(
        readContextOverflow(clientError(400, { error: { message, type: 'invalid_request_error' } })),
      ).toBeUndefined();
      expect(
        readContextOverflow(
          clientError(400, { error: { message: message.slice(4_000), type: 'invalid_request_error' } }),
        ),
      ).toMatchObject({ source: 'anthropic' });
    });

    it('never throws on a hostile error object', () => {
      const hostile = {
        get error(): never {
          throw new Error('boom');
        },
      };
      expect(readContextOverflow(hostile)).toBeUndefined();
    });
  });

  describe('counts it does not believe', () => {
    it('keeps the overflow and drops a count that is not a sane integer', () => {
      const error = clientError(400, {
        error: {
          type: 'exceed_context_size_error',
          message: 'request exceeds the context',
          n_prompt_tokens: -3,
          n_ctx: 4096.5,
        },
      });
      expect(readContextOverflow(error)).toEqual({ source: 'llama.cpp' });
    });

    it('drops a window of zero and numbers past a billion', () => {
      const error = clientError(400, {
        error: {
          message: 'prompt is too long: 99999999999 tokens > 0 maximum',
          type: 'invalid_request_error',
        },
      });
      expect(readContextOverflow(error)).toEqual({ source: 'anthropic' });
    });
  });
});
