import { chmod, mkdtemp, readFile, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { pointScriptsAt } from './python-venv.js';

describe('pointScriptsAt', () => {
  it("points a renamed venv's console scripts at its final path, leaving binaries and links alone", async () => {
    const bin = await mkdtemp(join(tmpdir(), 'clotho-venv-bin-'));
    const built = '/home/u/.clotho/atropos-venv.installing-42';
    const final = '/home/u/.clotho/atropos-venv';
    await writeFile(join(bin, 'run-api'), `#!${built}/bin/python\nfrom atroposlib.cli.run_api import main\n`);
    await chmod(join(bin, 'run-api'), 0o755);
    await writeFile(join(bin, 'activate'), `VIRTUAL_ENV="${built}"\nexport VIRTUAL_ENV\n`);
    const binary = Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0]), Buffer.from(built)]);
    await writeFile(join(bin, 'python3.11'), binary);
    await symlink('python3.11', join(bin, 'python'));

    await pointScriptsAt(bin, built, final);

    expect(await readFile(join(bin, 'run-api'), 'utf8')).toBe(`#!${final}/bin/python\nfrom atroposlib.cli.run_api import main\n`);
    expect(await readFile(join(bin, 'activate'), 'utf8')).toBe(`VIRTUAL_ENV="${final}"\nexport VIRTUAL_ENV\n`);
    expect(await readFile(join(bin, 'python3.11'))).toEqual(binary);
  });
});
