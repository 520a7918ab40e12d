// Node only: metrics through the SDK's Runtime (COMPACTOR_PROMETHEUS_ADDRESS), one Prometheus endpoint
// for the SDK's and ours: workflows add the compaction counters, the activity interceptor here the
// summarizer's latency and our activities' failures by type.
import { CancelledFailure, ApplicationFailure, type MetricMeter } from '@temporalio/common';
import { DefaultLogger, Runtime, type ActivityInterceptorsFactory, type Logger } from '@temporalio/worker';
import { CompactionMetric } from '../core/compaction/telemetry.js';

/** A model writes a summary in seconds to a minute, the offline summarizer in milliseconds. */
export const SUMMARIZER_LATENCY_BUCKETS_MS = [
  10, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 20_000, 30_000, 60_000, 120_000,
];

export interface TelemetryRuntimeOptions {
  /** Serve metrics for Prometheus at `http://<address>/metrics` (e.g. `127.0.0.1:9464`). @default no metrics */
  prometheusAddress?: string;
  /** @default the SDK's (INFO to the console) */
  logger?: Logger;
  /** Signals that shut workers down. @default the SDK's (SIGINT, SIGTERM, SIGQUIT, SIGUSR2) */
  shutdownSignals?: NodeJS.Signals[];
}

export class RuntimeAlreadyInstalledError extends Error {
  override readonly name = 'RuntimeAlreadyInstalledError';
  constructor(options?: { cause?: unknown }) {
    super(
      'COMPACTOR_PROMETHEUS_ADDRESS: the Temporal SDK Runtime of this process was created before the metrics endpoint could be configured; create workers and connections after installTelemetryRuntime(), or pass telemetryOptions.metrics to your own Runtime.install()',
      options,
    );
  }
}

/** Installs the SDK's Runtime with the metrics endpoint, once, before the first connection or worker. */
export function installTelemetryRuntime({
  prometheusAddress,
  logger,
  shutdownSignals,
}: TelemetryRuntimeOptions): Runtime {
  // Keyed by the plain name: the SDK's `temporal_` prefix is for its own metrics only, ours keep their names.
  const histogramBucketOverrides = { [CompactionMetric.SummarizerLatency]: SUMMARIZER_LATENCY_BUCKETS_MS };
  const prometheus = (bindAddress: string) => ({ prometheus: { bindAddress, histogramBucketOverrides } });
  try {
    return Runtime.install({
      ...(logger === undefined ? {} : { logger }),
      ...(shutdownSignals === undefined ? {} : { shutdownSignals }),
      ...(prometheusAddress === undefined ? {} : { telemetryOptions: { metrics: prometheus(prometheusAddress) } }),
    });
  } catch (error) {
    if (prometheusAddress !== undefined) throw new RuntimeAlreadyInstalledError({ cause: error });
    throw error;
  }
}

/** The SDK's own logs at WARN (the demo's, the CLI's one-off worker's). */
export function installQuietTelemetryRuntime(prometheusAddress: string | undefined): Runtime {
  return installTelemetryRuntime({ prometheusAddress, logger: new DefaultLogger('WARN'), shutdownSignals: [] });
}

function failureType(error: unknown): string {
  if (error instanceof ApplicationFailure) return error.type ?? 'ApplicationFailure';
  return error instanceof Error ? error.name : 'Error';
}

/** Records failed attempts of `activityTypes` by failure type (not cancellations), and every `summarize` attempt's latency. */
export function activityMetricsInterceptor(activityTypes: ReadonlySet<string>): ActivityInterceptorsFactory {
  return (ctx) => {
    const activityType = ctx.info.activityType;
    if (!activityTypes.has(activityType)) return {};
    const meter: MetricMeter = ctx.metricMeter;
    return {
      inbound: {
        async execute(input, next) {
          const started = performance.now();
          const latency = (outcome: string): void => {
            if (activityType !== 'summarize') return;
            meter
              .createHistogram(CompactionMetric.SummarizerLatency, 'float', 'ms', 'Summarize attempts, by outcome')
              .record(performance.now() - started, { outcome });
          };
          try {
            const output = await next(input);
            latency('ok');
            return output;
          } catch (error) {
            if (!(error instanceof CancelledFailure) && !ctx.cancellationSignal.aborted) {
              const type = failureType(error);
              const description = 'Failed attempts of our activities, by failure type';
              meter.createCounter(CompactionMetric.ActivityFailures, 'attempts', description).add(1, { type });
              latency(type);
            }
            throw error;
          }
        },
      },
    };
  };
}
