// Types for scripts/python-sdk.mjs (plain Node ESM so it runs without a TypeScript toolchain).

/** Exact version of PyPI `temporalio` installed into .temporal/python. */
export declare const TEMPORALIO_VERSION: string;
/** Exact version of PyPI `cryptography` installed beside it. */
export declare const CRYPTOGRAPHY_VERSION: string;
/** The pip requirements installed. */
export declare const PYTHON_SDK_REQUIREMENTS: string[];
/** Absolute path of the repository root. */
export declare const PROJECT_ROOT: string;

export interface ResolvePythonSdkOptions {
  /** Install into .temporal/python when it is missing or has other versions (default true). */
  install?: boolean;
  /** Repository root (default: the parent of scripts/). */
  projectRoot?: string;
}

/** Find, and by default install, the Python Temporal SDK; resolves to the python that has it. */
export declare function resolvePythonSdk(options?: ResolvePythonSdkOptions): Promise<string>;
