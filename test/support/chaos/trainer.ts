// The chaos test's trainer: a process of its own, so it can be killed -9 like any other. It registers, leases a
// batch (`GET /batch?lease_seconds=N`), "trains" by appending the batch's groups to its log (fsync'd), then acks
// (`POST /batch/ack`). A crash between the two is what leases are for: the batch comes back once its lease runs out.
// Run: node --import tsx test/support/chaos/trainer.ts --api URL --log FILE --lease-seconds N --batch-size B
//        --num-steps S --data ITEMS_JSONL [--poll-ms 200] [--train-ms 0]
import { closeSync, fsyncSync, openSync, readFileSync, writeSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { TrainerRecord } from './trainer-log.js';

const { values } = parseArgs({
  options: {
    api: { type: 'string' },
    log: { type: 'string' },
    'lease-seconds': { type: 'string', default: '5' },
    'batch-size': { type: 'string' },
    'num-steps': { type: 'string' },
    data: { type: 'string' },
    'poll-ms': { type: 'string', default: '200' },
    // How long a step "trains" before its ack: paces the run as a real trainer does (default: no time at all).
    'train-ms': { type: 'string', default: '0' },
  },
});
const api = values.api!;
const leaseSeconds = Number(values['lease-seconds']);
const pollMs = Number(values['poll-ms']);
const trainMs = Number(values['train-ms']);

// A group is known by the question it answers: its item is the line of `--data` with that `question` (the GSM8K test
// split, or the Atropos run's items file), and no two lines are alike.
const itemByQuestion = new Map(
  readFileSync(values.data!, 'utf8')
    .split('\n')
    .filter((line) => line.trim())
    .map((line, index) => [(JSON.parse(line) as { question: string }).question, index] as const),
);

// Like a trainer resuming from its checkpoint, a restarted one registers at the step it reached (the batches it acked),
// which tells the API it is the same training run coming back, not a new one (docs/guide/train.md: what /register means).
const trainedSteps = (() => {
  try {
    return readFileSync(values.log!, 'utf8')
      .split('\n')
      .filter((line) => line.trim())
      .filter((line) => {
        const e = JSON.parse(line) as TrainerRecord;
        return e.ev === 'acked' && e.status === 200;
      }).length;
  } catch {
    return 0;
  }
})();

const log = openSync(values.log!, 'a');
// A kill -9 cannot cut one write(2) of an O_APPEND file in half, but start on a fresh line all the same.
writeSync(log, '\n');
function record(event: TrainerRecord): void {
  writeSync(log, `${JSON.stringify({ t: Date.now(), pid: process.pid, ...event })}\n`);
  fsyncSync(log);
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let downSince: number | undefined;

/** One HTTP call, retried until the API answers with a status in `accept` (the API may be dead or restarting). */
async function call(
  method: string,
  path: string,
  body: unknown,
  accept: (status: number) => boolean,
): Promise<{ status: number; json: any }> {
  for (;;) {
    const started = Date.now();
    let failure: string;
    try {
      const response = await fetch(`${api}${path}`, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
      const text = await response.text();
      if (accept(response.status)) {
        const ms = Date.now() - started;
        if (downSince !== undefined) record({ ev: 'reconnected', path, downMs: Date.now() - downSince, ms });
        else if (ms >= 1_000) record({ ev: 'slow', path, ms });
        downSince = undefined;
        return { status: response.status, json: JSON.parse(text) };
      }
      failure = `${response.status} ${text.slice(0, 200)}`;
    } catch (error) {
      failure = String((error as Error).cause ?? error);
    }
    if (downSince === undefined) {
      downSince = started;
      record({ ev: 'failing', path, error: failure });
    }
    await pause(100);
  }
}

const itemOf = (group: { messages: { role: string; content: unknown }[][] | null }): number => {
  const question = group.messages?.[0]?.find((m) => m.role === 'user')?.content;
  return typeof question === 'string' ? (itemByQuestion.get(question) ?? -1) : -1;
};

async function register(): Promise<void> {
  await call(
    'POST',
    '/register',
    {
      wandb_group: 'chaos',
      wandb_project: 'chaos',
      batch_size: Number(values['batch-size']),
      max_token_len: 8192,
      checkpoint_dir: 'ckpt',
      save_checkpoint_interval: 0,
      starting_step: trainedSteps,
      num_steps: Number(values['num-steps']),
    },
    (status) => status === 200,
  );
  record({ ev: 'registered' });
}

record({ ev: 'start' });
await register();

process.once('SIGTERM', () => {
  closeSync(log);
  process.exit(0);
});

for (;;) {
  const { json } = await call('GET', `/batch?lease_seconds=${leaseSeconds}`, undefined, (status) => status === 200);
  if (!Array.isArray(json.batch) || json.batch.length === 0) {
    // No batch yet (Atropos's trainer polls too); an "error" answer means the registration is gone: register again.
    if (json.status === 'error') await register();
    else await pause(pollMs);
    continue;
  }
  const lease = String(json.batch_id);
  const batch = lease.replace(/\.lease-\d+$/, '');
  record({ ev: 'trained', lease, batch, items: json.batch.map(itemOf) });
  if (trainMs > 0) await pause(trainMs);
  const ack = await call('POST', '/batch/ack', { batch_id: lease }, (status) => status === 200 || status === 409 || status === 404);
  record({ ev: 'acked', lease, batch, status: ack.status });
}
