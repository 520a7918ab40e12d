// The block extractor of `npm run test:package`: which blocks become which files, and how a
// compiler error finds its way back to the markdown line.
import { describe, expect, it } from 'vitest';
import { commonJsGlobals, mapDiagnostics, MarkdownBlockError, projectFiles, tsBlocks } from './markdown-blocks.js';

const guide = [
  '# Guide', //                                   1
  '', //                                          2
  '```ts worker.ts', //                           3
  "import { Worker } from '@temporalio/worker';", // 4
  'await Worker.create(options);', //            5
  '```', //                                       6
  '', //                                          7
  '```sh', //                                     8
  '```ts not-a-block.ts', //                      9 (inside a sh fence)
  '```', //                                       10
  '', //                                          11
  '```typescript', //                             12
  'const x: number = "one";', //                 13
  '```', //                                       14
  '', //                                          15
  '  ```ts', //                                   16 (indented, in a list item)
  '  const y = 1;', //                           17
  '  ```', //                                     18
  '```json', //                                   19
  '{}', //                                        20
  '```', //                                       21
].join('\n');

describe('tsBlocks', () => {
  it('takes ```ts and ```typescript blocks with their first line and name, skips other fences whole, and strips a list indent', () => {
    expect(tsBlocks('docs/guide.md', guide)).toEqual([
      {
        source: 'docs/guide.md',
        firstLine: 4,
        name: 'worker.ts',
        code: "import { Worker } from '@temporalio/worker';\nawait Worker.create(options);",
      },
      { source: 'docs/guide.md', firstLine: 13, name: undefined, code: 'const x: number = "one";' },
      { source: 'docs/guide.md', firstLine: 17, name: undefined, code: 'const y = 1;' },
    ]);
  });

  it('names the line of a fence that is never closed', () => {
    expect(() => tsBlocks('README.md', 'text\n```ts\nconst a = 1;\n')).toThrow(
      new MarkdownBlockError('README.md:2: the code fence opened here is never closed'),
    );
  });
});

describe('projectFiles', () => {
  it('writes a named block under its name and every other block as a module of its own under snippets/', () => {
    const files = projectFiles(tsBlocks('docs/guide.md', guide));
    expect(files.map((file) => [file.path, file.content])).toEqual([
      ['worker.ts', "import { Worker } from '@temporalio/worker';\nawait Worker.create(options);\n"],
      ['snippets/docs_guide-L12.ts', 'const x: number = "one";\nexport {};\n'],
      ['snippets/docs_guide-L16.ts', 'const y = 1;\nexport {};\n'],
    ]);
  });

  it('refuses a second block of the same name, naming both places', () => {
    const blocks = [
      ...tsBlocks('README.md', '```ts client.ts\na\n```\n'),
      ...tsBlocks('docs/more.md', 'x\n```ts client.ts\nb\n```\n'),
    ];
    expect(() => projectFiles(blocks)).toThrow(
      'docs/more.md:2: a second block named client.ts (the first is at README.md:1); one block per file name',
    );
  });

  it('refuses a name outside the project or not a TypeScript file', () => {
    for (const name of ['../worker.ts', '/tmp/worker.ts', 'worker.js', 'snippets/a.ts']) {
      expect(() => projectFiles(tsBlocks('README.md', `\`\`\`ts ${name}\na\n\`\`\`\n`)), name).toThrow(
        `README.md:1: the block's file name "${name}" must be a relative .ts path`,
      );
    }
  });
});

describe('mapDiagnostics', () => {
  it('puts the markdown file and line on an error in a block, and leaves other lines as they are', () => {
    const files = projectFiles(tsBlocks('docs/guide.md', guide));
    const output = [
      "worker.ts(2,20): error TS2304: Cannot find name 'options'.",
      "snippets/docs_guide-L12.ts(1,7): error TS2322: Type 'string' is not assignable to type 'number'.",
      'node_modules/x/index.d.ts(3,1): error TS1005: something else',
      '  a continuation line',
    ].join('\n');
    expect(mapDiagnostics(output, files)).toEqual([
      "docs/guide.md:5:20: error TS2304: Cannot find name 'options'. (in worker.ts)",
      "docs/guide.md:13:7: error TS2322: Type 'string' is not assignable to type 'number'. (in snippets/docs_guide-L12.ts)",
      'node_modules/x/index.d.ts(3,1): error TS1005: something else',
      '  a continuation line',
    ]);
  });
});

describe('commonJsGlobals', () => {
  it('names the markdown line of require(), require.resolve() and __dirname in an ES-module block (tsc accepts them, Node does not)', () => {
    const markdown = [
      '```ts worker.ts',
      "import { Worker } from '@temporalio/worker';",
      "const workflowsPath = require.resolve('./workflows');",
      '```',
      '```ts',
      'const here = __dirname;',
      'const fine = import.meta.url;',
      '```',
    ].join('\n');
    expect(commonJsGlobals(projectFiles(tsBlocks('README.md', markdown)))).toEqual([
      'README.md:3: uses require.resolve( (in worker.ts), which an ES module does not have: use import.meta.url / import.meta.resolve',
      'README.md:6: uses __dirname (in snippets/README-L5.ts), which an ES module does not have: use import.meta.url / import.meta.resolve',
    ]);
  });
});
