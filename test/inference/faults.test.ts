import { afterEach, describe, expect, it } from 'vitest';
import { InferenceError } from '../../src/inference/errors.js';
import { createServerManager, type ServerManager, type ServerManagerOptions } from '../../src/inference/server-manager.js';
import type { GenerateRequest } from '../../src/inference/types.js';
import { ServerConfigSchema } from '../../src/config/schemas.js';
import { startLlamaServer, type NativeServer, type NativeServerOptions } from '../support/native-servers.js';
import { startScriptedOpenAI, type Responder, type ScriptedOpenAI, type ScriptedOutcome } from '../support/scripted-openai.js';

/**
 * Inference servers that misbehave on purpose, over real HTTP, behind the server manager: each
 * fault is retried and routed around, and the servers' own request counts show where calls went.
 */

const closers: { close(): Promise<void> }[] = [];
const managers: ServerManager[] = [];
afterEach(async () => {
  for (const m of managers.splice(0)) m.stop();
  await Promise.all(closers.splice(0).map((s) => s.close()));
});

async function scripted(responder?: Responder): Promise<ScriptedOpenAI> {
  const server = await startScriptedOpenAI(responder ? { responder } : {});
  closers.push(server);
  return server;
}
async function llama(options?: NativeServerOptions): Promise<NativeServer> {
  const server = await startLlamaServer(options);
  closers.push(server);
  return server;
}

type ConfigInput = Parameters<typeof ServerConfigSchema.parse>[0] & Record<string, unknown>;
function manage(configs: ConfigInput[], options: Partial<ServerManagerOptions> = {}): ServerManager {
  const manager = createServerManager({
    servers: configs.map((c) => ServerConfigSchema.parse({ model_name: 'm', timeout: 10, ...c })),
    // No probe during a test unless it asks: a probe could re-admit a server the test expects out.
    healthCheckIntervalMs: 60_000,
    retryDelayMs: 10,
    ...options,
  });
  managers.push(manager);
  return manager;
}

const request = (n: number): GenerateRequest => ({
  messages: [{ role: 'user', content: 'What is 2+2?' }],
  n,
  maxTokens: 32,
  temperature: 1,
  topP: 1,
});
const bodyN = (r: { body: unknown }) => (r.body as { n: number }).n;

async function waitFor(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('a misbehaving server is retried and routed around', () => {
  const faults: [string, ScriptedOutcome, string, number?][] = [
    ['answers 500', { status: 500 }, 'ServerError'],
    ['hangs past the timeout', { hang: true }, 'Timeout', 0.5],
    ['closes the connection mid-request', { destroySocket: true }, 'ConnectionError'],
    ['returns malformed JSON', { status: 200, body: '{"choices": [{"index": 0, "message": ' }, 'MalformedResponse'],
  ];

  it.each(faults)('a server that %s', async (_name, outcome, type, timeout) => {
    const bad = await scripted(() => outcome);
    const good = await scripted();
    const manager = manage([{ base_url: bad.baseUrl, ...(timeout ? { timeout } : {}) }, { base_url: good.baseUrl }]);
    const completions = await manager.generate(request(2));
    expect(completions.map((c) => c.text)).toEqual(['choice 0', 'choice 1']);
    expect(completions[0]!.tokenIds?.length).toBeGreaterThan(0);
    // Ties go to the first server: the bad one was tried once, then the good one answered.
    expect([bad.calls, good.calls]).toEqual([1, 1]);
    expect(manager.status().map((s) => s.healthy)).toEqual([false, true]);
    // The failure it hid had the expected type: the bad server alone fails the same way.
    const alone = manage([{ base_url: bad.baseUrl, health_check: false, ...(timeout ? { timeout } : {}) }], { maxAttempts: 1 });
    const err = await alone.generate(request(1)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InferenceError);
    expect((err as InferenceError).type).toBe(type);
  });

  it('a server that ignores n gets its samples one per request', async () => {
    const bad = await scripted((_body, call) => ({ choices: [{ text: `single ${call}` }] }));
    const good = await scripted();
    const manager = manage([{ base_url: bad.baseUrl }, { base_url: good.baseUrl }]);
    const completions = await manager.generate(request(4));
    expect(completions).toHaveLength(4);
    expect(bodyN(bad.requests[0]!)).toBe(4);
    const later = [...bad.requests.slice(1), ...good.requests];
    expect(later).toHaveLength(4);
    expect(later.map(bodyN)).toEqual([1, 1, 1, 1]);
    expect(manager.status()[0]).toMatchObject({ healthy: true, nIgnored: true });
  });

  it("a request error fails at once with the server's message, on no other server", async () => {
    const bad = await scripted(() => ({
      status: 400,
      body: { error: { message: 'maximum context length exceeded', type: 'invalid', code: 400 } },
    }));
    const good = await scripted();
    const err = await manage([{ base_url: bad.baseUrl }, { base_url: good.baseUrl }])
      .generate(request(1))
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ type: 'RequestRejected', kind: 'request', status: 400, message: 'maximum context length exceeded' });
    expect([bad.calls, good.calls]).toEqual([1, 0]);
  });

  it('when every attempt fails, the last failure propagates', async () => {
    const a = await scripted(() => ({ status: 503 }));
    const b = await scripted(() => ({ status: 502 }));
    const manager = manage([{ base_url: a.baseUrl }, { base_url: b.baseUrl }], { healthCheckIntervalMs: 20 });
    const err = await manager.generate(request(1)).catch((e: unknown) => e);
    expect(err).toMatchObject({ type: 'ServerError' });
    expect(a.calls + b.calls).toBe(3);
  });
});

describe('n splitting', () => {
  it('n = 20 with max_n_completions 8 is three requests merged into 20 in order', async () => {
    // The first request to arrive answers last, so the merge cannot follow arrival order.
    const server = await scripted((body, call) => ({
      delayMs: call === 0 ? 50 : 0,
      choices: Array.from({ length: body.n ?? 1 }, (_, i) => ({ text: `call ${call} choice ${i}` })),
    }));
    const completions = await manage([{ base_url: server.baseUrl, max_n_completions: 8 }]).generate(request(20));
    expect(server.requests.map(bodyN).sort()).toEqual([4, 8, 8]);
    const texts = completions.map((c) => c.text);
    expect(texts).toHaveLength(20);
    const parts = texts.map((t) => /^call (\d+) choice (\d+)$/.exec(t)!.slice(1).map(Number));
    const groups = [parts.slice(0, 8), parts.slice(8, 16), parts.slice(16)];
    for (const group of groups) {
      expect(new Set(group.map(([call]) => call)).size).toBe(1);
      expect(group.map(([, choice]) => choice)).toEqual(group.map((_, i) => i));
    }
    const callOfFour = server.requests.findIndex((r) => bodyN(r) === 4);
    expect(groups[2]![0]![0]).toBe(callOfFour);
  });
});

describe('slots, counted by the servers themselves', () => {
  it('keeps at most num_max_requests_at_once calls in flight per server', async () => {
    const servers = [await llama({ delayMs: 100 }), await llama({ delayMs: 100 })];
    const manager = manage(servers.map((s) => ({ base_url: s.url, server_type: 'llama' as const, num_max_requests_at_once: 2 })));
    const completions = await Promise.all(Array.from({ length: 5 }, () => manager.generate(request(1))));
    expect(completions.flat()).toHaveLength(5);
    expect(servers.map((s) => s.maxInFlight)).toEqual([2, 2]);
    expect(servers[0]!.calls + servers[1]!.calls).toBe(5);
  });

  it('limits the eval split by num_requests_for_eval', async () => {
    const server = await llama({ delayMs: 100 });
    const manager = manage([{ base_url: server.url, server_type: 'llama', num_max_requests_at_once: 1, num_requests_for_eval: 3 }]);
    await Promise.all(Array.from({ length: 5 }, () => manager.generate(request(1), { split: 'eval' })));
    expect(server.maxInFlight).toBe(3);
  });
});

describe('health checks over HTTP', () => {
  it('take a server whose /health fails out of rotation and bring it back', async () => {
    const [a, b] = [await llama(), await llama()];
    const manager = manage(
      [
        { base_url: a.url, server_type: 'llama' },
        { base_url: b.url, server_type: 'llama' },
      ],
      { healthCheckIntervalMs: 20 },
    );
    a.healthy = false;
    await waitFor(() => !manager.status()[0]!.healthy);
    await manager.generate(request(2));
    expect([a.calls, b.calls]).toEqual([0, 2]);
    a.healthy = true;
    await waitFor(() => manager.status()[0]!.healthy);
    await manager.generate(request(1));
    expect(a.calls).toBe(1);
  });
});
