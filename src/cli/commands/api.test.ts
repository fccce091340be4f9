import { describe, expect, it } from 'vitest';
import { FakeTrajectoryService } from '../../../test/support/fake-trajectory-service.js';
import type { RunningApiServer } from '../../api/server.js';
import { apiCommand, runApiCommand, type ApiCommandDeps, type ServiceFlags } from './api.js';

/** Runs the command with collected output; `whileServing` runs against the live server, then stops it. */
async function run(
  args: string[],
  env: Record<string, string> = {},
  whileServing?: (s: RunningApiServer) => Promise<void>,
  command: typeof apiCommand = apiCommand,
) {
  const out: string[] = [];
  const err: string[] = [];
  let closed = false;
  const deps: ApiCommandDeps = {
    createService: async () => ({ service: new FakeTrajectoryService(), close: async () => void (closed = true) }),
    io: { out: (l) => out.push(l), err: (l) => err.push(l) },
    env,
    untilStopped: async (server) => whileServing?.(server),
  };
  const code = await command(args, deps);
  return { code, out: out.join('\n'), err: err.join('\n'), closed };
}

describe('clotho api', () => {
  it('serves on the given host and port, then stops and closes the service', async () => {
    let body: unknown;
    const r = await run(['--host', '127.0.0.1', '--port', '0'], {}, async (s) => {
      body = await (await fetch(`${s.url}/info`)).json();
    });
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+/);
    expect(body).toEqual({ batch_size: -1, max_token_len: -1 });
    expect(r.closed).toBe(true);
  });

  it('refuses a non-loopback host without a token, naming --token', async () => {
    const r = await run(['--host', '0.0.0.0', '--port', '0']);
    expect(r.code).toBe(2);
    expect(r.err).toContain('--token');
  });

  it('takes the token from CLOTHO_API_TOKEN and requires it', async () => {
    const statuses: number[] = [];
    let detail = '';
    const r = await run(['--port', '0'], { CLOTHO_API_TOKEN: 'tok' }, async (s) => {
      const denied = await fetch(`${s.url}/`);
      statuses.push(denied.status);
      detail = ((await denied.json()) as { detail: string }).detail;
      statuses.push((await fetch(`${s.url}/`, { headers: { Authorization: 'Bearer tok' } })).status);
    });
    expect(r.code).toBe(0);
    expect(statuses).toEqual([401, 200]);
    expect(detail).toContain('Authorization: Bearer');
  });

  it('applies --max-body-mb', async () => {
    let status = 0;
    await run(['--port', '0', '--max-body-mb', '0.001'], {}, async (s) => {
      status = (await fetch(`${s.url}/scored_data`, { method: 'POST', body: 'x'.repeat(2000) })).status;
    });
    expect(status).toBe(413);
  });

  it('hands the queue bound, the idempotency window and the trainer heartbeat timeout to the service, with defaults', async () => {
    const seen: ServiceFlags[] = [];
    const serve = (args: string[]) =>
      apiCommand(['--port', '0', ...args], {
        createService: async (flags) => (seen.push(flags), { service: new FakeTrajectoryService() }),
        io: { out: () => undefined, err: () => undefined },
        untilStopped: async () => undefined,
      });
    await serve([]);
    await serve(['--max-queue-groups', '7', '--idempotency-window', '3', '--trainer-heartbeat-timeout', '2.5']);
    expect(seen.map((f) => [f.maxQueueGroups, f.idempotencyWindow, f.trainerHeartbeatTimeout])).toEqual([
      [5000, undefined, 20],
      [7, 3, 2.5],
    ]);
    expect(await run(['--max-queue-groups', '0'])).toMatchObject({ code: 2, err: expect.stringContaining('--max-queue-groups') });
    expect(await run(['--trainer-heartbeat-timeout', '-1'])).toMatchObject({
      code: 2,
      err: expect.stringContaining('--trainer-heartbeat-timeout'),
    });
  });

  it('hands --retention to the service as a policy (keep by default) and refuses one it cannot read', async () => {
    const seen: ServiceFlags[] = [];
    const serve = (args: string[]) =>
      apiCommand(['--port', '0', ...args], {
        createService: async (flags) => (seen.push(flags), { service: new FakeTrajectoryService() }),
        io: { out: () => undefined, err: () => undefined },
        untilStopped: async () => undefined,
      });
    await serve([]);
    await serve(['--retention', 'ack,2d']);
    expect(seen.map((f) => f.retention)).toEqual([
      { ack: false, maxAgeMs: null },
      { ack: true, maxAgeMs: 2 * 86_400_000 },
    ]);
    expect(await run(['--retention', 'sometimes'])).toMatchObject({ code: 2, err: expect.stringContaining('--retention') });
    // A temporal trainer's acks are the batcher's: its worker in this process releases what was trained, no warning.
    expect((await run(['--port', '0', '--trainer', 'temporal', '--retention', 'ack'])).err).toBe('');
  });

  it('reports bad flags with their name and prints help', async () => {
    expect(await run(['--port', 'abc'])).toMatchObject({ code: 2, err: expect.stringContaining('--port') });
    expect(await run(['--nope'])).toMatchObject({ code: 2, err: expect.stringContaining('--nope') });
    expect(await run(['--help'])).toMatchObject({ code: 0, out: expect.stringContaining('Usage: clotho api') });
  });

  it('serves a non-loopback host without a token in trusted-network mode, with a warning', async () => {
    for (const [args, env] of [
      [['--trusted-network'], {}],
      [[], { CLOTHO_TRUSTED_NETWORK: '1' }],
    ] as const) {
      let status = 0;
      const r = await run(['--host', '0.0.0.0', '--port', '0', ...args], env, async (s) => {
        status = (await fetch(`${s.url.replace('0.0.0.0', '127.0.0.1')}/info`)).status;
      });
      expect(r.code).toBe(0);
      expect(status).toBe(200);
      expect(r.err).toContain('warning: --trusted-network');
    }
    // With a token as well, the token still holds.
    expect((await run(['--host', '0.0.0.0', '--port', '0', '--trusted-network', '--token', 't'])).err).toBe('');
  });

  it('hands --new-run to the service and prints the training run it serves', async () => {
    const seen: boolean[] = [];
    const out: string[] = [];
    const code = await apiCommand(['--port', '0', '--new-run'], {
      createService: async (flags) => (
        seen.push(flags.newRun),
        { service: new FakeTrajectoryService(), run: () => ({ run: 2, workflowId: 'b/run-2' }) }
      ),
      io: { out: (l) => out.push(l), err: () => undefined },
      untilStopped: async () => undefined,
    });
    expect([code, seen]).toEqual([0, [true]]);
    expect(out).toContain('clotho api: serving training run 2 (batcher b/run-2)');
  });

  it("runs as run-api: takes run-api's flags, ignoring --reload with a note, and shows both helps", async () => {
    const r = await run(['--port', '0', '--reload'], {}, undefined, runApiCommand);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+/);
    expect(r.err).toContain('--reload');
    const help = await run(['--help'], {}, undefined, runApiCommand);
    expect(help.out).toContain('Usage: clotho run-api');
    expect(help.out).toContain('--trusted-network');
  });
});
