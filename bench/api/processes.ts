/** The APIs bench/api measures, each in a process of its own, as they run in production; the bench process only posts. */
import { spawn } from 'node:child_process';
import { join } from 'node:path';

const repoRoot = join(import.meta.dirname, '..', '..');

/** An API process listening on loopback. */
export interface ApiChild {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** Starts `command` and waits for the `listening on <url>` line it prints (Clotho's) or for `GET /` to answer (`url` given). */
export async function startApiChild(
  command: string,
  args: string[],
  options: { env?: Record<string, string>; url?: string } = {},
): Promise<ApiChild> {
  const child = spawn(command, args, { cwd: repoRoot, env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-8000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 120_000;
  let url = options.url;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${command} ${args.join(' ')} exited with ${child.exitCode}: ${output}`);
    if (url === undefined) url = /listening on (http:\/\/\S+)/.exec(output)?.[1];
    else if (
      await fetch(`${url}/`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${command} did not listen within 120 s: ${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    url,
    pid: child.pid!,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Node's flags for the API processes: a V8 CPU profile of each into `cpuProfDir` when set (written as it exits). */
const nodeFlags = (cpuProfDir: string | undefined) => (cpuProfDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`]);

/** `clotho api` itself (the batcher's worker inside it, as in production) on a free port; of another checkout with `repo`. */
export const startClothoApi = (o: {
  temporalAddress: string;
  batcherId: string;
  store: string;
  args?: string[];
  cpuProfDir?: string;
  repo?: string;
}) =>
  startApiChild(
    process.execPath,
    [
      ...nodeFlags(o.cpuProfDir),
      join(o.repo ?? repoRoot, 'bin', 'clotho.js'),
      'api',
      '--port',
      '0',
      '--batcher-id',
      o.batcherId,
      '--store',
      o.store,
      ...(o.args ?? []),
    ],
    { env: { TEMPORAL_ADDRESS: o.temporalAddress } },
  );

/** The in-memory variant of Clotho's app (`in-memory-api.ts`). */
export const startInMemoryApi = (cpuProfDir?: string) =>
  startApiChild(process.execPath, [...nodeFlags(cpuProfDir), '--import', 'tsx', join(repoRoot, 'bench', 'api', 'in-memory-api.ts')]);
