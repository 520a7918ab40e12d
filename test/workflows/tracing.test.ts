// Tracing through compactorPlugin() on the dev server: an in-memory span exporter receives the
// spans of one agentRun (client, workflow, the `Compaction` span, activities), and the test checks
// the tree — names, parent links, the compaction's figures as attributes.
import { Client } from '@temporalio/client';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { bundleWorkflowCode, DefaultLogger, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  agentRun,
  compactorPlugin,
  createExtractiveSummarizer,
  loadConfig,
  type AgentRunResult,
} from '../../src/index.js';
import { compactorWorkflowsPath } from '../../src/worker/workflow-bundling.js';
import { tracingWorkflowInterceptorModules } from '../../src/telemetry/tracing.js';
import { COMPACTION_SPAN_NAME, CompactionSpanAttribute } from '../../src/core/compaction/telemetry.js';
import { openingOf, trajectoryDir } from '../support/agent.js';
import { PRODUCTION_WORKFLOWS_PATH } from '../support/bundle-cache.js';
import { bundleWorkflows, testConnection, uniqueId, type TestConnection } from '../support/temporal.js';

const TRAJECTORY = 'taubench_gpt4o_airline_task2_trial1';

/** The spans of one trace as a tree: each span's children, by parent span id. */
function childrenOf(spans: readonly ReadableSpan[], parent: ReadableSpan): ReadableSpan[] {
  const id = parent.spanContext().spanId;
  return spans.filter((span) => span.parentSpanId === id);
}

function only(spans: readonly ReadableSpan[], name: string): ReadableSpan {
  const found = spans.filter((span) => span.name === name);
  expect(
    found.map((span) => span.name),
    name,
  ).toEqual([name]);
  return found[0] as ReadableSpan;
}

function startOf(span: ReadableSpan): number {
  return span.startTime[0] * 1e9 + span.startTime[1];
}

/** An indented outline of the tree under `root`, for failure messages. */
function outline(spans: readonly ReadableSpan[], root: ReadableSpan, depth = 0): string {
  return [
    `${'  '.repeat(depth)}${root.name}`,
    ...childrenOf(spans, root)
      .sort((a, b) => startOf(a) - startOf(b))
      .map((child) => outline(spans, child, depth + 1)),
  ].join('\n');
}

describe('tracing through compactorPlugin (COMPACTOR_TRACING)', { timeout: 240_000 }, () => {
  let t: TestConnection;
  let bundle: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    t = await testConnection();
    // A prebuilt bundle with the OpenTelemetry workflow interceptors, as `temporal-compactor bundle --tracing otlp` writes one.
    bundle = await bundleWorkflowCode({
      workflowsPath: compactorWorkflowsPath(),
      workflowInterceptorModules: tracingWorkflowInterceptorModules(),
      logger: new DefaultLogger('WARN'),
    });
  });

  it('one agentRun round with a compaction: StartWorkflow → RunWorkflow → Compaction → summarize, and the chat beside it, with the figures as attributes', async () => {
    const exporter = new InMemorySpanExporter();
    const plugin = compactorPlugin({
      config: loadConfig({ env: {} }),
      summarizer: createExtractiveSummarizer(),
      activities: { trajectoryDir: trajectoryDir() },
      searchAttributes: 'skip',
      tracing: { spanProcessor: new SimpleSpanProcessor(exporter) },
    });
    const worker = await Worker.create({
      connection: t.nativeConnection,
      namespace: t.namespace,
      taskQueue: t.taskQueue,
      workflowBundle: bundle,
      plugins: [plugin],
    });
    const client = new Client({ connection: t.connection, namespace: t.namespace, plugins: [plugin] });
    const workflowId = uniqueId('traced-agent');
    // A window small enough that the run compacts (with a summary) before its ninth and last round.
    const result: AgentRunResult = await worker.runUntil(() =>
      client.workflow.execute(agentRun, {
        taskQueue: t.taskQueue,
        workflowId,
        args: [
          {
            messages: openingOf(TRAJECTORY),
            model: { provider: 'replay', trajectory: TRAJECTORY, contextWindow: 4_000, maxOutputTokens: 1000 },
            compaction: { keepRecent: 4 },
            maxRounds: 9,
          },
        ],
      }),
    );
    await plugin.flushTracing();
    const records = result.compactions.recent;
    expect(records.length).toBeGreaterThanOrEqual(1);
    expect(records.some((record) => record.kind === 'summary')).toBe(true);

    const spans = exporter.getFinishedSpans();
    const start = only(spans, 'StartWorkflow:agentRun');
    const traceId = start.spanContext().traceId;
    const trace = spans.filter((span) => span.spanContext().traceId === traceId);
    const run = only(trace, 'RunWorkflow:agentRun');
    const tree = outline(trace, start);
    expect(run.parentSpanId, tree).toBe(start.spanContext().spanId);

    // One Compaction span per compaction, each a child of the workflow's span, in the order they ran.
    const compactions = trace
      .filter((span) => span.name === COMPACTION_SPAN_NAME)
      .sort((a, b) => startOf(a) - startOf(b));
    expect(compactions, tree).toHaveLength(records.length);
    compactions.forEach((span, index) => {
      const record = records[index];
      if (record === undefined) throw new Error('unreachable');
      expect(span.parentSpanId, tree).toBe(run.spanContext().spanId);
      expect(span.attributes).toMatchObject({
        [CompactionSpanAttribute.TokensBefore]: record.tokensBefore,
        [CompactionSpanAttribute.TokensAfter]: record.tokensAfter,
        [CompactionSpanAttribute.Dropped]: record.dropped,
        [CompactionSpanAttribute.Elided]: record.elided,
        [CompactionSpanAttribute.Fallback]: record.fallback,
        [CompactionSpanAttribute.Exhausted]: record.exhausted,
        [CompactionSpanAttribute.Result]: record.kind === 'summary' ? 'summary' : record.fallback ? 'trim' : 'elision',
      });
      // The summarize activity is the compaction's child: scheduled in the workflow, run on the worker.
      const scheduled = childrenOf(trace, span).filter((child) => child.name === 'StartActivity:summarize');
      expect(span.attributes[CompactionSpanAttribute.SummarizerRequests], tree).toBe(scheduled.length);
      if (record.kind === 'summary') {
        expect(scheduled.length, tree).toBeGreaterThanOrEqual(1);
        expect(span.attributes[CompactionSpanAttribute.SummarizerAttempts]).toBe(scheduled.length);
        expect(span.attributes[CompactionSpanAttribute.SummarizerPromptTokens]).toBe(record.summarizerTokens);
      }
      for (const activity of scheduled)
        expect(
          childrenOf(trace, activity).map((child) => child.name),
          tree,
        ).toEqual(['RunActivity:summarize']);
    });

    // The chat activity of every round is the workflow's child, not a compaction's.
    const chats = trace.filter((span) => span.name === 'StartActivity:chat');
    expect(chats, tree).toHaveLength(result.rounds);
    for (const chat of chats) {
      expect(chat.parentSpanId, tree).toBe(run.spanContext().spanId);
      expect(
        childrenOf(trace, chat).map((child) => child.name),
        tree,
      ).toEqual(['RunActivity:chat']);
    }
    // Every summarize activity in the trace hangs under a compaction.
    const compactionIds = new Set(compactions.map((span) => span.spanContext().spanId));
    for (const summarize of trace.filter((span) => span.name === 'StartActivity:summarize'))
      expect(compactionIds.has(summarize.parentSpanId ?? ''), tree).toBe(true);

    // The compaction ran in its round: after the previous round's chat, before its own.
    const chatsInOrder = [...chats].sort((a, b) => startOf(a) - startOf(b));
    const [first] = records;
    const [compaction] = compactions;
    if (first === undefined || compaction === undefined) throw new Error('unreachable');
    const before = chatsInOrder[first.round - 2];
    const own = chatsInOrder[first.round - 1];
    if (before === undefined || own === undefined)
      throw new Error(`no chat spans around round ${first.round}\n${tree}`);
    expect(startOf(compaction)).toBeGreaterThan(startOf(before));
    expect(startOf(compaction)).toBeLessThan(startOf(own));

    // The traced run's history replays with tracing off and on: tracing adds no command.
    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    const untraced = compactorPlugin({
      config: loadConfig({ env: {} }),
      summarizer: createExtractiveSummarizer(),
      tracing: 'off',
    });
    // Off: the production bundle, which a worker without tracing runs (shared by the run's files).
    await Worker.runReplayHistory(
      { workflowBundle: await bundleWorkflows(PRODUCTION_WORKFLOWS_PATH), plugins: [untraced] },
      history,
      workflowId,
    );
    const replayExporter = new InMemorySpanExporter();
    const traced = compactorPlugin({
      config: loadConfig({ env: {} }),
      summarizer: createExtractiveSummarizer(),
      tracing: { spanProcessor: new SimpleSpanProcessor(replayExporter) },
    });
    await Worker.runReplayHistory({ workflowBundle: bundle, plugins: [traced] }, history, workflowId);
    // A replay sends no span again (the SDK's span sink does not run while replaying).
    expect(replayExporter.getFinishedSpans()).toEqual([]);
  });
});
