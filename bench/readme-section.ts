// Where the benchmarks put their figures: each one owns a section of bench/README.md between
// `<!-- bench:NAME:start -->` and `<!-- bench:NAME:end -->`, and rewrites it whole on every run, so
// the figures beside each other in a section always come from one run.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const README = fileURLToPath(new URL('./README.md', import.meta.url));

/**
 * Puts `section` between benchmark `name`'s markers in bench/README.md, replacing what stood there;
 * without the markers the section (with them) goes at the end, and without a README one is started.
 */
export function writeReadmeSection(name: string, section: string): void {
  const startMarker = `<!-- bench:${name}:start -->`;
  const endMarker = `<!-- bench:${name}:end -->`;
  let text: string;
  try {
    text = readFileSync(README, 'utf8');
  } catch {
    text = '# Benchmarks\n';
  }
  const block = `${startMarker}\n${section}\n${endMarker}`;
  const start = text.indexOf(startMarker);
  const end = text.indexOf(endMarker);
  const next =
    start >= 0 && end > start
      ? `${text.slice(0, start)}${block}${text.slice(end + endMarker.length)}`
      : `${text.trimEnd()}\n\n${block}\n`;
  writeFileSync(README, next);
}
