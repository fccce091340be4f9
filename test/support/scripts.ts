import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';

/** Writes an executable shell script at `path` (its folder made): a stand-in for a tool a unit test must not run. */
export async function script(path: string, body: string, mode = 0o755): Promise<string> {
  await mkdir(resolve(path, '..'), { recursive: true });
  await writeFile(path, `#!/bin/sh\n${body}\n`);
  await chmod(path, mode);
  return path;
}
