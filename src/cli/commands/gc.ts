// Node only: `temporal-compactor gc` — removes payload store objects no retained history or schedule claims.
import { Client } from '@temporalio/client';
import { groupDigits } from '../../core/agent/compaction-history.js';
import { configFlagsFromArgs, loadConfig } from '../../config.js';
import {
  collectGarbage,
  DEFAULT_GC_GRACE_MS,
  totalOf,
  type GarbageReport,
  type SweptKind,
  type Tally,
  type TallyByKind,
} from '../../payloads/gc.js';
import { describePayloadStore } from '../../payloads/store-location.js';
import { payloadConverterFromConfig } from '../../payloads/index.js';
import { collectRetainedClaims } from '../../payloads/retained-claims.js';
import { durationFlag, ExitCode, noArguments, UsageError, type CliCommand } from '../command.js';

/** `1,234 (5.6 MB)`. */
function describeTally({ objects, bytes }: Tally): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let unit = 0;
  while (bytes / 1000 ** unit >= 1000 && unit < units.length - 1) unit += 1;
  const size = bytes / 1000 ** unit;
  return `${groupDigits(objects)} (${unit === 0 ? size : size.toFixed(1)} ${units[unit]})`;
}

const KIND_LABELS: Array<[SweptKind, string]> = [
  ['manifest', 'manifests'],
  ['node', 'nodes'],
  ['chunk', 'chunks'],
  ['temporary', 'temporary files'],
];

function describeGarbageReport(report: GarbageReport): string {
  const hours = report.graceMs / 3_600_000;
  const grace = Number.isInteger(hours) ? `${hours}h` : `${Math.round(report.graceMs / 60_000)}m`;
  const removed = report.dryRun ? 'would be removed' : 'removed';
  const columns = [report.reachable, report.young, report.deleted, report.renewed];
  const row = (label: string, tally: (byKind: TallyByKind) => Tally): string =>
    `| ${label} | ${columns.map((byKind) => describeTally(tally(byKind))).join(' | ')} |`;
  return [
    `| objects | reachable (kept) | younger than ${grace} (kept) | ${removed} | renewed meanwhile (kept) |`,
    '|---|--:|--:|--:|--:|',
    ...KIND_LABELS.map(([kind, label]) => row(label, (byKind) => byKind[kind])),
    row('total', totalOf),
  ].join('\n');
}

export const gc: CliCommand = {
  name: 'gc',
  usage: '[--dry-run] [--grace 48h] [--namespace NS]...',
  summary: 'remove payload store objects that no retained workflow history or schedule claims',
  description: [
    'Marks every payload store object that a retained workflow history or a schedule still claims (in the namespaces given, else the configured one), then removes the others older than the grace period. Configure the store as the workers have it (COMPACTOR_PAYLOAD_STORE and the codec keys).',
  ],
  options: {
    'dry-run': { type: 'boolean', help: 'only report what would be removed' },
    grace: { type: 'string', value: 'DURATION', help: 'keep objects younger than this, at least 48h (the default)' },
    namespace: { type: 'string', multiple: true, value: 'NS', help: 'mark from the histories of this namespace' },
  },
  async run(context) {
    noArguments(context);
    const graceMs = durationFlag(context, 'grace', DEFAULT_GC_GRACE_MS, '"48h", "3d" or "90m"');
    if (graceMs < DEFAULT_GC_GRACE_MS)
      throw new UsageError(
        `--grace must be at least 48h: a store refreshes an object it reuses only once it is 24 h old, so anything younger may still be about to be claimed`,
      );
    const dryRun = context.values['dry-run'] === true;
    const config = loadConfig({ env: context.io.env, flags: configFlagsFromArgs(context.values) });
    const { driver, store } = payloadConverterFromConfig(config);
    if (driver === undefined)
      throw new UsageError(
        'gc needs the payload store: set COMPACTOR_PAYLOAD_STORE (and the codec keys) as the workers have them',
      );
    const listed = context.values.namespace;
    const namespaces = Array.isArray(listed)
      ? listed.filter((entry): entry is string => typeof entry === 'string')
      : [config.temporalNamespace];
    const client = await context.client();
    const clients = namespaces.map((namespace) =>
      namespace === client.options.namespace
        ? client
        : new Client({ connection: client.connection, namespace, dataConverter: client.options.dataConverter }),
    );
    const onProgress = (line: string): void => context.io.stderr(`${line}\n`);
    context.io.stderr(
      `gc of ${describePayloadStore(store)}${dryRun ? ' (dry run)' : ''}: marking from the histories of namespace${namespaces.length === 1 ? '' : 's'} ${namespaces.join(', ')}\n`,
    );
    const retained = await collectRetainedClaims({ clients, onProgress });
    const report = await collectGarbage({ driver, claimedManifests: retained.manifests, graceMs, dryRun, onProgress });
    const cutoff = new Date(report.cutoffMs).toISOString().replace(/\.\d+Z$/, 'Z');
    const lines = [
      `gc of ${report.store}${dryRun ? ' (dry run: nothing removed)' : ''}, objects last written before ${cutoff} were candidates`,
      `Marked from ${groupDigits(retained.runs)} run${retained.runs === 1 ? '' : 's'} and ${groupDigits(retained.schedules)} schedule${retained.schedules === 1 ? '' : 's'} in ${namespaces.join(', ')}${retained.gone > 0 ? ` (${groupDigits(retained.gone)} more deleted while reading)` : ''}: ${groupDigits(retained.claims)} claims to ${groupDigits(report.claimedManifests)} manifests, and ${groupDigits(report.youngManifests)} manifests and ${groupDigits(report.youngNodes)} nodes younger than the grace period.`,
      '',
      describeGarbageReport(report),
      '',
      `${dryRun ? 'Would remove' : 'Removed'} ${describeTally(totalOf(report.deleted))}.`,
    ];
    if (report.restored.objects > 0 || report.purged.objects > 0)
      lines.push(
        `Quarantine (objects removed from S3 wait there one grace period, reads still find them): ${dryRun ? 'would put back' : 'put back'} ${describeTally(report.restored)} a claim needs, ${dryRun ? 'would remove' : 'removed'} ${describeTally(report.purged)} for good.`,
      );
    if (report.missingCount > 0)
      lines.push(
        `Warning: ${groupDigits(report.missingCount)} objects that retained claims need are missing from the store (${report.missing.slice(0, 3).join(', ')}${report.missingCount > 3 ? ', ...' : ''}): those payloads cannot be read any more.`,
      );
    context.io.stdout(`${lines.join('\n')}\n`);
    if (report.unreadableCount === 0) return ExitCode.ok;
    // Exit 3: done, but not everything could be judged; cron should hear of it.
    context.io.stderr(
      [
        `temporal-compactor gc: warning: ${groupDigits(report.unreadableCount)} object${report.unreadableCount === 1 ? '' : 's'} could not be read and ${report.unreadableCount === 1 ? 'was' : 'were'} kept (never removed: what they list is unknown, and they may be another environment's). Give gc the keys the workers have (COMPACTOR_CODEC_OLD_KEYS for retired ones), or remove them by hand once you know they are no one's:`,
        ...report.unreadableObjects.map(
          ({ key, reason }) => `  ${key}: ${reason.replace(`payload store object ${key}: `, '')}`,
        ),
        ...(report.unreadableCount > report.unreadableObjects.length
          ? [`  ... and ${groupDigits(report.unreadableCount - report.unreadableObjects.length)} more`]
          : []),
        '',
      ].join('\n'),
    );
    return ExitCode.keptUnreadable;
  },
};
