import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { parseS3Url, S3Store } from '../../src/store/s3-store.js';
import { freePort } from '../../temporal-dev/index.js';
import { waitFor } from './cli.js';

const ensureScript = fileURLToPath(new URL('../../scripts/ensure-s3-server.mjs', import.meta.url));

/** What `scripts/ensure-s3-server.mjs` found: the server's binary, or a registry that cannot be reached. */
export type S3ServerBinary = { status: 'ready'; path: string } | { status: 'unreachable'; message: string };

/**
 * Builds VersityGW when it is missing (once, into $CLOTHO_HOME/s3-server). Resolves `unreachable` only when the
 * script says the Go module proxy cannot be reached; any other failure (no Go, a failed build) throws.
 */
export function ensureS3ServerBinary(): Promise<S3ServerBinary> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [ensureScript, '--json'], { maxBuffer: 1 << 20 }, (error, stdout, stderr) => {
      let result: { status: string; path?: string; message?: string };
      try {
        result = JSON.parse(stdout.trim().split('\n').at(-1) ?? '');
      } catch {
        reject(new Error(`scripts/ensure-s3-server.mjs said nothing usable: ${stderr || stdout || error?.message}`));
        return;
      }
      if (result.status === 'ready') resolve({ status: 'ready', path: result.path! });
      else if (result.status === 'unreachable') resolve({ status: 'unreachable', message: result.message! });
      else reject(new Error(`the S3 server for the tests cannot be installed: ${result.message}`));
    });
  });
}

/** A VersityGW server of a test's own on a loopback port, over a temporary directory. */
export interface S3Server {
  /** `http://127.0.0.1:<port>`. */
  endpoint: string;
  /** Environment variables that point the AWS SDK (and so `--store s3://…`) at this server. */
  env: Record<string, string>;
  /** A fresh bucket. */
  createBucket(name: string): Promise<void>;
  /** An S3 store on this server, configured directly rather than through the environment. */
  store(url: string): S3Store;
  /** Kills the server (its data stays): requests fail until `start`. */
  stop(): Promise<void>;
  /** Starts it again on the same port and data, and waits until it serves. */
  start(): Promise<void>;
  close(): Promise<void>;
}

const ACCESS_KEY = 'clotho-test';
const SECRET_KEY = 'clotho-test-secret';

/** Starts the server and waits until it answers HTTP (a quarter of a second, typically). */
export async function startS3Server(binary: string): Promise<S3Server> {
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'clotho-s3-'));
  const data = join(dir, 'data');
  // Metadata beside the data rather than in extended attributes, which some temp file systems refuse.
  const sidecar = join(dir, 'meta');
  await mkdir(data);
  await mkdir(sidecar);
  const endpoint = `http://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let output = '';

  const serving = async () => {
    try {
      await fetch(endpoint, { signal: AbortSignal.timeout(1000) });
      return true;
    } catch {
      return false;
    }
  };
  const start = async () => {
    output = '';
    const proc = spawn(binary, ['--port', `127.0.0.1:${port}`, '--quiet', 'posix', '--sidecar', sidecar, data], {
      env: { ...process.env, ROOT_ACCESS_KEY: ACCESS_KEY, ROOT_SECRET_KEY: SECRET_KEY },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    proc.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    proc.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    exited = new Promise((resolve) => proc.once('exit', () => resolve()));
    child = proc;
    await waitFor(async () => proc.exitCode !== null || (await serving()), 30_000, `the S3 server on ${endpoint}`);
    if (proc.exitCode !== null) throw new Error(`the S3 server exited at start (${proc.exitCode}): ${output}`);
  };
  const stop = async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  };
  await start();

  const env = {
    AWS_ENDPOINT_URL_S3: endpoint,
    AWS_ACCESS_KEY_ID: ACCESS_KEY,
    AWS_SECRET_ACCESS_KEY: SECRET_KEY,
    AWS_REGION: 'us-east-1',
  };
  return {
    endpoint,
    env,
    async createBucket(name) {
      const client = new S3Client({
        endpoint,
        region: env.AWS_REGION,
        forcePathStyle: true,
        credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
      });
      try {
        await client.send(new CreateBucketCommand({ Bucket: name }));
      } finally {
        client.destroy();
      }
    },
    store: (url) =>
      new S3Store(
        { ...parseS3Url(url, {}), forcePathStyle: true },
        {
          endpoint,
          region: env.AWS_REGION,
          credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
        },
      ),
    stop,
    start,
    async close() {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
