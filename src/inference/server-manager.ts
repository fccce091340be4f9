import type { ServerConfig } from '../config/schemas.js';
import { createBackend, type Backend, type PromptLogprobs } from './backends/index.js';
import { parseRequest, parseTokenRequest } from './backends/backend.js';
import { callSignal } from './call-signal.js';
import { classifyError, InferenceError } from './errors.js';
import {
  GenerateRequestSchema,
  PROGRESS_INTERVAL_MS,
  type Completion,
  type GenerateOptions,
  type GenerateRequest,
  type InferenceClient,
  type TokenGenerateRequest,
} from './types.js';

/** Which slot pool a call uses: training rollouts or evaluation (ATROPOS-API.md §4.2). */
export type Split = 'train' | 'eval';

/** Per-call options of the server manager. */
export interface ManagerCallOptions extends GenerateOptions {
  /** @default 'train' */
  split?: Split;
}

/** Options of {@link createServerManager}. */
export interface ServerManagerOptions {
  servers: ServerConfig[];
  /** Share of each server's slots this environment may use, in (0, 1] (Atropos's env weight). @default 1 */
  weight?: number;
  /** Time between health probes of each server (`health_check: true`). @default 1000 */
  healthCheckIntervalMs?: number;
  /** @default 10000 */
  healthCheckTimeoutMs?: number;
  /** Attempts per request within one call; Temporal retries the whole activity beyond this. @default 3 */
  maxAttempts?: number;
  /** First backoff before retrying on the same server; doubles per attempt, with jitter. @default 500 */
  retryDelayMs?: number;
  /** Longest backoff; a longer Retry-After fails the call so that Temporal waits instead. @default 5000 */
  maxRetryDelayMs?: number;
  /** How long a call waits for some server to be healthy before failing with `ConnectionError`. @default 30000 */
  unhealthyWaitMs?: number;
  /** How often `onProgress` fires during a call, waits for slots included. @default 5000 */
  progressIntervalMs?: number;
  /** @default createBackend from `./backends/index.js` */
  createBackend?: (config: ServerConfig) => Backend;
}

/** One server as the manager sees it. */
export interface ServerStatus {
  baseUrl: string;
  healthy: boolean;
  /** When the server last went from healthy to unhealthy (epoch ms); absent while it is healthy. */
  downSince?: number;
  /** Learned (or configured) that the server ignores `n`: its samples are requested one by one. */
  nIgnored: boolean;
  inFlight: Record<Split, number>;
  /** Slots this environment may use, after its weight. */
  limits: Record<Split, number>;
}

/** Several inference servers behind one client: routing by free slots, health checks, retries, `n` splitting. */
export interface ServerManager extends InferenceClient {
  /**
   * Samples `n` answers to a conversation. The request is checked here (`GenerateRequestSchema`, failing with a
   * non-retryable `InvalidRequest`), where it enters inference; backends trust what the manager hands them.
   */
  generate(request: GenerateRequest, options?: ManagerCallOptions): Promise<Completion[]>;
  /** Continues a prompt given as token ids, checked here as {@link generate}'s request is; only servers whose backend supports it are used. */
  generateTokens(request: TokenGenerateRequest, options?: ManagerCallOptions): Promise<Completion[]>;
  /** A teacher's top-k logprobs at every position (`TeacherClient`); not split by `n`. */
  promptLogprobs(tokens: number[], topK: number, options?: ManagerCallOptions): Promise<PromptLogprobs>;
  setWeight(weight: number): void;
  status(): ServerStatus[];
  /** Stops health checks; calls still waiting for a server fail. */
  stop(): void;
}

interface Server {
  backend: Backend;
  config: ServerConfig;
  healthy: boolean;
  downSince?: number;
  nIgnored: boolean;
  inFlight: Record<Split, number>;
  /** Bumped when a call marks the server unhealthy, so that a probe started earlier cannot undo it. */
  failures: number;
}

const FAN_OUT = Symbol('fan out');

/**
 * Creates a server manager. Each request goes to the healthy server with the most free slots of its
 * split; `n` above the servers' `max_n_completions` is split into chunks issued concurrently and
 * merged in order; a server that ignores `n` gets its samples one by one. Infrastructure failures are
 * retried (on another server when there is one, which marks the failing one unhealthy until its
 * health probe passes); request failures (4xx) fail at once. Timers are unref'd; call `stop()`.
 */
export function createServerManager(options: ServerManagerOptions): ServerManager {
  if (options.servers.length === 0) throw new Error('the server manager needs at least one server');
  const make = options.createBackend ?? ((config: ServerConfig) => createBackend(config));
  const servers: Server[] = options.servers.map((config) => ({
    backend: make(config),
    config,
    healthy: true,
    nIgnored: config.n_kwarg_is_ignored,
    inFlight: { train: 0, eval: 0 },
    failures: 0,
  }));
  const interval = options.healthCheckIntervalMs ?? 1000;
  const probeTimeoutMs = options.healthCheckTimeoutMs ?? 10_000;
  const maxAttempts = Math.max(1, options.maxAttempts ?? 3);
  const retryDelayMs = options.retryDelayMs ?? 500;
  const maxRetryDelayMs = options.maxRetryDelayMs ?? 5000;
  const unhealthyWaitMs = options.unhealthyWaitMs ?? 30_000;
  const progressIntervalMs = options.progressIntervalMs ?? PROGRESS_INTERVAL_MS;
  let weight = checkWeight(options.weight ?? 1);
  let stopped = false;
  const waiters = new Set<() => void>();
  const timers = new Set<NodeJS.Timeout>();
  const probes = new AbortController();

  /** Marks a server up or down, keeping when it went down (the CLI names an outage and its length). */
  const setHealthy = (server: Server, healthy: boolean) => {
    if (healthy) delete server.downSince;
    else server.downSince ??= Date.now();
    server.healthy = healthy;
  };
  const notify = () => {
    for (const wake of [...waiters]) wake();
  };
  const limit = (s: Server, split: Split) =>
    Math.max(1, Math.ceil((split === 'train' ? s.config.num_max_requests_at_once : s.config.num_requests_for_eval) * weight));
  const free = (s: Server, split: Split) => limit(s, split) - s.inFlight[split];

  /** Resolves true on any change of slots or health, false after `timeoutMs`. */
  function changed(signal: AbortSignal, timeoutMs?: number): Promise<boolean> {
    return new Promise((resolve, reject) => {
      const finish = (settle: () => void) => {
        waiters.delete(wake);
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        settle();
      };
      const wake = () => finish(() => resolve(true));
      const onAbort = () => finish(() => reject(signal.reason));
      const timer = timeoutMs === undefined ? undefined : setTimeout(() => finish(() => resolve(false)), timeoutMs);
      waiters.add(wake);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  async function acquire(split: Split, eligible: Server[], avoid: Set<Server>, signal: AbortSignal): Promise<Server> {
    let noneHealthySince: number | undefined;
    for (;;) {
      if (signal.aborted) throw signal.reason;
      if (stopped) throw new InferenceError('ConnectionError', 'the server manager was stopped');
      const healthy = eligible.filter((s) => s.healthy);
      const open = healthy.filter((s) => free(s, split) > 0);
      const fresh = open.filter((s) => !avoid.has(s));
      const pick = (fresh.length > 0 ? fresh : open).reduce<Server | undefined>(
        (best, s) => (best === undefined || free(s, split) > free(best, split) ? s : best),
        undefined,
      );
      if (pick) {
        pick.inFlight[split] += 1;
        return pick;
      }
      if (healthy.length > 0) {
        noneHealthySince = undefined;
        await changed(signal);
        continue;
      }
      noneHealthySince ??= Date.now();
      const left = unhealthyWaitMs - (Date.now() - noneHealthySince);
      if (left <= 0 || !(await changed(signal, left))) {
        throw new InferenceError(
          'ConnectionError',
          `no healthy inference server for ${unhealthyWaitMs} ms (${eligible.map((s) => s.config.base_url).join(', ')})`,
        );
      }
    }
  }

  function release(server: Server, split: Split): void {
    server.inFlight[split] -= 1;
    notify();
  }

  /** Runs `call` on a server, retrying infrastructure failures up to `maxAttempts` times. */
  async function withServer<T>(split: Split, eligible: Server[], signal: AbortSignal, call: (s: Server) => Promise<T>): Promise<T> {
    const avoid = new Set<Server>();
    let last: InferenceError | undefined;
    for (let attempt = 0; attempt < maxAttempts; attempt++) {
      if (last && !eligible.some((s) => s.healthy && !avoid.has(s))) {
        const delay = last.retryAfterMs ?? Math.min(maxRetryDelayMs, retryDelayMs * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);
        if (delay > maxRetryDelayMs) throw last;
        await sleep(delay, signal);
      }
      const server = await acquire(split, eligible, avoid, signal).catch((err: unknown) => {
        // Every server failed and none has recovered yet: the last failure says more than the wait.
        throw signal.aborted || !last ? err : last;
      });
      try {
        return await call(server);
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        last = classifyError(err);
        if (last.kind === 'request') throw last;
        avoid.add(server);
        if (server.config.health_check) {
          setHealthy(server, false);
          server.failures += 1;
        }
      } finally {
        release(server, split);
      }
    }
    throw last;
  }

  type Sampler = (backend: Backend, n: number, signal: AbortSignal) => Promise<Completion[]>;

  async function sampleChunk(n: number, split: Split, eligible: Server[], run: Sampler, signal: AbortSignal): Promise<Completion[]> {
    const result = await withServer(split, eligible, signal, async (server) => {
      if (n > 1 && server.nIgnored) return FAN_OUT;
      try {
        const completions = await run(server.backend, n, signal);
        if (completions.length !== n) {
          throw new InferenceError('WrongChoiceCount', `asked ${server.config.base_url} for ${n} samples, got ${completions.length}`);
        }
        return completions;
      } catch (err) {
        // Atropos's n_kwarg_is_ignored: learned once per server, then samples go one per request.
        if (n > 1 && !signal.aborted && classifyError(err).type === 'WrongChoiceCount') {
          server.nIgnored = true;
          return FAN_OUT;
        }
        throw err;
      }
    });
    if (result !== FAN_OUT) return result;
    const singles = await Promise.all(Array.from({ length: n }, () => sampleChunk(1, split, eligible, run, signal)));
    return singles.flat();
  }

  /** Shared shell of every call: capability filter, progress heartbeats, cancelling siblings on failure. */
  async function managed<T>(
    options: ManagerCallOptions,
    supports: (b: Backend) => boolean,
    what: string,
    body: (eligible: Server[], split: Split, signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    const eligible = servers.filter((s) => supports(s.backend));
    if (eligible.length === 0) throw new InferenceError('InvalidRequest', `no configured inference server supports ${what}`);
    const siblings = callSignal([options.signal]);
    const timer = options.onProgress ? setInterval(options.onProgress, progressIntervalMs) : undefined;
    try {
      return await body(eligible, options.split ?? 'train', siblings.signal);
    } catch (err) {
      siblings.abort(err);
      throw err;
    } finally {
      siblings.release();
      clearInterval(timer);
    }
  }

  function sample(n: number, run: Sampler) {
    return (eligible: Server[], split: Split, signal: AbortSignal) => {
      const size = Math.min(...eligible.map((s) => s.config.max_n_completions));
      const chunks: number[] = [];
      for (let left = n; left > 0; left -= size) chunks.push(Math.min(size, left));
      return Promise.all(chunks.map((k) => sampleChunk(k, split, eligible, run, signal))).then((parts) => parts.flat());
    };
  }

  function probe(server: Server): void {
    // eslint-disable-next-line @typescript-eslint/no-misused-promises -- the probe's failure is caught inside; nothing else awaits
    const timer = setTimeout(async () => {
      timers.delete(timer);
      const failures = server.failures;
      const call = callSignal([probes.signal], probeTimeoutMs);
      try {
        await server.backend.checkHealth(call.signal);
        if (server.failures === failures) setHealthy(server, true);
      } catch {
        setHealthy(server, false);
      } finally {
        call.release();
      }
      if (stopped) return;
      notify();
      probe(server);
    }, interval);
    timer.unref();
    timers.add(timer);
  }
  for (const server of servers) if (server.config.health_check) probe(server);

  return {
    async generate(request, callOptions = {}) {
      const r = parseRequest(GenerateRequestSchema, request);
      return managed(
        callOptions,
        () => true,
        'chat generation',
        sample(r.n, (backend, n, signal) => backend.generate({ ...r, n }, { signal })),
      );
    },
    async generateTokens(request, callOptions = {}) {
      const r = parseTokenRequest(request);
      return managed(
        callOptions,
        (b) => b.generateTokens !== undefined,
        'token-id prompts (server_type vllm, sglang or llama)',
        sample(r.n, (backend, n, signal) => backend.generateTokens!({ ...r, n }, { signal })),
      );
    },
    async promptLogprobs(tokens, topK, callOptions = {}) {
      return managed(
        callOptions,
        (b) => b.promptLogprobs !== undefined,
        'prompt logprobs (server_type vllm)',
        (eligible, split, signal) => withServer(split, eligible, signal, (s) => s.backend.promptLogprobs!(tokens, topK, { signal })),
      );
    },
    setWeight(value) {
      weight = checkWeight(value);
      notify();
    },
    status() {
      return servers.map((s) => ({
        baseUrl: s.config.base_url,
        healthy: s.healthy,
        ...(s.downSince === undefined ? {} : { downSince: s.downSince }),
        nIgnored: s.nIgnored,
        inFlight: { ...s.inFlight },
        limits: { train: limit(s, 'train'), eval: limit(s, 'eval') },
      }));
    },
    stop() {
      stopped = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      probes.abort(new Error('the server manager was stopped'));
      notify();
    },
  };
}

function checkWeight(weight: number): number {
  if (!(weight > 0 && weight <= 1)) throw new RangeError(`the environment weight must be in (0, 1], got ${weight}`);
  return weight;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
