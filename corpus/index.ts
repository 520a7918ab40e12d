// Dev-only, Node (tests and benchmarks import it; src/ never does): the agent trajectories the
// suite and the benchmarks run on.
//
// - The repository set, always there: the four MIT trajectories in examples/trajectories/ and the
//   seeded generated ones (corpus/generate.ts).
// - The extended corpus, when present: real trajectories most of which may not be copied into
//   this repository, read in place from the directory named by COMPACTOR_EXTENDED_CORPUS, else
//   from ../shared/corpus beside the repository.
//
// The replay provider loads trajectories by name from one directory: `createTrajectoryDir` writes
// a set of them into a temporary one.
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { validateMessages } from '../src/core/schema.js';
import type { ChatMessage } from '../src/core/types.js';
import { GENERATED_NAMES, generateTrajectory, isGeneratedName } from './generate.js';

export {
  GENERATED_NAMES,
  generateLongRun,
  generateTrajectory,
  isGeneratedName,
  longRunName,
  REPOSITORY_LONG_RUN,
  type LongRunOptions,
} from './generate.js';

/** The repository's root directory. */
export const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));
/** Where the MIT trajectories live (with their ATTRIBUTION.md). */
export const BUNDLED_DIR = join(REPO_ROOT, 'examples', 'trajectories');
/** The environment variable that names the extended corpus' directory. */
export const EXTENDED_CORPUS_ENV = 'COMPACTOR_EXTENDED_CORPUS';
/** Where the extended corpus is looked for when the variable is not set. */
export const DEFAULT_EXTENDED_DIR = resolve(REPO_ROOT, '../shared/corpus');

/** Where a trajectory comes from. */
export type TrajectoryOrigin = 'bundled' | 'generated' | 'extended';

export interface Trajectory {
  /** File name without `.json`, e.g. `taubench_gpt4o_airline_task46_trial3`, or a generated name such as `generated_huge-result`. */
  name: string;
  origin: TrajectoryOrigin;
  messages: ChatMessage[];
  /** The file it was read from; undefined for generated ones. */
  path?: string;
}

function readTrajectory(path: string, origin: TrajectoryOrigin): Trajectory {
  const file = path.split(/[\\/]/).at(-1) ?? path;
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(
      `${path}: not a readable JSON trajectory: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  return { name: file.replace(/\.json$/, ''), origin, path, messages: validateMessages(parsed, file) };
}

function jsonFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((file) => file.endsWith('.json'))
    .sort();
}

const byName = (left: Trajectory, right: Trajectory): number =>
  left.name < right.name ? -1 : left.name > right.name ? 1 : 0;

let bundled: Trajectory[] | undefined;
/** The MIT trajectories of examples/trajectories/, validated, by name. */
export function bundledTrajectories(): Trajectory[] {
  bundled ??= jsonFiles(BUNDLED_DIR).map((file) => readTrajectory(join(BUNDLED_DIR, file), 'bundled'));
  return bundled;
}

const generated = new Map<string, Trajectory>();
/** A generated trajectory by name (see `generateTrajectory`), made once per process. */
export function generatedTrajectory(name: string): Trajectory {
  let trajectory = generated.get(name);
  if (trajectory === undefined) {
    trajectory = { name, origin: 'generated', messages: validateMessages(generateTrajectory(name), name) };
    generated.set(name, trajectory);
  }
  return trajectory;
}

/** The generated trajectories of the repository set, by name. */
export function generatedTrajectories(): Trajectory[] {
  return GENERATED_NAMES.map(generatedTrajectory);
}

/** What the repository carries: the MIT trajectories and the generated ones, by name. */
export function repositoryCorpus(): Trajectory[] {
  return [...bundledTrajectories(), ...generatedTrajectories()].sort(byName);
}

/** Set by `npm run test:corpus`: a test run includes the extended corpus' cases (`npm test` covers the repository set). */
export const TEST_CORPUS_ENV = 'COMPACTOR_TEST_CORPUS';

/** Whether this run includes the extended corpus' cases (`npm run test:corpus`). */
export const extendedRun = (env: NodeJS.ProcessEnv = process.env): boolean => env[TEST_CORPUS_ENV] === 'extended';

/** The skip line of a run without the extended cases. */
export const extendedSkipped = (): string =>
  `extended corpus cases run with npm run test:corpus (${TEST_CORPUS_ENV}=extended)`;

/** Where the extended corpus is looked for, and whether it is there. */
export interface ExtendedCorpusLocation {
  dir: string;
  /** The directory came from COMPACTOR_EXTENDED_CORPUS (else it is ../shared/corpus beside the repository). */
  fromEnv: boolean;
  /** The directory exists and holds at least one `*.json` trajectory. */
  present: boolean;
}

function holdsTrajectories(dir: string): boolean {
  try {
    return statSync(dir).isDirectory() && jsonFiles(dir).length > 0;
  } catch {
    return false;
  }
}

/** COMPACTOR_EXTENDED_CORPUS when set (and not blank), else ../shared/corpus beside the repository. */
export function extendedCorpusLocation(env: NodeJS.ProcessEnv = process.env): ExtendedCorpusLocation {
  const named = env[EXTENDED_CORPUS_ENV]?.trim();
  const dir = named === undefined || named === '' ? DEFAULT_EXTENDED_DIR : resolve(named);
  return { dir, fromEnv: named !== undefined && named !== '', present: holdsTrajectories(dir) };
}

/** The one line that says the extended corpus is absent and how to point at it. */
export function extendedCorpusMissing(location: ExtendedCorpusLocation = extendedCorpusLocation()): string {
  return `extended corpus not found at ${location.dir}; set ${EXTENDED_CORPUS_ENV} to run its cases`;
}

let extended: { dir: string; trajectories: Trajectory[] | undefined } | undefined;
/**
 * Every trajectory of the extended corpus (its MIT files included), validated, by name; undefined
 * when it is absent. Throws when COMPACTOR_EXTENDED_CORPUS names a directory without trajectories:
 * asked for explicitly, a missing corpus is a mistake, not a reason to skip.
 */
export function extendedCorpus(): Trajectory[] | undefined {
  const location = extendedCorpusLocation();
  if (extended?.dir === location.dir) return extended.trajectories;
  if (!location.present && location.fromEnv)
    throw new Error(`${EXTENDED_CORPUS_ENV}=${location.dir}: no *.json trajectories there`);
  const trajectories = location.present
    ? jsonFiles(location.dir).map((file) => readTrajectory(join(location.dir, file), 'extended'))
    : undefined;
  extended = { dir: location.dir, trajectories };
  return trajectories;
}

/** The extended corpus without the trajectories the repository set already has (its MIT files); undefined when absent. */
export function extendedOnly(): Trajectory[] | undefined {
  const own = new Set(repositoryCorpus().map(({ name }) => name));
  return extendedCorpus()?.filter(({ name }) => !own.has(name));
}

/** The repository set, plus the rest of the extended corpus when it is present, by name. */
export function fullCorpus(): Trajectory[] {
  return [...repositoryCorpus(), ...(extendedOnly() ?? [])].sort(byName);
}

/**
 * The trajectory `name` from the repository set (or any generated long run, e.g.
 * `generated_long-run-240x10000`), else from the extended corpus. Throws naming where it looked.
 */
export function findTrajectory(name: string): Trajectory {
  const own = repositoryCorpus().find((trajectory) => trajectory.name === name);
  if (own !== undefined) return own;
  if (isGeneratedName(name)) return generatedTrajectory(name);
  const other = extendedCorpus()?.find((trajectory) => trajectory.name === name);
  if (other !== undefined) return other;
  const location = extendedCorpusLocation();
  throw new Error(
    `no trajectory "${name}" in the repository set${location.present ? ` or in the extended corpus at ${location.dir}` : ` (${extendedCorpusMissing(location)})`}`,
  );
}

/** The SOURCES.md of a corpus directory lists its files: their names, when there is one. */
export function listedNames(dir: string): string[] | undefined {
  let sources: string;
  try {
    sources = readFileSync(join(dir, 'SOURCES.md'), 'utf8');
  } catch {
    return undefined;
  }
  const names = sources
    .split('\n')
    .map((line) => /^\| ([\w.-]+)\.json \|/.exec(line)?.[1])
    .filter((name): name is string => name !== undefined);
  return [...new Set(names)].sort();
}

/** Writes every trajectory as `<dir>/<name>.json` (files are copied, generated ones serialised); creates `dir`. */
export function writeTrajectories(dir: string, trajectories: readonly Trajectory[]): void {
  mkdirSync(dir, { recursive: true });
  for (const trajectory of trajectories) {
    const target = join(dir, `${trajectory.name}.json`);
    if (trajectory.path !== undefined) copyFileSync(trajectory.path, target);
    else writeFileSync(target, JSON.stringify(trajectory.messages));
  }
}

/**
 * How a test run hands its trajectory directory to its workers and worker processes: the global
 * setup writes the test corpus once and sets this variable (test/support/global-setup.ts).
 */
export const TRAJECTORY_DIR_ENV = 'COMPACTOR_TEST_TRAJECTORY_DIR';

/** A temporary trajectory directory (for `createActivities({ trajectoryDir })` or COMPACTOR_TRAJECTORY_DIR). */
export interface TrajectoryDir {
  dir: string;
  /** Deletes the directory. */
  remove(): void;
}

/**
 * A fresh temporary directory holding `trajectories` (by default the repository set, plus the
 * extended corpus when present) as `<name>.json`, so the replay provider can load them by name.
 * The replay provider refuses files that resolve outside its directory, so they are copies, not links.
 */
export function createTrajectoryDir(trajectories: readonly Trajectory[] = fullCorpus()): TrajectoryDir {
  const dir = mkdtempSync(join(tmpdir(), 'compactor-trajectories-'));
  try {
    writeTrajectories(dir, trajectories);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** What a benchmark runs on, and how to say so in its report. */
export interface BenchmarkCorpus {
  trajectories: Trajectory[];
  /** E.g. "the repository set (4 MIT recordings, 4 generated runs)". */
  label: string;
  /** The extended corpus' directory when it is included. */
  extendedDir: string | undefined;
}

/**
 * The repository set, plus the extended corpus when the command line says `--corpus DIR` (or
 * `--corpus=DIR`) or COMPACTOR_EXTENDED_CORPUS is set. Unlike the tests, benchmarks never pick up
 * ../shared/corpus on their own: a figure must say what it was measured on. Throws when the
 * directory holds no trajectories, when `--corpus` has no value, and on any other argument.
 */
export function benchmarkCorpus(argv: readonly string[] = process.argv.slice(2)): BenchmarkCorpus {
  let dir: string | undefined;
  for (let index = 0; index < argv.length; index += 1) {
    const arg = argv[index] as string;
    if (arg === '--corpus') {
      const value = argv[index + 1];
      if (value === undefined || value.startsWith('--'))
        throw new Error('--corpus: expected a directory of *.json trajectories');
      dir = value;
      index += 1;
    } else if (arg.startsWith('--corpus=')) dir = arg.slice('--corpus='.length);
    // An argument the benchmark does not know would otherwise be ignored, and the run take minutes.
    else throw new Error(`unknown argument ${JSON.stringify(arg)} (known: --corpus DIR)`);
  }
  if (dir !== undefined) {
    if (!holdsTrajectories(resolve(dir))) throw new Error(`--corpus ${dir}: no *.json trajectories there`);
    process.env[EXTENDED_CORPUS_ENV] = dir;
  }
  const own = repositoryCorpus();
  const counts = `${own.filter(({ origin }) => origin === 'bundled').length} MIT recordings, ${own.filter(({ origin }) => origin === 'generated').length} generated runs`;
  const location = extendedCorpusLocation();
  if (!location.fromEnv) return { trajectories: own, label: `the repository set (${counts})`, extendedDir: undefined };
  const others = extendedOnly() ?? [];
  return {
    trajectories: [...own, ...others].sort(byName),
    label: `the repository set (${counts}) and ${others.length} more from the extended corpus at ${location.dir}`,
    extendedDir: location.dir,
  };
}
