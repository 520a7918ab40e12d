// Node only: opt-in OpenTelemetry tracing (COMPACTOR_TRACING) through the SDK's OpenTelemetry plugin:
// interceptors, and the sink that carries the sandbox's spans (`Compaction` among them) to the same
// span processor. Its packages are optional peers, loaded only when tracing is on.
import { context, propagation, SpanStatusCode } from '@opentelemetry/api';
import type * as ContextAsyncHooks from '@opentelemetry/context-async-hooks';
import type * as Core from '@opentelemetry/core';
import type { ExportResult } from '@opentelemetry/core';
import type * as OtlpExporter from '@opentelemetry/exporter-trace-otlp-proto';
import type * as Resources from '@opentelemetry/resources';
import type { Resource } from '@opentelemetry/resources';
import type * as TraceBase from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type * as TemporalOtel from '@temporalio/interceptors-opentelemetry';
import type { OpenTelemetryPlugin } from '@temporalio/interceptors-opentelemetry';
import { ConfigError, type TracingSettingValue } from '../config.js';
import { redactUrls } from '../redact.js';
import { assertPeersInstalled, requirePeer, resolvePeer } from '../peer-packages.js';

/** The optional peers tracing needs (`@opentelemetry/api` is a dependency: workflow code makes spans with it). */
const TRACING_PEERS = [
  '@temporalio/interceptors-opentelemetry',
  '@opentelemetry/sdk-trace-base',
  '@opentelemetry/resources',
  '@opentelemetry/core',
  '@opentelemetry/context-async-hooks',
];
const OTLP_PEER = '@opentelemetry/exporter-trace-otlp-proto';

/** For the message of a missing package. */
function settingOf(option: TracingOption): string {
  return typeof option === 'string'
    ? `COMPACTOR_TRACING=${option} (or tracing: '${option}')`
    : 'tracing: { spanProcessor }';
}

function tracingModules(setting: string, peers: readonly string[]) {
  assertPeersInstalled(peers, setting);
  return {
    temporal: requirePeer<typeof TemporalOtel>('@temporalio/interceptors-opentelemetry', setting),
    traceBase: requirePeer<typeof TraceBase>('@opentelemetry/sdk-trace-base', setting),
    resources: requirePeer<typeof Resources>('@opentelemetry/resources', setting),
    core: requirePeer<typeof Core>('@opentelemetry/core', setting),
    contextAsyncHooks: requirePeer<typeof ContextAsyncHooks>('@opentelemetry/context-async-hooks', setting),
  };
}

export interface CompactorTracingOptions {
  /** Gets every finished span: the client's, the activities' and, through a sink, the workflows'. */
  spanProcessor: SpanProcessor;
  /** @default service.name `temporal-compactor`, overridden by OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES */
  resource?: Resource;
}

/**
 * `otlp` (OTLP/HTTP protobuf to the `OTEL_EXPORTER_OTLP_*` endpoint), `console` (a JSON line per span on
 * stderr), your own span processor, or tracing {@link createTracing} made (shared by several workers).
 */
export type TracingOption = TracingSettingValue | CompactorTracingOptions | CompactorTracing;

export interface CompactorTracing {
  plugin: OpenTelemetryPlugin;
  /** Exports every finished span (before a short-lived process exits); a failure is reported on stderr. */
  flush(): Promise<void>;
  /** Where spans go. */
  describe: string;
}

/** The workflow interceptor module a prebuilt bundle needs for workflow spans. */
export function tracingWorkflowInterceptorModules(): string[] {
  return [
    resolvePeer(
      '@temporalio/interceptors-opentelemetry/lib/workflow-interceptors',
      '@temporalio/interceptors-opentelemetry',
      'a workflow bundle with tracing (COMPACTOR_TRACING)',
    ),
  ];
}

export function bundleHasTracing(code: string): boolean {
  return /interceptors-opentelemetry[\\/]lib[\\/]workflow-interceptors/.test(code);
}

/** Our service name, then what OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES say. */
function tracingResource({ Resource, envDetectorSync }: typeof Resources): Resource {
  return Resource.default()
    .merge(new Resource({ 'service.name': 'temporal-compactor' }))
    .merge(envDetectorSync.detect());
}

/** Where `otlp` sends spans, as the OTLP exporter reads the standard variables. */
function otlpTracesUrl(env: Readonly<Record<string, string | undefined>>): string {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return traces;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  return base ? `${base.replace(/\/+$/, '')}/v1/traces` : 'http://localhost:4318/v1/traces';
}

/** The exporter speaks http/protobuf only: another protocol is a configuration error, not silence. */
function checkOtlpProtocol(env: Readonly<Record<string, string | undefined>>): void {
  const name = ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL'].find((each) => env[each]?.trim());
  const value = name === undefined ? undefined : env[name]?.trim();
  if (name !== undefined && value !== 'http/protobuf')
    throw new ConfigError(name, '"http/protobuf", the OTLP protocol COMPACTOR_TRACING=otlp speaks', value);
}

/** Each finished span as one JSON line on stderr, so a CLI's stdout stays clean. */
export class StderrSpanExporter implements SpanExporter {
  constructor(private readonly write: (line: string) => void = (line) => process.stderr.write(line)) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    for (const span of spans) {
      const scalars = Object.entries(span.attributes).filter(([, value]) =>
        ['string', 'number', 'boolean'].includes(typeof value),
      );
      const { traceId, spanId } = span.spanContext();
      const { code, message } = span.status;
      const line = {
        span: span.name,
        traceId,
        spanId,
        ...(span.parentSpanId === undefined ? {} : { parentSpanId: span.parentSpanId }),
        ms: Math.round((span.duration[0] * 1000 + span.duration[1] / 1e6) * 1000) / 1000,
        status: code === SpanStatusCode.ERROR && message !== undefined ? `ERROR: ${message}` : SpanStatusCode[code],
        attributes: Object.fromEntries(scalars),
      };
      this.write(`${JSON.stringify(line)}\n`);
    }
    const { ExportResultCode } = requirePeer<typeof Core>('@opentelemetry/core', settingOf('console'), TRACING_PEERS);
    done({ code: ExportResultCode.SUCCESS });
  }

  async shutdown(): Promise<void> {}
}

/** With a tracer of its own: the global provider is left alone. */
export function createTracing(
  option: TracingOption,
  env: Readonly<Record<string, string | undefined>> = process.env,
): CompactorTracing | undefined {
  if (option === 'off') return undefined;
  if (typeof option === 'object' && 'plugin' in option) return option;
  const setting = settingOf(option);
  const modules = tracingModules(setting, option === 'otlp' ? [...TRACING_PEERS, OTLP_PEER] : TRACING_PEERS);
  const { BasicTracerProvider, BatchSpanProcessor, SimpleSpanProcessor } = modules.traceBase;
  let spanProcessor: SpanProcessor;
  let describe: string;
  if (option === 'otlp') {
    checkOtlpProtocol(env);
    const { OTLPTraceExporter } = requirePeer<typeof OtlpExporter>(OTLP_PEER, setting);
    // Batched: a worker exports in the background, never on an activity's or a workflow task's path.
    spanProcessor = new BatchSpanProcessor(new OTLPTraceExporter({ url: otlpTracesUrl(env) }));
    // Printed at start-up and in export errors: never with a password or a key the URL might carry.
    describe = `OTLP/HTTP to ${redactUrls(otlpTracesUrl(env))}`;
  } else if (option === 'console') {
    spanProcessor = new SimpleSpanProcessor(new StderrSpanExporter());
    describe = 'spans as JSON lines on stderr';
  } else {
    spanProcessor = option.spanProcessor;
    describe = 'to the given span processor';
  }
  const resource = (typeof option === 'object' ? option.resource : undefined) ?? tracingResource(modules.resources);
  // The SDK's interceptors propagate trace headers through the global API, so without a context manager
  // and a propagator activity spans would lose their parents; a process's own are kept.
  propagation.setGlobalPropagator(new modules.core.W3CTraceContextPropagator());
  const manager = new modules.contextAsyncHooks.AsyncLocalStorageContextManager().enable();
  if (!context.setGlobalContextManager(manager)) manager.disable();
  const provider = new BasicTracerProvider({ resource, spanProcessors: [spanProcessor] });
  const plugin = new modules.temporal.OpenTelemetryPlugin({
    resource,
    spanProcessor,
    tracer: provider.getTracer('temporal-compactor'),
  });
  // A collector that is down must not turn a worker's clean stop into a failure: say so and go on.
  const flush = () =>
    provider.forceFlush().catch((error: unknown) => {
      console.error(
        `temporal-compactor: tracing (${describe}): spans not exported: ${redactUrls(error instanceof Error ? error.message : String(error))}`,
      );
    });
  return { plugin, flush, describe };
}
