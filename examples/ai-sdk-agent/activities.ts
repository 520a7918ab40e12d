// The agent's tool as an activity: a build log of a few thousand characters.
export async function readLog(name: string): Promise<string> {
  const lines = Array.from({ length: 60 }, (_, index) => `[${name}] step ${index}: compiling module ${index} ... ok`);
  return `${lines.join('\n')}\n[${name}] FAILED: test ${name}.spec.ts timed out`;
}
