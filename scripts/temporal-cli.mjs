#!/usr/bin/env node
// The command behind `npm run temporal:cli`, the tests' pretest step and CI: prints the absolute
// path of the `temporal` CLI, installing it into .temporal/ first when none is found
// (`--no-install`: never install). The resolver itself is dev/temporal-cli.ts, which the dev
// server imports; this file only runs it through tsx, so it keeps working as `node scripts/temporal-cli.mjs`.
import { spawnSync } from 'node:child_process';
import { fileURLToPath, URL } from 'node:url';

const resolver = fileURLToPath(new URL('../dev/temporal-cli.ts', import.meta.url));
// tsx as this project has it, whatever the directory the command is run from.
const child = spawnSync(
  process.execPath,
  ['--import', import.meta.resolve('tsx'), resolver, ...process.argv.slice(2)],
  { stdio: 'inherit' },
);
if (child.error !== undefined)
  process.stderr.write(`[temporal-cli] could not run ${resolver}: ${child.error.message}\n`);
process.exitCode = child.status ?? 1;
