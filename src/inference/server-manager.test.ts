import { afterEach, describe, expect, it, vi } from 'vitest';
import { ServerConfigSchema, type ServerConfig } from '../config/schemas.js';
import type { Backend } from './backends/index.js';
import { InferenceError } from './errors.js';
import { createServerManager, type ServerManager, type ServerManagerOptions } from './server-manager.js';
import type { Completion, GenerateRequest } from './types.js';

/** A test double of one server: records each call's `n`, can hold calls open, fail, or be down. */
interface Fake {
  backend: Backend;
  calls: number[];
  /** Releases every held call. */
  release(): void;
  hold: boolean;
  up: boolean;
  answer: (n: number, call: number) => Completion[] | Promise<Completion[]>;
}

const completion = (text: string): Completion => ({
  text,
  message: { role: 'assistant', content: text },
  finishReason: 'stop',
  promptTokenIds: [1],
  tokenIds: [2],
  logprobs: [-1],
});

function fake(name: string, config: Partial<ServerConfig> = {}): Fake {
  const gates: (() => void)[] = [];
  const state: Fake = {
    calls: [],
    hold: false,
    up: true,
    answer: (n, call) => Array.from({ length: n }, (_, i) => completion(`${name} call ${call} choice ${i}`)),
    release: () => {
      for (const open of gates.splice(0)) open();
    },
    backend: {
      config: ServerConfigSchema.parse({ base_url: `http://${name}/v1`, ...config }),
      async generate(request, { signal } = {}) {
        const call = state.calls.push(request.n) - 1;
        if (state.hold) {
          await new Promise<void>((resolve, reject) => {
            gates.push(resolve);
            signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
          });
        }
        return state.answer(request.n, call);
      },
      async checkHealth() {
        if (!state.up) throw new InferenceError('ConnectionError', 'down');
      },
    },
  };
  return state;
}

const managers: ServerManager[] = [];
afterEach(() => {
  for (const m of managers.splice(0)) m.stop();
  vi.useRealTimers();
});
function manage(fakes: Fake[], options: Partial<ServerManagerOptions> = {}): ServerManager {
  const byUrl = new Map(fakes.map((f) => [f.backend.config.base_url, f.backend]));
  const manager = createServerManager({
    servers: fakes.map((f) => f.backend.config),
    createBackend: (config) => byUrl.get(config.base_url)!,
    healthCheckIntervalMs: 60_000,
    retryDelayMs: 1,
    ...options,
  });
  managers.push(manager);
  return manager;
}

const request = (n: number): GenerateRequest => ({ messages: [{ role: 'user', content: 'q' }], n, maxTokens: 8, temperature: 1, topP: 1 });

async function waitFor(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

describe('routing and slots', () => {
  it('sends each call to the healthy server with the most free slots of its split', async () => {
    const a = fake('a', { num_max_requests_at_once: 2 });
    const b = fake('b', { num_max_requests_at_once: 4 });
    a.hold = b.hold = true;
    const manager = manage([a, b]);
    const calls = [manager.generate(request(1)), manager.generate(request(1)), manager.generate(request(1))];
    await waitFor(() => a.calls.length + b.calls.length === 3);
    // b (4 free), b (3 free), then a tie at 2 goes to the first server.
    expect([a.calls.length, b.calls.length]).toEqual([1, 2]);
    a.release();
    b.release();
    await Promise.all(calls);
    expect(manager.status().map((s) => s.inFlight.train)).toEqual([0, 0]);
  });

  it('scales its share of slots by the environment weight', async () => {
    const a = fake('a', { num_max_requests_at_once: 10 });
    a.hold = true;
    const manager = manage([a], { weight: 0.3 });
    expect(manager.status()[0]!.limits).toEqual({ train: 3, eval: 20 });
    const calls = Array.from({ length: 5 }, () => manager.generate(request(1)));
    await waitFor(() => a.calls.length === 3);
    manager.setWeight(1);
    await waitFor(() => a.calls.length === 5);
    a.release();
    await Promise.all(calls);
  });

  it('keeps eval calls within num_requests_for_eval, apart from training slots', async () => {
    const a = fake('a', { num_max_requests_at_once: 1, num_requests_for_eval: 2 });
    a.hold = true;
    const manager = manage([a]);
    const calls = [manager.generate(request(1)), ...[1, 2, 3].map(() => manager.generate(request(1), { split: 'eval' }))];
    await waitFor(() => a.calls.length === 3);
    expect(manager.status()[0]!.inFlight).toEqual({ train: 1, eval: 2 });
    a.release();
    await waitFor(() => a.calls.length === 4);
    a.release();
    await Promise.all(calls);
  });

  it('heartbeats while a call waits for a slot, and a cancelled wait gives nothing back', async () => {
    const a = fake('a', { num_max_requests_at_once: 1 });
    a.hold = true;
    const manager = manage([a], { progressIntervalMs: 5 });
    const first = manager.generate(request(1));
    await waitFor(() => a.calls.length === 1);
    const beats = vi.fn();
    const controller = new AbortController();
    const second = manager.generate(request(1), { signal: controller.signal, onProgress: beats });
    await waitFor(() => beats.mock.calls.length >= 2);
    controller.abort(new Error('cancelled'));
    await expect(second).rejects.toThrow('cancelled');
    a.release();
    await first;
    expect(a.calls).toEqual([1]);
    expect(manager.status()[0]!.inFlight.train).toBe(0);
  });
});

describe('n above max_n_completions', () => {
  it('splits n into concurrent chunks and merges them in order', async () => {
    const a = fake('a', { max_n_completions: 8 });
    // Later chunks answer first, so the merge order cannot come from arrival order.
    a.answer = async (n, call) => {
      await new Promise((resolve) => setTimeout(resolve, 30 - 10 * call));
      return Array.from({ length: n }, (_, i) => completion(`call ${call} choice ${i}`));
    };
    const result = await manage([a]).generate(request(20));
    expect(a.calls).toEqual([8, 8, 4]);
    expect(result.map((c) => c.text)).toEqual([
      ...Array.from({ length: 8 }, (_, i) => `call 0 choice ${i}`),
      ...Array.from({ length: 8 }, (_, i) => `call 1 choice ${i}`),
      ...Array.from({ length: 4 }, (_, i) => `call 2 choice ${i}`),
    ]);
  });

  it('learns that a server ignores n and asks it for one sample per request from then on', async () => {
    const a = fake('a');
    a.answer = (_n, call) => [completion(`single ${call}`)];
    const manager = manage([a]);
    const first = await manager.generate(request(4));
    expect(first).toHaveLength(4);
    expect(a.calls).toEqual([4, 1, 1, 1, 1]);
    expect(manager.status()[0]).toMatchObject({ nIgnored: true, healthy: true });
    await manager.generate(request(3));
    expect(a.calls.slice(5)).toEqual([1, 1, 1]);
  });

  it('starts with n_kwarg_is_ignored from the config', async () => {
    const a = fake('a', { n_kwarg_is_ignored: true });
    await manage([a]).generate(request(2));
    expect(a.calls).toEqual([1, 1]);
  });
});

describe('failures', () => {
  it('routes an infrastructure failure to another server and marks the failing one unhealthy', async () => {
    const a = fake('a');
    const b = fake('b');
    a.answer = () => {
      throw new InferenceError('ServerError', 'boom', { status: 500 });
    };
    const manager = manage([a, b]);
    const result = await manager.generate(request(2));
    expect(result.map((c) => c.text)).toEqual(['b call 0 choice 0', 'b call 0 choice 1']);
    expect([a.calls, b.calls]).toEqual([[2], [2]]);
    expect(manager.status().map((s) => s.healthy)).toEqual([false, true]);
  });

  it("fails at once with the server's message on a request error", async () => {
    const a = fake('a');
    const b = fake('b');
    a.answer = () => {
      throw new InferenceError('RequestRejected', 'prompt too long', { status: 400 });
    };
    await expect(manage([a, b]).generate(request(1))).rejects.toMatchObject({ type: 'RequestRejected', message: 'prompt too long' });
    expect(b.calls).toEqual([]);
  });

  it('checks a request once, where it enters: an invalid one fails InvalidRequest and reaches no backend', async () => {
    const a = fake('a');
    const manager = manage([a]);
    await expect(manager.generate(request(0))).rejects.toMatchObject({ kind: 'request', type: 'InvalidRequest' });
    await expect(manager.generate({ ...request(1), messages: [] })).rejects.toMatchObject({
      type: 'InvalidRequest',
      message: expect.stringContaining('messages'),
    });
    await expect(manager.generateTokens({ promptTokenIds: [-1], n: 1, maxTokens: 8, temperature: 1, topP: 1 })).rejects.toMatchObject({
      type: 'InvalidRequest',
    });
    expect(a.calls).toEqual([]);
  });

  it('gives up after maxAttempts and propagates the last failure', async () => {
    const a = fake('a', { health_check: false });
    a.answer = (_n, call) => {
      throw new InferenceError('ServerError', `boom ${call}`, { status: 503 });
    };
    await expect(manage([a], { maxAttempts: 3 }).generate(request(1))).rejects.toMatchObject({ type: 'ServerError', message: 'boom 2' });
    expect(a.calls).toHaveLength(3);
  });

  it('fails the call rather than sleep through a Retry-After longer than its backoff budget', async () => {
    const a = fake('a', { health_check: false });
    a.answer = () => {
      throw new InferenceError('RateLimited', 'slow down', { status: 429, retryAfterMs: 60_000 });
    };
    await expect(manage([a]).generate(request(1))).rejects.toMatchObject({ type: 'RateLimited', retryAfterMs: 60_000 });
    expect(a.calls).toHaveLength(1);
  });

  it('fails with ConnectionError when no server turns healthy in time', async () => {
    const a = fake('a');
    a.up = false;
    const manager = manage([a], { healthCheckIntervalMs: 5, unhealthyWaitMs: 100 });
    await waitFor(() => !manager.status()[0]!.healthy);
    await expect(manager.generate(request(1))).rejects.toMatchObject({ type: 'ConnectionError' });
    expect(a.calls).toEqual([]);
  });
});

describe('health checks', () => {
  it('take a dead server out and bring it back when its probe passes', async () => {
    const a = fake('a');
    const b = fake('b');
    const manager = manage([a, b], { healthCheckIntervalMs: 5 });
    expect(manager.status()[0]!.downSince).toBeUndefined();
    const before = Date.now();
    a.up = false;
    await waitFor(() => !manager.status()[0]!.healthy);
    // When it went down is kept while it stays down (the CLI names the outage and its length).
    const downSince = manager.status()[0]!.downSince!;
    expect(downSince).toBeGreaterThanOrEqual(before);
    await manager.generate(request(1));
    expect([a.calls.length, b.calls.length]).toEqual([0, 1]);
    expect(manager.status()[0]!.downSince).toBe(downSince);
    a.up = true;
    await waitFor(() => manager.status()[0]!.healthy);
    expect(manager.status()[0]!.downSince).toBeUndefined();
    a.hold = b.hold = true;
    const calls = [manager.generate(request(1)), manager.generate(request(1))];
    await waitFor(() => a.calls.length === 1 && b.calls.length === 2);
    a.release();
    b.release();
    await Promise.all(calls);
  });

  it("run on unref'd timers that stop() clears", () => {
    vi.useFakeTimers();
    const manager = manage([fake('a'), fake('b'), fake('c', { health_check: false })]);
    expect(vi.getTimerCount()).toBe(2);
    manager.stop();
    expect(vi.getTimerCount()).toBe(0);
  });
});
