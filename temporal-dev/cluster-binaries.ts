import { execFile } from 'node:child_process';
import { mkdir, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { clothoHome } from '../src/store/paths.js';
import { isExecutableFile } from './cli.js';

const run = promisify(execFile);

/**
 * The Temporal server release Clotho's cluster runs, built from Temporal's Go module through the Go module proxy.
 * v1.32.1 is the newest release whose go.mod asks for no newer Go than Debian's toolchain here (go 1.26.8); the
 * `temporal` CLI Clotho pins (1.9.1) embeds server 1.32.0, so both run the same server line.
 */
export const TEMPORAL_SERVER_VERSION = 'v1.32.1';

/** The server binary and the SQL schema tool (`temporal-sql-tool`) of one release. */
export interface ClusterBinaries {
  server: string;
  sqlTool: string;
}

export interface EnsureClusterBinariesOptions {
  /** Holds `<version>/temporal-server` and `<version>/temporal-sql-tool`. @default '<CLOTHO_HOME>/cluster/bin' */
  binDir?: string;
  /** Read for `TEMPORAL_SERVER_PATH`, `TEMPORAL_SQL_TOOL_PATH`, `PATH` and Go's own settings. @default process.env */
  env?: NodeJS.ProcessEnv;
  /** @default TEMPORAL_SERVER_VERSION */
  version?: string;
  /** The `go` command. @default 'go' */
  go?: string;
  /** Told when a build starts and ends (it takes minutes). */
  log?: (line: string) => void;
}

/** Where built binaries are cached unless told otherwise. */
export function defaultClusterBinDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(clothoHome(env), 'cluster', 'bin');
}

const HOW_TO_GET_THEM =
  'Either set TEMPORAL_SERVER_PATH and TEMPORAL_SQL_TOOL_PATH to the `temporal-server` and `temporal-sql-tool` of a ' +
  'Temporal release (https://github.com/temporalio/temporal/releases), or install Go so Clotho can build ' +
  `go.temporal.io/server@${TEMPORAL_SERVER_VERSION} through the Go module proxy.`;

/**
 * Returns the Temporal server and SQL tool: `TEMPORAL_SERVER_PATH` / `TEMPORAL_SQL_TOOL_PATH` if set, else the
 * cached build of `version` in `binDir`, else a fresh `go install` of both commands into a temporary directory that
 * is renamed into place (racing builds agree: the first rename wins). The build takes minutes on two cores, once.
 */
export async function ensureClusterBinaries(options: EnsureClusterBinariesOptions = {}): Promise<ClusterBinaries> {
  const env = options.env ?? process.env;
  const explicit = { server: env.TEMPORAL_SERVER_PATH, sqlTool: env.TEMPORAL_SQL_TOOL_PATH };
  if (explicit.server || explicit.sqlTool) {
    for (const [name, path] of [
      ['TEMPORAL_SERVER_PATH', explicit.server],
      ['TEMPORAL_SQL_TOOL_PATH', explicit.sqlTool],
    ] as const) {
      if (!path || !(await isExecutableFile(path)))
        throw new Error(`${name}=${path ?? ''} is not an executable file (set both or neither). ${HOW_TO_GET_THEM}`);
    }
    return { server: resolve(explicit.server!), sqlTool: resolve(explicit.sqlTool!) };
  }
  const version = options.version ?? TEMPORAL_SERVER_VERSION;
  const dir = join(resolve(options.binDir ?? defaultClusterBinDir(env)), version);
  const binaries = { server: join(dir, 'temporal-server'), sqlTool: join(dir, 'temporal-sql-tool') };
  if ((await isExecutableFile(binaries.server)) && (await isExecutableFile(binaries.sqlTool))) return binaries;
  await build(dir, version, options.go ?? 'go', env, options.log ?? (() => undefined));
  return binaries;
}

async function build(dir: string, version: string, go: string, env: NodeJS.ProcessEnv, log: (line: string) => void): Promise<void> {
  const temporary = `${dir}.building-${process.pid}-${Math.random().toString(36).slice(2)}`;
  await mkdir(temporary, { recursive: true });
  const started = Date.now();
  log(`building Temporal server ${version} and its SQL tool with ${go} (once; minutes on a small machine) into ${dir}`);
  try {
    try {
      // CGO off: the server's SQL drivers are pure Go, and a static binary runs on any glibc.
      await run(go, ['install', `go.temporal.io/server/cmd/server@${version}`, `go.temporal.io/server/cmd/tools/sql@${version}`], {
        env: { ...env, GOBIN: temporary, CGO_ENABLED: '0' },
        maxBuffer: 64 << 20,
      });
    } catch (error) {
      const detail = (error as { stderr?: string }).stderr?.trim().split('\n').slice(-8).join('\n') ?? String(error);
      throw new Error(`could not build go.temporal.io/server@${version}:\n${detail}\n${HOW_TO_GET_THEM}`);
    }
    await rename(join(temporary, 'server'), join(temporary, 'temporal-server'));
    await rename(join(temporary, 'sql'), join(temporary, 'temporal-sql-tool'));
    try {
      await rename(temporary, dir);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw error;
      // Another build finished first (keep its binaries), or an interrupted copy left a directory without them.
      if (!(await isExecutableFile(join(dir, 'temporal-server'))) || !(await isExecutableFile(join(dir, 'temporal-sql-tool')))) {
        await rm(dir, { recursive: true, force: true });
        await rename(temporary, dir);
      }
    }
    log(`built Temporal server ${version} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  } finally {
    await rm(temporary, { recursive: true, force: true });
  }
}
