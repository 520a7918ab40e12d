// Sandbox-safe: what kind of compaction a result was, for the records, the tables and telemetry.
export type CompactionKind = 'summary' | 'trim' | 'elision' | 'none';

export function compactionKind(result: {
  summary: string | null;
  fallback: boolean;
  elisions: { length: number };
}): CompactionKind {
  if (result.summary !== null) return 'summary';
  if (result.fallback) return 'trim';
  if (result.elisions.length > 0) return 'elision';
  return 'none';
}
