import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const ATROPOS = 'clients/python-atropos/src/clotho_atropos/boundary.schema.json';

/** `npm run boundary-schemas -- <args>`: the generator, run as a developer runs it. */
async function generator(...args: string[]): Promise<{ code: number; output: string }> {
  return promisify(execFile)(process.execPath, ['--conditions=clotho-source', '--import', 'tsx', 'scripts/boundary-schemas.mjs', ...args], {
    cwd: root,
  }).then(
    ({ stdout, stderr }) => ({ code: 0, output: stdout + stderr }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({
      code: error.code ?? 1,
      output: `${error.stdout ?? ''}${error.stderr ?? ''}`,
    }),
  );
}

describe('the boundary schemas the Python workers validate against', () => {
  it('are committed as the zod schemas generate them', async () => {
    const checked = await generator('--check');
    expect(checked.output).toBe('');
    expect(checked.code).toBe(0);
  });

  it('fail the check, naming the file and the command, when a field was renamed in the zod schemas only', async () => {
    // A copy of the committed file as it would be had `fastForwarded` been renamed in src/schema/atropos.ts: the file
    // no longer matches what the schemas generate.
    const dir = await mkdtemp(join(tmpdir(), 'clotho-boundary-'));
    try {
      const copy = join(dir, ATROPOS);
      await mkdir(dirname(copy), { recursive: true });
      const document = JSON.parse(await readFile(join(root, ATROPOS), 'utf8'));
      const answer = document.activities.atroposNextItem.answer;
      answer.properties.skipped = answer.properties.fastForwarded;
      delete answer.properties.fastForwarded;
      await writeFile(copy, `${JSON.stringify(document, null, 2)}\n`);
      const checked = await generator('--check', '--root', dir);
      expect(checked.code).toBe(1);
      expect(checked.output).toContain(`${ATROPOS} is stale`);
      expect(checked.output).toContain('npm run boundary-schemas');
      // Writing it again makes it whole.
      expect((await generator('--root', dir)).code).toBe(0);
      expect(await readFile(copy, 'utf8')).toBe(await readFile(join(root, ATROPOS), 'utf8'));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
