// Node only: whether a module is the process's entry script (`node dist/x.js`, `tsx src/x.ts`, a bin link).
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** True when `moduleUrl` (pass `import.meta.url`) is the script this process was started with. */
export function isMain(moduleUrl: string): boolean {
  const entry = process.argv[1];
  if (entry === undefined) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(moduleUrl));
  } catch {
    return false;
  }
}
