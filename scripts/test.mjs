// `npm test`: the static checks (`npm run typecheck`, `npm run lint`) side by side with `vitest run`
// (given this script's arguments). Each check keeps one core busy for 10-30 s on a warm clone and
// for a minute or more on a fresh one, while vitest's first files mostly wait on the dev server's
// start; run one after the other, the other core sat idle that long. A check's output is held and
// printed when it ends, so that it does not cut into vitest's lines; a check that failed is named
// again after vitest's summary. The exit code is vitest's, or 1 when vitest passed and a check failed.
import { spawn } from 'node:child_process';

/** Runs `command`; with `hold`, its output is returned rather than shown. */
function run(command, args, hold) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: hold ? ['ignore', 'pipe', 'pipe'] : 'inherit' });
    let output = '';
    if (hold) for (const stream of [child.stdout, child.stderr]) stream.on('data', (chunk) => (output += chunk));
    child.once('error', (error) => {
      if (!hold) console.error(`${command}: ${error.message}`);
      resolve({ code: 1, output: `${output}${error.message}\n` });
    });
    child.once('close', (code) => resolve({ code: code ?? 1, output }));
  });
}

const started = Date.now();
const checks = ['typecheck', 'lint'].map(async (name) => {
  const { code, output } = await run('npm', ['run', '--silent', name], true);
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const verdict = code === 0 ? 'passed' : `FAILED (exit code ${code})`;
  process.stdout.write(
    `${output.trimEnd() === '' ? '' : `${output.trimEnd()}\n`}npm run ${name}: ${verdict}, ${seconds} s\n`,
  );
  return code === 0 ? undefined : name;
});
const vitest = await run('vitest', ['run', ...process.argv.slice(2)], false);
const failed = (await Promise.all(checks)).filter((name) => name !== undefined);
if (failed.length > 0)
  console.error(`npm test: ${failed.map((name) => `npm run ${name}`).join(' and ')} failed (output above)`);
// Not process.exit(): held output written to a pipe could be cut short.
process.exitCode = vitest.code !== 0 ? vitest.code : failed.length > 0 ? 1 : 0;
