import { BatchResponseSchema, InfoSchema, type TrainerRegistration } from '../schema/api.js';
import type { GroupSource } from './group-sources.js';

/** How a data-generating command reaches the trajectory API as its trainer. */
export interface TrainerClientOptions {
  /** Base URL of `clotho api` (or Atropos's `run-api`). */
  apiUrl: string;
  /** Sent as `Authorization: Bearer <token>` when set. */
  token?: string;
  /** Seconds a taken batch stays leased before the API serves it again; the command acks it once written. */
  leaseSeconds: number;
  /** Wait between polls of an empty queue. */
  pollMs: number;
  /** Rejects to stop waiting (Ctrl-C). */
  stop: Promise<never>;
}

/**
 * A trainer of the trajectory API, as Atropos's `atropos-sft-gen` is one: it registers, then takes batch after
 * batch. Unlike Atropos's it does not reset the API first (that would drop groups posted before it registered and
 * forget the environments waiting for a trainer), and it leases each batch (`GET /batch?lease_seconds=`) and acks it
 * once its records are on disk, so a crash in between loses nothing. Against Atropos's own API, which knows no
 * leases, batches come without a lease id and there is nothing to ack.
 */
export function trainerClient(options: TrainerClientOptions) {
  const base = options.apiUrl.replace(/\/+$/, '');
  const headers: Record<string, string> = options.token ? { authorization: `Bearer ${options.token}` } : {};
  const call = async (method: 'GET' | 'POST', path: string, body?: unknown, interruptible = true): Promise<unknown> => {
    const request = fetch(`${base}${path}`, {
      method,
      headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    }).catch((error: unknown) => {
      throw new Error(`cannot reach the trajectory API at ${base} (--api-url): ${causeOf(error)}`);
    });
    const response = await (interruptible ? Promise.race([request, options.stop]) : request);
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path}: HTTP ${response.status}: ${text.slice(0, 300)}`);
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  };

  return {
    /**
     * `POST /register`, joining the training run the API serves (`new_run=false`: its trainer's settings stand, as
     * Atropos's would, rather than start a new run); answers the batch size the API uses.
     */
    async register(registration: TrainerRegistration): Promise<{ batchSize: number }> {
      await call('POST', '/register?new_run=false', registration);
      return { batchSize: InfoSchema.parse(await call('GET', '/info')).batch_size };
    },

    /** Checks that the API answers, changing nothing (`GET /status`). */
    async reach(): Promise<void> {
      await call('GET', '/status');
    },

    /** Batches as they form, waiting `pollMs` between polls of an empty queue, until the consumer stops. */
    async *batches(): GroupSource {
      for (;;) {
        const answer = BatchResponseSchema.parse(await call('GET', `/batch?lease_seconds=${options.leaseSeconds}`));
        if ('status' in answer) throw new Error(`GET /batch: ${answer.message}`);
        if (answer.batch === null) {
          await Promise.race([new Promise((resolve) => setTimeout(resolve, options.pollMs)), options.stop]);
          continue;
        }
        const batchId = answer.batch_id;
        yield {
          groups: answer.batch,
          // An ack is not cut short by Ctrl-C: the batch is written, and a lost ack would serve it again.
          ...(batchId === undefined ? {} : { ack: async () => void (await call('POST', '/batch/ack', { batch_id: batchId }, false)) }),
        };
      }
    },
  };
}

function causeOf(error: unknown): string {
  const cause = (error as { cause?: unknown }).cause;
  return cause instanceof Error ? cause.message : (error as Error).message;
}
