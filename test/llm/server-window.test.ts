// The window a server states up front: the parsers on bodies of the documented shapes (llama.cpp's
// /props and /v1/models, vLLM's /v1/models; sources in scripts/server-window.ts), and
// fetchServerContextWindow against a local HTTP server on 127.0.0.1 that answers as each would.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  contextWindowFromModels,
  contextWindowFromProps,
  fetchServerContextWindow,
} from '../../scripts/server-window.js';

const llamaCppProps = {
  default_generation_settings: { params: { temperature: 0.8 }, n_ctx: 8192 },
  total_slots: 1,
  model_alias: 'SmolLM2-135M-Instruct.Q4_1.gguf',
  chat_template: '{{ messages }}',
};
const llamaCppModels = {
  object: 'list',
  data: [
    {
      id: 'SmolLM2-135M-Instruct.Q4_1.gguf',
      object: 'model',
      owned_by: 'llamacpp',
      meta: { n_ctx: 8192, n_ctx_train: 8192 },
    },
  ],
};
const vllmModels = {
  object: 'list',
  data: [
    { id: 'small', object: 'model', owned_by: 'vllm', root: 'org/small', max_model_len: 4096, permission: [] },
    { id: 'large', object: 'model', owned_by: 'vllm', root: 'org/large', max_model_len: 32768, permission: [] },
  ],
};

describe('contextWindowFromProps', () => {
  it('reads default_generation_settings.n_ctx', () => {
    expect(contextWindowFromProps(llamaCppProps)).toEqual({ contextWindow: 8192, source: 'llama.cpp /props' });
  });

  it.each([
    ['no settings', { total_slots: 1 }],
    ['a window of zero', { default_generation_settings: { n_ctx: 0 } }],
    ['a fractional window', { default_generation_settings: { n_ctx: 8192.5 } }],
    ['a string window', { default_generation_settings: { n_ctx: '8192' } }],
    ['an array', [llamaCppProps]],
    ['null', null],
  ])('states none for %s', (_name, body) => {
    expect(contextWindowFromProps(body)).toBeUndefined();
  });
});

describe('contextWindowFromModels', () => {
  it("reads vLLM's max_model_len of the named model", () => {
    expect(contextWindowFromModels(vllmModels, 'large')).toEqual({ contextWindow: 32768, source: 'vLLM /v1/models' });
    expect(contextWindowFromModels(vllmModels, 'small')).toEqual({ contextWindow: 4096, source: 'vLLM /v1/models' });
  });

  it("reads llama.cpp's meta.n_ctx of its only model, whatever the name asked for", () => {
    expect(contextWindowFromModels(llamaCppModels, 'any-name')).toEqual({
      contextWindow: 8192,
      source: 'llama.cpp /v1/models',
    });
    expect(contextWindowFromModels(llamaCppModels)).toEqual({ contextWindow: 8192, source: 'llama.cpp /v1/models' });
  });

  it('states none when several models are listed and none is the one named', () => {
    expect(contextWindowFromModels(vllmModels, 'other')).toBeUndefined();
    expect(contextWindowFromModels(vllmModels)).toBeUndefined();
  });

  it("states none for OpenAI's model list, which has no window", () => {
    expect(
      contextWindowFromModels(
        { object: 'list', data: [{ id: 'gpt-4o', object: 'model', owned_by: 'system' }] },
        'gpt-4o',
      ),
    ).toBeUndefined();
  });
});

describe('fetchServerContextWindow', () => {
  let server: Server | undefined;
  const seen: { url: string; authorization: string | undefined }[] = [];

  afterEach(async () => {
    seen.length = 0;
    await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
    server = undefined;
  });

  /** Serves `answer(path)` on 127.0.0.1 and resolves to the OpenAI base URL (`.../v1`). */
  async function serve(answer: (path: string) => { status: number; body: string }): Promise<string> {
    server = createServer((request: IncomingMessage, response: ServerResponse) => {
      seen.push({ url: request.url ?? '', authorization: request.headers.authorization });
      const { status, body } = answer(request.url ?? '');
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(body);
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('the test server has no TCP address');
    const { port }: AddressInfo = address;
    return `http://127.0.0.1:${port}/v1`;
  }

  it("reads llama.cpp's /props at the server's root, with the key", async () => {
    const baseURL = await serve((path) =>
      path === '/props' ? { status: 200, body: JSON.stringify(llamaCppProps) } : { status: 404, body: '{}' },
    );
    await expect(fetchServerContextWindow({ baseURL, apiKey: 'k' })).resolves.toEqual({
      contextWindow: 8192,
      source: 'llama.cpp /props',
    });
    expect(seen).toEqual([{ url: '/props', authorization: 'Bearer k' }]);
  });

  it("falls back to vLLM's /v1/models when there is no /props", async () => {
    const baseURL = await serve((path) =>
      path === '/v1/models'
        ? { status: 200, body: JSON.stringify(vllmModels) }
        : { status: 404, body: '{"detail":"Not Found"}' },
    );
    await expect(fetchServerContextWindow({ baseURL: `${baseURL}/`, model: 'large' })).resolves.toEqual({
      contextWindow: 32768,
      source: 'vLLM /v1/models',
    });
    expect(seen.map((request) => request.url)).toEqual(['/props', '/v1/models']);
  });

  it('states none when neither endpoint states a window', async () => {
    const baseURL = await serve(() => ({ status: 200, body: 'not json' }));
    await expect(fetchServerContextWindow({ baseURL })).resolves.toBeUndefined();
  });

  it('does not read a body over 1 MiB', async () => {
    const padded = JSON.stringify({ ...llamaCppProps, chat_template: 'x'.repeat(1024 * 1024) });
    const baseURL = await serve((path) =>
      path === '/props' ? { status: 200, body: padded } : { status: 404, body: '' },
    );
    await expect(fetchServerContextWindow({ baseURL })).resolves.toBeUndefined();
  });

  it('rejects when the server cannot be reached', async () => {
    const baseURL = await serve(() => ({ status: 200, body: '{}' }));
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    server = undefined;
    await expect(fetchServerContextWindow({ baseURL, timeoutMs: 5_000 })).rejects.toThrow();
  });
});
