// Metrics for operators on the dev server: the SDK's Runtime serves a Prometheus endpoint on a free
// 127.0.0.1 port (installTelemetryRuntime, COMPACTOR_PROMETHEUS_ADDRESS), compactorPlugin() adds
// our activity metrics, the workflows count their compactions; the test scrapes the endpoint and
// reads the values back. The Compaction spans of the same runs show the summarizer's attempts.
import { createServer } from 'node:net';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { SpanStatusCode } from '@opentelemetry/api';
import { Client, WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { DefaultLogger, Worker } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { compactConversation, compactorPlugin, installTelemetryRuntime, loadConfig } from '../../src/index.js';
import { RuntimeAlreadyInstalledError, SUMMARIZER_LATENCY_BUCKETS_MS } from '../../src/telemetry/metrics.js';
import {
  COMPACTION_SPAN_NAME,
  CompactionMetric,
  CompactionSpanAttribute,
} from '../../src/core/compaction/telemetry.js';
import { SummarizerError } from '../../src/core/errors.js';
import { scriptedSummarizer, toolRounds } from '../support/messages.js';
import { testConnection, uniqueId, type TestConnection } from '../support/temporal.js';

/** A port that was free a moment ago on 127.0.0.1 (the SDK's exporter cannot say which port 0 got). */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition (`name{label="value",...} number`). */
function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line);
    if (match === null) continue;
    const [, name = '', labelText = '', value = ''] = match;
    const labels: Record<string, string> = {};
    for (const [, key = '', raw = ''] of labelText.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[key] = raw;
    samples.push({ name, labels, value: Number(value) });
  }
  return samples;
}

/** The sum of the samples named `name` whose labels include `labels`. */
function valueOf(samples: readonly Sample[], name: string, labels: Record<string, string>): number {
  return samples
    .filter(
      (sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
    )
    .reduce((sum, sample) => sum + sample.value, 0);
}

describe('metrics for operators (COMPACTOR_PROMETHEUS_ADDRESS)', { timeout: 240_000 }, () => {
  let t: TestConnection;
  let endpoint: string;
  beforeAll(async () => {
    const port = await freePort();
    // Before this file opens any connection: the Runtime is created once per process.
    installTelemetryRuntime({
      prometheusAddress: `127.0.0.1:${port}`,
      logger: new DefaultLogger('WARN'),
      shutdownSignals: [],
    });
    endpoint = `http://127.0.0.1:${port}/metrics`;
    t = await testConnection();
  });

  it('a second Runtime cannot be installed with a metrics endpoint, and says how to fix it', () => {
    expect(() => installTelemetryRuntime({ prometheusAddress: '127.0.0.1:1' })).toThrow(RuntimeAlreadyInstalledError);
  });

  it('counts compactions by result, tokens reclaimed, fallbacks, failed compactions, summarize latency by outcome and failed attempts by type', async () => {
    // The first compaction's summarizer fails once (retried, then a summary); the second's refuses (the hard trim).
    const summarizer = scriptedSummarizer(
      new SummarizerError('the backend is overloaded', 'transient', 503),
      '## Goals\nFix the bug.',
      new SummarizerError('the prompt is refused', 'rejected', 400),
    );
    const exporter = new InMemorySpanExporter();
    const plugin = compactorPlugin({
      config: loadConfig({ env: {} }),
      summarizer,
      searchAttributes: 'skip',
      tracing: { spanProcessor: new SimpleSpanProcessor(exporter) },
    });
    const worker = await Worker.create({
      connection: t.nativeConnection,
      namespace: t.namespace,
      taskQueue: t.taskQueue,
      plugins: [plugin],
    });
    const client = new Client({ connection: t.connection, namespace: t.namespace, plugins: [plugin] });
    const messages = toolRounds(12, 600);
    const options = { contextBudget: 1_500, keepRecent: 2, retryBackoff: 1 };
    const results = await worker.runUntil(async () => {
      const run = () =>
        client.workflow.execute(compactConversation, {
          taskQueue: t.taskQueue,
          workflowId: uniqueId('metrics-compact'),
          args: [{ messages, options }],
        });
      const done = [await run(), await run()];
      // A third with a budget no compaction can use: Compaction.InvalidInput, counted and the span marked.
      const refused = await client.workflow
        .execute(compactConversation, {
          taskQueue: t.taskQueue,
          workflowId: uniqueId('metrics-invalid'),
          args: [{ messages, options: { contextBudget: -1 } }],
        })
        .then(
          () => 'completed',
          (error: unknown) =>
            error instanceof WorkflowFailedError && error.cause instanceof ApplicationFailure
              ? error.cause.type
              : String(error),
        );
      expect(refused).toBe('Compaction.InvalidInput');
      return done;
    });
    const [summarized, trimmed] = results;
    if (summarized === undefined || trimmed === undefined) throw new Error('unreachable');
    expect(summarized).toMatchObject({ fallback: false, summary: expect.stringContaining('Fix the bug.') });
    expect(trimmed).toMatchObject({ fallback: true, summary: null });
    expect(summarizer.requests).toHaveLength(3);

    // The SDK tags ours like its own: namespace, taskQueue, and workflowType or activityType.
    const queue = { taskQueue: t.taskQueue };
    const expected: Array<[metric: string, labels: Record<string, string>, value: number]> = [
      [CompactionMetric.Compactions, { ...queue, result: 'summary', workflowType: 'compactConversation' }, 1],
      [CompactionMetric.Compactions, { ...queue, result: 'trim' }, 1],
      [
        CompactionMetric.TokensReclaimed,
        queue,
        summarized.tokensBefore - summarized.tokensAfter + (trimmed.tokensBefore - trimmed.tokensAfter),
      ],
      [CompactionMetric.Fallbacks, queue, 1],
      [CompactionMetric.Exhausted, queue, 0],
      [CompactionMetric.CompactionFailures, { ...queue, type: 'Compaction.InvalidInput' }, 1],
      [`${CompactionMetric.SummarizerLatency}_count`, { ...queue, outcome: 'ok', activityType: 'summarize' }, 1],
      [`${CompactionMetric.SummarizerLatency}_count`, { ...queue, outcome: 'Summarizer.Transient' }, 1],
      [`${CompactionMetric.SummarizerLatency}_count`, { ...queue, outcome: 'Summarizer.Rejected' }, 1],
      [CompactionMetric.ActivityFailures, { ...queue, type: 'Summarizer.Transient', activityType: 'summarize' }, 1],
      [CompactionMetric.ActivityFailures, { ...queue, type: 'Summarizer.Rejected' }, 1],
    ];
    const read = (samples: readonly Sample[]) => expected.map(([metric, labels]) => valueOf(samples, metric, labels));
    // Workflow metrics reach the exporter after the workflow task completes: scrape until they are all there.
    let samples: Sample[] = [];
    for (let scrape = 0; scrape < 50; scrape += 1) {
      samples = parseExposition(await (await fetch(endpoint)).text());
      if (read(samples).every((value, index) => value === expected[index]?.[2])) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(
      Object.fromEntries(
        expected.map(([metric, labels], index) => [`${metric} ${JSON.stringify(labels)}`, read(samples)[index]]),
      ),
    ).toEqual(
      Object.fromEntries(expected.map(([metric, labels, value]) => [`${metric} ${JSON.stringify(labels)}`, value])),
    );
    // The latency histogram has our buckets (a model answers in seconds), not the SDK's defaults.
    const bounds = samples
      .filter(
        (sample) => sample.name === `${CompactionMetric.SummarizerLatency}_bucket` && sample.labels.outcome === 'ok',
      )
      .map((sample) => sample.labels.le);
    expect(bounds).toEqual([...SUMMARIZER_LATENCY_BUCKETS_MS.map(String), '+Inf']);

    // The same runs' Compaction spans: one request, two attempts for the summary; one refused request for the trim.
    await plugin.flushTracing();
    const all = exporter.getFinishedSpans();
    const spans = all.filter((span) => span.name === COMPACTION_SPAN_NAME);
    expect(spans.map((span) => span.status.code)).toEqual([
      SpanStatusCode.UNSET,
      SpanStatusCode.UNSET,
      SpanStatusCode.ERROR,
    ]);
    expect(spans[2]?.status.message).toMatch(/options\.contextBudget/);
    expect(spans.map((span) => span.attributes)).toEqual([
      expect.objectContaining({
        [CompactionSpanAttribute.Result]: 'summary',
        [CompactionSpanAttribute.SummarizerRequests]: 1,
        [CompactionSpanAttribute.SummarizerAttempts]: 2,
        [CompactionSpanAttribute.Fallback]: false,
      }),
      expect.objectContaining({
        [CompactionSpanAttribute.Result]: 'trim',
        [CompactionSpanAttribute.SummarizerRequests]: 1,
        [CompactionSpanAttribute.SummarizerAttempts]: 1,
        [CompactionSpanAttribute.Fallback]: true,
      }),
      expect.not.objectContaining({ [CompactionSpanAttribute.Result]: expect.anything() }),
    ]);
    // The retried request is one StartActivity span with a RunActivity span per attempt under it.
    const retried = all.find(
      (span) => span.name === 'StartActivity:summarize' && span.parentSpanId === spans[0]?.spanContext().spanId,
    );
    expect(all.filter((span) => span.parentSpanId === retried?.spanContext().spanId).map((span) => span.name)).toEqual([
      'RunActivity:summarize',
      'RunActivity:summarize',
    ]);
  });
});
