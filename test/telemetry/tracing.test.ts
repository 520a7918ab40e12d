// Tracing configuration without a server: what compactorPlugin adds with tracing off and on, the
// refusal of a prebuilt bundle without the tracing interceptors, the OTLP exporter against a local
// receiver, and the stderr exporter's lines.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ClientOptions } from '@temporalio/client';
import type { WorkerOptions } from '@temporalio/worker';
import { describe, expect, it, vi } from 'vitest';
import { compactorPlugin, createExtractiveSummarizer, loadConfig } from '../../src/index.js';
import { ConfigError } from '../../src/config.js';
import { createTracing, tracingWorkflowInterceptorModules, StderrSpanExporter } from '../../src/telemetry/tracing.js';

const config = loadConfig({ env: {} });
/** A user's own workflows module: the plugin bundles ours beside it. */
const USER_WORKFLOWS = fileURLToPath(new URL('../fixtures/user-worker/workflows.ts', import.meta.url));
const baseOptions = { taskQueue: 'q', workflowsPath: USER_WORKFLOWS } as WorkerOptions;

function otelWorkflowModules(options: WorkerOptions): string[] {
  return (options.interceptors?.workflowModules ?? []).filter((path) => path.includes('interceptors-opentelemetry'));
}

describe('compactorPlugin tracing options', () => {
  it('off: no tracing interceptor, sink or client interceptor is added', () => {
    const plugin = compactorPlugin({ config, summarizer: createExtractiveSummarizer(), tracing: 'off' });
    expect(plugin.tracing).toBeUndefined();
    const worker = plugin.configureWorker(baseOptions);
    expect(otelWorkflowModules(worker)).toEqual([]);
    expect(worker.sinks ?? {}).not.toHaveProperty('exporter');
    expect(worker.interceptors?.activity ?? []).toEqual([]);
    expect(
      (plugin.configureClient({} as ClientOptions).interceptors as { workflow?: unknown[] } | undefined)?.workflow ??
        [],
    ).toEqual([]);
  });

  it('on: the OpenTelemetry workflow interceptors, the span sink, activity and client interceptors', () => {
    const plugin = compactorPlugin({
      config,
      summarizer: createExtractiveSummarizer(),
      tracing: { spanProcessor: new SimpleSpanProcessor(new InMemorySpanExporter()) },
    });
    const worker = plugin.configureWorker(baseOptions);
    expect(otelWorkflowModules(worker)).toHaveLength(1);
    expect(worker.sinks).toHaveProperty('exporter');
    expect(worker.interceptors?.activity?.length).toBeGreaterThanOrEqual(1);
    expect(
      (plugin.configureClient({} as ClientOptions).interceptors as { workflow?: unknown[] } | undefined)?.workflow
        ?.length,
    ).toBe(1);
  });

  it('on, with a prebuilt bundle that lacks the tracing interceptors: refused at Worker.create, saying which bundle to use', () => {
    const plugin = compactorPlugin({
      config,
      summarizer: createExtractiveSummarizer(),
      tracing: { spanProcessor: new SimpleSpanProcessor(new InMemorySpanExporter()) },
    });
    expect(() => plugin.configureWorker({ taskQueue: 'q', workflowBundle: { code: 'var plain = 1;' } })).toThrow(
      /temporal-compactor bundle --tracing/,
    );
    // A bundle made with the interceptor module passes.
    const traced = { code: `// ${tracingWorkflowInterceptorModules()[0]}` };
    expect(plugin.configureWorker({ taskQueue: 'q', workflowBundle: traced }).workflowBundle).toEqual(traced);
  });
});

describe('createTracing exporters', () => {
  it('otlp: spans go over OTLP/HTTP (protobuf) to OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces with our service name', async () => {
    const received: Array<{ url: string; type: string; body: Buffer }> = [];
    const server = createServer((request: IncomingMessage, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        received.push({
          url: request.url ?? '',
          type: request.headers['content-type'] ?? '',
          body: Buffer.concat(chunks),
        });
        response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const tracing = createTracing('otlp', { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint });
      if (tracing === undefined) throw new Error('tracing is off');
      expect(tracing.describe).toBe(`OTLP/HTTP to ${endpoint}/v1/traces`);
      const tracer = tracing.plugin.otelOptions.tracer;
      if (tracer === undefined) throw new Error('no tracer');
      tracer.startSpan('a-test-span').end();
      await tracing.flush();
      expect(received.map(({ url, type }) => ({ url, type }))).toEqual([
        { url: '/v1/traces', type: 'application/x-protobuf' },
      ]);
      const body = received[0]?.body.toString('latin1') ?? '';
      expect(body).toContain('a-test-span');
      expect(body).toContain('temporal-compactor');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('otlp with no collector listening: spans are dropped and flushing still ends (a worker stops as usual)', async () => {
    // A port that was just free: nothing listens there.
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    await new Promise((resolve) => server.close(resolve));
    const tracing = createTracing('otlp', { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}` });
    const tracer = tracing?.plugin.otelOptions.tracer;
    if (tracing === undefined || tracer === undefined) throw new Error('no tracer');
    tracer.startSpan('lost').end();
    const errors = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    try {
      await expect(tracing.flush()).resolves.toBeUndefined();
      expect(errors.mock.calls.map((call) => String(call[0]))).toEqual([
        expect.stringMatching(
          new RegExp(
            `^temporal-compactor: tracing \\(OTLP/HTTP to http://127\\.0\\.0\\.1:${port}/v1/traces\\): spans not exported: `,
          ),
        ),
      ]);
    } finally {
      errors.mockRestore();
    }
  });

  it('otlp refuses an OTLP protocol it does not speak, naming the variable', () => {
    expect(() => createTracing('otlp', { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(ConfigError);
    expect(() => createTracing('otlp', { OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' })).toThrow(
      /OTEL_EXPORTER_OTLP_TRACES_PROTOCOL/,
    );
  });

  it('console: one JSON line per span with its name, ids, parent and attributes', async () => {
    const lines: string[] = [];
    const tracing = createTracing({
      spanProcessor: new SimpleSpanProcessor(new StderrSpanExporter((line) => lines.push(line))),
    });
    const tracer = tracing?.plugin.otelOptions.tracer;
    if (tracer === undefined) throw new Error('no tracer');
    const parent = tracer.startSpan('parent');
    parent.setAttribute('compaction.dropped', 3);
    parent.end();
    await tracing?.flush();
    expect(lines).toHaveLength(1);
    expect(lines[0]?.endsWith('\n')).toBe(true);
    expect(JSON.parse(lines[0] ?? '')).toMatchObject({
      span: 'parent',
      traceId: parent.spanContext().traceId,
      spanId: parent.spanContext().spanId,
      status: 'UNSET',
      attributes: { 'compaction.dropped': 3 },
    });
  });
});
