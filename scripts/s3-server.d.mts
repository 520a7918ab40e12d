// Types for scripts/s3-server.mjs (plain Node ESM so it runs without a TypeScript toolchain).

/** Exact version of PyPI `moto` installed into .temporal/moto. */
export declare const MOTO_VERSION: string;
/** The pip requirements installed (moto with its S3 extra, and the web framework its server mode needs). */
export declare const MOTO_REQUIREMENTS: string[];
/** Absolute path of the repository root. */
export declare const PROJECT_ROOT: string;

export interface ResolveS3ServerOptions {
  /** Install into .temporal/moto when it is missing (default true). */
  install?: boolean;
  /** Repository root (default: the parent of scripts/). */
  projectRoot?: string;
}

/** Find, and by default install, moto; resolves to the python that runs its S3 server (`-m moto.server`). */
export declare function resolveS3Server(options?: ResolveS3ServerOptions): Promise<string>;
