import { parseArgs } from 'node:util';
import { z } from 'zod';
import { createApi } from '../../api/app.js';
import { startApiServer, type RunningApiServer } from '../../api/server.js';
import type { RegisterOutcome, TrajectoryService } from '../../api/service.js';
import type { TrainerRegistration } from '../../schema/api.js';
import { DEFAULT_MAX_QUEUE_GROUPS } from '../../api/queue-bound.js';
import { parseRetention, type RetentionPolicy } from '../../store/retention.js';
import { API_FACE, decideListening, LISTENING_OPTIONS, listeningHelp, ListeningFlagsShape } from '../../config/listening.js';
import { untilInterrupted } from '../interrupt.js';

/** The flags that shape the service behind the API. */
export interface ServiceFlags {
  trainer: 'http' | 'temporal';
  trainerTaskQueue: string;
  /** Seconds a trainStep may go without a heartbeat before its batch goes to another trainer. */
  trainerHeartbeatTimeout: number;
  batcherId: string;
  store?: string;
  maxStaleness?: number;
  /** Groups waiting for the trainer past which posts are answered 503. */
  maxQueueGroups: number;
  /** Idempotency keys a new batcher remembers itself (`seenCapacity`); older ones are found in the store. */
  idempotencyWindow?: number;
  /** When the blobs of delivered or old groups are deleted from the store (`--retention`); absent: kept. */
  retention?: RetentionPolicy;
  /** Start a new training run (a fresh batcher run) rather than resume the newest one (`--new-run`). */
  newRun: boolean;
}

/** A training run of the batcher: its number and workflow id (`clotho api`'s status line names it). */
export interface ServedRun {
  run: number;
  workflowId: string;
}

/** What `clotho api` needs from its caller; tests pass their own. */
export interface ApiCommandDeps {
  /** Builds the service the API fronts (in production, the Temporal-backed batcher client). */
  createService(flags: ServiceFlags): Promise<{ service: TrajectoryService; close?: () => Promise<void>; run?: () => ServedRun }>;
  /** Where the command writes. @default process stdout / stderr */
  io?: { out(line: string): void; err(line: string): void };
  /** Environment variables, read for `CLOTHO_API_TOKEN` and `CLOTHO_TRUSTED_NETWORK`. @default process.env */
  env?: Record<string, string | undefined>;
  /** Resolves when the server should stop. @default the first SIGINT or SIGTERM */
  untilStopped?: (server: RunningApiServer) => Promise<void>;
}

const HELP = `Usage: clotho api [options]

Serves the Atropos-compatible trajectory API (the endpoints of Atropos's run-api) in front of
the batcher workflow. Atropos environments and trainers point their rollout_server_url here.

Options:
${listeningHelp(API_FACE)}
  --port <n>           port (default 8000; 0 picks a free one)
  --new-run            start a new training run (a fresh batcher under a new workflow id; the previous run is
                       ended and kept in Temporal) instead of resuming the newest one. A trainer's /register
                       starts one by itself when its settings differ (see README, "What /register means")
  --max-body-mb <n>    largest request body in MiB, also after gzip decompression (default 64)
  --trainer <mode>     http: trainers pull GET /batch (Atropos); temporal: every batch becomes a trainStep
                       activity on the trainer task queue, in step order (default http)
  --trainer-task-queue <q>  task queue of trainStep activities (default clotho-trainer)
  --trainer-heartbeat-timeout <s>  seconds a training step may go without a heartbeat before its batch goes
                       to another trainer worker (default 20; the Python worker heartbeats every 5 s)
  --batcher-id <id>    workflow id of the batcher (default clotho/batcher/default)
  --max-staleness <n>  drop groups whose policy_version is more than n steps old (default: keep all)
  --max-queue-groups <n>  answer posts of scored groups 503 with Retry-After once n groups wait for the
                       trainer, in the batcher and in this process (default 5000: about 1 MB of batcher state,
                       far below Temporal's 2 MiB payload limit); refusals are counted in /metrics
  --idempotency-window <n>  idempotency keys a new batcher remembers itself (default 10000); older keys are
                       found in the store's record of accepted keys
  --store <dir|url>    trajectory store: a directory or s3://bucket/prefix (default $CLOTHO_HOME/store); every
                       clotho serve feeding this API must use the same one
  --retention <policy> when group blobs leave the store: keep (default), ack (once the trainer acked its batch,
                       or was served it without a lease), a duration such as 12h or 7d (once no blob of the group
                       was written for that long, delivered or not), or ack,<duration> for both
  -h, --help           show this help`;

const OPTIONS = {
  ...LISTENING_OPTIONS,
  port: { type: 'string' },
  'max-body-mb': { type: 'string' },
  trainer: { type: 'string' },
  'trainer-task-queue': { type: 'string' },
  'trainer-heartbeat-timeout': { type: 'string' },
  'batcher-id': { type: 'string' },
  'max-staleness': { type: 'string' },
  'max-queue-groups': { type: 'string' },
  'idempotency-window': { type: 'string' },
  store: { type: 'string' },
  retention: { type: 'string' },
  'new-run': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

const FlagsSchema = z.strictObject({
  ...ListeningFlagsShape,
  port: z.coerce.number().int().min(0).max(65535).default(8000),
  'max-body-mb': z.coerce.number().positive().finite().default(64),
  trainer: z.enum(['http', 'temporal']).default('http'),
  'trainer-task-queue': z.string().min(1).default('clotho-trainer'),
  'trainer-heartbeat-timeout': z.coerce.number().positive().finite().default(20),
  'batcher-id': z.string().min(1).default('clotho/batcher/default'),
  'max-staleness': z.coerce.number().int().nonnegative().optional(),
  'max-queue-groups': z.coerce.number().int().positive().default(DEFAULT_MAX_QUEUE_GROUPS),
  'idempotency-window': z.coerce.number().int().positive().optional(),
  store: z.string().min(1).optional(),
  retention: z
    .string()
    .default('keep')
    .transform((spec, ctx) => {
      try {
        return parseRetention(spec);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as Error).message });
        return z.NEVER;
      }
    }),
  'new-run': z.boolean().default(false),
  help: z.boolean().optional(),
});

/** How `clotho api`'s status line tells what a `/register` did. */
const REGISTERED: Record<RegisterOutcome['outcome'], string> = {
  initialised: '/register: trainer registered',
  resumed: '/register: the same trainer came back, resumed',
  new_run: '/register: new settings, started a new run',
};

/** `clotho api`: serves until stopped; returns the exit code. */
export async function apiCommand(args: string[], deps: ApiCommandDeps): Promise<number> {
  const io = deps.io ?? { out: (l: string) => console.log(l), err: (l: string) => console.error(l) };
  let values: unknown;
  try {
    values = parseArgs({ args, options: OPTIONS, strict: true, allowPositionals: false }).values;
  } catch (error) {
    io.err(`clotho api: ${(error as Error).message}`);
    return 2;
  }
  const flags = FlagsSchema.safeParse(values);
  if (!flags.success) {
    for (const issue of flags.error.issues) io.err(`clotho api: --${issue.path.join('.')}: ${issue.message}`);
    return 2;
  }
  if (flags.data.help) {
    io.out(HELP);
    return 0;
  }
  const { host, port } = flags.data;
  const listening = decideListening(
    API_FACE,
    { host, port, token: flags.data.token, trustedNetwork: flags.data['trusted-network'] },
    deps.env ?? process.env,
  );
  if (!listening.ok) {
    io.err(listening.error);
    return 2;
  }
  if (listening.warning) io.err(listening.warning);
  const { token } = listening;
  const retention = flags.data.retention;
  const { service, close, run } = await deps.createService({
    trainer: flags.data.trainer,
    trainerTaskQueue: flags.data['trainer-task-queue'],
    trainerHeartbeatTimeout: flags.data['trainer-heartbeat-timeout'],
    batcherId: flags.data['batcher-id'],
    ...(flags.data.store === undefined ? {} : { store: flags.data.store }),
    ...(flags.data['max-staleness'] === undefined ? {} : { maxStaleness: flags.data['max-staleness'] }),
    maxQueueGroups: flags.data['max-queue-groups'],
    ...(flags.data['idempotency-window'] === undefined ? {} : { idempotencyWindow: flags.data['idempotency-window'] }),
    retention,
    newRun: flags.data['new-run'],
  });
  const maxBodyBytes = Math.floor(flags.data['max-body-mb'] * 1024 * 1024);
  const served = (what: string) => {
    const current = run?.();
    if (current) io.out(`clotho api: ${what} training run ${current.run} (batcher ${current.workflowId})`);
  };
  const onRegistered = ({ outcome }: RegisterOutcome, registration: TrainerRegistration) =>
    served(
      `${REGISTERED[outcome]} (batch_size ${registration.batch_size}, max_token_len ${registration.max_token_len}, num_steps ${registration.num_steps}); serving`,
    );
  const app = createApi({ service, options: { maxBodyBytes, onRegistered, ...(token === undefined ? {} : { token }) } });
  try {
    const server = await startApiServer({ app, host, port });
    io.out(`clotho api listening on ${server.url}${token === undefined ? '' : ' (bearer token required)'}`);
    served('serving');
    await (deps.untilStopped ?? untilInterrupted)(server);
    await server.close();
  } finally {
    await close?.();
  }
  return 0;
}

const RUN_API_HELP = `Usage: clotho run-api [--host 127.0.0.1] [--port 8000] [--reload] [clotho api options]

Atropos's run-api by name, for tools that start it (Hermes Agent's RL tool, scripts): clotho api with run-api's
flags accepted. --reload (uvicorn's code reloading) has nothing to reload here and is ignored. The host defaults to
loopback, not run-api's 0.0.0.0: another host needs --token or --trusted-network.

`;

/** `clotho run-api` (and the `run-api` binary): `clotho api` accepting Atropos's `run-api` flags. */
export async function runApiCommand(args: string[], deps: ApiCommandDeps): Promise<number> {
  const io = deps.io ?? { out: (l: string) => console.log(l), err: (l: string) => console.error(l) };
  if (args.includes('--help') || args.includes('-h')) {
    io.out(RUN_API_HELP + HELP);
    return 0;
  }
  const rest = args.filter((a) => a !== '--reload');
  if (rest.length < args.length) io.err('clotho run-api: --reload (uvicorn code reloading) has nothing to reload here; ignored');
  return apiCommand(rest, deps);
}
