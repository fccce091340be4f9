import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Connection, isGrpcServiceError } from '@temporalio/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { clusterClientEnv, configuredTemporal, freePort } from '../../temporal-dev/index.js';
import { apiClient, TRAINER } from '../support/api-process.js';
import { killAllTracked } from '../support/chaos/supervisor.js';
import { clothoOnHost, startTestCluster, type TestCluster } from './cluster.js';
import { rsaKeys, signToken, startJwtIssuer, TEST_KID, type JwtIssuer } from './jwt.js';

/**
 * Issue 13, point 4: a cluster that checks API keys. The Temporal server requires a JWT on every call (its
 * `global.authorization` with the default JWT claim mapper and authorizer, keys from a JWKS served here on loopback),
 * as a secured self-hosted cluster does; Clotho's commands send one as `TEMPORAL_API_KEY` (a bearer token), by
 * configuration alone. A key for the namespace serves `clotho api` end to end (its client and its batcher's worker);
 * no key, a key signed by another issuer and a key for another namespace are refused.
 */

let issuer: JwtIssuer;
let test: TestCluster;
let failed = false;

beforeAll(async () => {
  issuer = await startJwtIssuer();
  test = await startTestCluster({ authorization: { jwksUrl: issuer.jwksUrl, adminToken: issuer.token(['temporal-system:admin']) } });
});

afterEach((context) => {
  if (context.task.result?.state === 'fail') failed = true;
});

afterAll(async () => {
  killAllTracked();
  if (failed && test) console.log(`cluster: a test failed; the cluster's files and logs kept in ${test.dir}`);
  await test?.stop(failed);
  await issuer?.close();
});

/**
 * What the frontend answers a client that sends `apiKey` (none: no key): 'ok', or the gRPC status code's name. A token
 * the server cannot verify is refused already when the client connects (its first call), a valid one without the
 * namespace's permission at the namespace's call.
 */
async function answer(apiKey: string | undefined): Promise<string> {
  const name = (error: unknown): string => {
    const grpc = isGrpcServiceError(error)
      ? error
      : isGrpcServiceError((error as { cause?: unknown }).cause)
        ? (error as { cause: { code: number } }).cause
        : undefined;
    if (!grpc) throw error;
    return grpc.code === 7 ? 'PERMISSION_DENIED' : grpc.code === 16 ? 'UNAUTHENTICATED' : `code ${grpc.code}`;
  };
  const connection = await Connection.connect({
    address: test.cluster.address,
    ...(apiKey === undefined ? {} : { apiKey, tls: false }),
  }).catch(name);
  if (typeof connection === 'string') return connection;
  try {
    await connection.workflowService.describeNamespace({ namespace: 'default' });
    return 'ok';
  } catch (error) {
    return name(error);
  } finally {
    await connection.close();
  }
}

describe('a cluster that requires an API key (a JWT checked by the Temporal server)', () => {
  it('refuses calls without a valid key for the namespace', async () => {
    expect(await answer(issuer.token(['default:write']))).toBe('ok');
    expect(await answer(undefined)).toBe('PERMISSION_DENIED');
    expect(await answer(signToken(rsaKeys().privateKey, TEST_KID, ['temporal-system:admin']))).toMatch(/PERMISSION_DENIED|UNAUTHENTICATED/);
    expect(await answer(issuer.token(['other:write']))).toBe('PERMISSION_DENIED');
    expect(await answer(issuer.token(['default:write'], { expiresInSeconds: -60 }))).toMatch(/PERMISSION_DENIED|UNAUTHENTICATED/);
  });

  it('`clotho api` runs against it with TEMPORAL_API_KEY alone: its client starts the batcher, its worker runs it', async () => {
    const env: Record<string, string> = {
      ...clusterClientEnv(test.cluster),
      // A key for the namespace only, not the cluster's admin key; no profile file of the machine's.
      TEMPORAL_API_KEY: issuer.token(['default:write']),
      TEMPORAL_CONFIG_FILE: join(test.dir, 'no-profile.toml'),
    };
    expect(env.TEMPORAL_TLS).toBe('false');
    expect(configuredTemporal(env)?.connection).toMatchObject({ address: test.cluster.address, apiKey: env.TEMPORAL_API_KEY, tls: false });
    const port = await freePort();
    const api = clothoOnHost(test.dir, 'api-key', env, [
      'api',
      '--port',
      String(port),
      '--batcher-id',
      `key-${randomUUID().slice(0, 8)}`,
      '--store',
      join(test.dir, 'store'),
    ]);
    try {
      await api.waitForLine(/listening on/, 90_000);
      const http = apiClient(`http://127.0.0.1:${port}`);
      // Both answers come from the batcher workflow: an update the API's client sends, run by the API's worker.
      expect((await http.post('/register', { ...TRAINER, batch_size: 4, num_steps: 2 })).status).toBe(200);
      expect((await http.get('/batch')).json).toEqual({ batch: null });
      expect((await http.get('/info')).json).toMatchObject({ batch_size: 4 });
    } finally {
      await api.stop(5_000);
    }
  });
});
