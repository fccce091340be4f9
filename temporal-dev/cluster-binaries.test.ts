import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { script } from '../test/support/scripts.js';
import { ensureClusterBinaries, TEMPORAL_SERVER_VERSION } from './cluster-binaries.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clotho-cluster-bin-test-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A stand-in for `go install A@v B@v`: drops the last path element of each into $GOBIN, and logs its call. */
async function fakeGo(): Promise<string> {
  return script(
    join(dir, 'go'),
    [
      `echo "$@ CGO_ENABLED=$CGO_ENABLED" >> ${join(dir, 'go-calls')}`,
      'shift',
      'for target in "$@"; do name=${target%@*}; name=${name##*/}; printf "#!/bin/sh\\n" > "$GOBIN/$name"; chmod +x "$GOBIN/$name"; done',
    ].join('\n'),
  );
}

describe('ensureClusterBinaries', () => {
  it('builds the pinned server and SQL tool with `go install`, racing builds agreeing, and caches them', async () => {
    const go = await fakeGo();
    const binDir = join(dir, 'bin');
    const all = await Promise.all([1, 2, 3].map(() => ensureClusterBinaries({ binDir, go, env: { PATH: '/usr/bin:/bin' } })));
    const expected = {
      server: join(binDir, TEMPORAL_SERVER_VERSION, 'temporal-server'),
      sqlTool: join(binDir, TEMPORAL_SERVER_VERSION, 'temporal-sql-tool'),
    };
    for (const binaries of all) expect(binaries).toEqual(expected);
    expect(await readdir(binDir)).toEqual([TEMPORAL_SERVER_VERSION]);
    const calls = (await readFile(join(dir, 'go-calls'), 'utf8')).trim().split('\n');
    expect(calls[0]).toBe(
      `install go.temporal.io/server/cmd/server@${TEMPORAL_SERVER_VERSION} go.temporal.io/server/cmd/tools/sql@${TEMPORAL_SERVER_VERSION} CGO_ENABLED=0`,
    );
    // Cached: no further build.
    await ensureClusterBinaries({ binDir, go, env: { PATH: '/usr/bin:/bin' } });
    expect((await readFile(join(dir, 'go-calls'), 'utf8')).trim().split('\n')).toHaveLength(calls.length);
  });

  it('prefers TEMPORAL_SERVER_PATH and TEMPORAL_SQL_TOOL_PATH, and wants both', async () => {
    const server = await script(join(dir, 'rel', 'temporal-server'), 'exit 0');
    const sqlTool = await script(join(dir, 'rel', 'temporal-sql-tool'), 'exit 0');
    const go = join(dir, 'no-go');
    expect(await ensureClusterBinaries({ go, env: { TEMPORAL_SERVER_PATH: server, TEMPORAL_SQL_TOOL_PATH: sqlTool } })).toEqual({
      server,
      sqlTool,
    });
    await expect(ensureClusterBinaries({ go, env: { TEMPORAL_SERVER_PATH: server } })).rejects.toThrow(
      /TEMPORAL_SQL_TOOL_PATH= is not an executable file/,
    );
  });

  it('reports a failed build with its output and the other way to get the binaries', async () => {
    const go = await script(
      join(dir, 'old-go'),
      'echo "go: go.temporal.io/server@v1.32.1 requires go >= 1.26.8 (running go 1.22.2; GOTOOLCHAIN=local)" >&2; exit 1',
    );
    const error = await ensureClusterBinaries({ binDir: join(dir, 'bin'), go, env: { PATH: '/usr/bin:/bin' } }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error?.message).toMatch(/requires go >= 1\.26\.8/);
    expect(error?.message).toMatch(/TEMPORAL_SERVER_PATH/);
    expect(await readdir(join(dir, 'bin'))).toEqual([]);
  });
});
