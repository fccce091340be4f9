import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  CLOTHO_SEARCH_ATTRIBUTES,
  clusterClientEnv,
  configuredTemporal,
  ensureDevServer,
  freePort,
  isClusterServing,
  listCustomSearchAttributes,
} from '../../temporal-dev/index.js';
import { killAllTracked } from '../support/chaos/supervisor.js';
import { makeCertificates } from './certificates.js';
import { clothoOnHost, startTestCluster, type TestCluster } from './cluster.js';

/**
 * Issue 13, point 4: a secured cluster reached by configuration alone. The cluster's frontend requires mutual TLS
 * (certificates made here with openssl); clients take every setting from Temporal's environment configuration
 * (`TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `TEMPORAL_TLS_*`, read by @temporalio/envconfig), as they would for
 * Temporal Cloud or any cluster an operator secured.
 */

let test: TestCluster;
/** The client environment of the cluster, with no profile file (the machine's own must not leak in). */
let env: Record<string, string>;
let failed = false;

beforeAll(async () => {
  // The SDK's worker narrates its life (and its lack of activities) below ERROR; the test's own lines matter here.
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  test = await startTestCluster({
    tls: async (dir) => {
      const certs = await makeCertificates(join(dir, 'pki'));
      return {
        certFile: certs.serverCertFile,
        keyFile: certs.serverKeyFile,
        caFile: certs.caFile,
        serverName: 'localhost',
        clientCaFile: certs.caFile,
        clientCertFile: certs.clientCertFile,
        clientKeyFile: certs.clientKeyFile,
      };
    },
  });
  env = { ...clusterClientEnv(test.cluster), TEMPORAL_CONFIG_FILE: join(test.dir, 'no-profile.toml') };
});

afterEach((context) => {
  // An expected failure (`it.fails`) reads as 'fail' here, before vitest inverts it.
  if (context.task.result?.state === 'fail' && !context.task.fails) failed = true;
});

afterAll(async () => {
  killAllTracked();
  if (failed && test) console.log(`cluster: a test failed; the cluster's files and logs kept in ${test.dir}`);
  await test?.stop(failed);
});

describe('a cluster with mutual TLS, reached through TEMPORAL_TLS_* alone', () => {
  it('serves clients and workers whose connection options come from envconfig, and refuses the rest', async () => {
    expect(Object.keys(env)).toEqual(
      expect.arrayContaining(['TEMPORAL_TLS_SERVER_CA_CERT_PATH', 'TEMPORAL_TLS_CLIENT_CERT_PATH', 'TEMPORAL_TLS_CLIENT_KEY_PATH']),
    );
    const { connectionOptions, namespace } = loadClientConnectConfig({ overrideEnvVars: env });
    expect(connectionOptions.address).toBe(test.cluster.address);
    expect(namespace).toBe('default');

    const connection = await Connection.connect(connectionOptions);
    const worker = await NativeConnection.connect(connectionOptions);
    try {
      const described = await connection.workflowService.describeNamespace({ namespace });
      expect(described.namespaceInfo?.name).toBe('default');
      const attributes = await listCustomSearchAttributes(connection, 'default');
      expect([...attributes.keys()]).toEqual(expect.arrayContaining(Object.keys(CLOTHO_SEARCH_ATTRIBUTES)));

      // A workflow's round trip: started by the client, run by a worker, both over mutual TLS.
      const taskQueue = `tls-${randomUUID()}`;
      const running = await Worker.create({
        connection: worker,
        namespace: namespace!,
        taskQueue,
        workflowsPath: fileURLToPath(new URL('./tls-workflow.ts', import.meta.url)),
      });
      const client = new Client({ connection, namespace: namespace! });
      const greeting = await running.runUntil(client.workflow.execute('greet', { taskQueue, workflowId: taskQueue, args: ['cluster'] }));
      expect(greeting).toBe('hello cluster');
    } finally {
      await worker.close();
      await connection.close();
    }

    // What makes it secured: no TLS, or TLS without a client certificate, gets no answer.
    const { address } = test.cluster;
    expect(await isClusterServing({ address })).toBe(false);
    const { TEMPORAL_TLS_CLIENT_CERT_PATH: _cert, TEMPORAL_TLS_CLIENT_KEY_PATH: _key, ...noClientCertificate } = env;
    const serverOnly = loadClientConnectConfig({ overrideEnvVars: noClientCertificate });
    expect(serverOnly.connectionOptions.tls).toMatchObject({ clientCertPair: undefined });
    expect(await isClusterServing(serverOnly.connectionOptions as { address: string })).toBe(false);
  });

  it("is what ensureDevServer hands Clotho's commands as `endpoint.connection`", async () => {
    const endpoint = await ensureDevServer({ env, cliPath: '/nonexistent' });
    expect(endpoint).toMatchObject({ address: test.cluster.address, namespace: 'default', started: false });
    expect(configuredTemporal(env)?.connection).toEqual(endpoint.connection);
    expect(await isClusterServing(endpoint.connection)).toBe(true);
  });

  // Clotho's commands connect with `endpoint.connection` (src/cli/runtime.ts, src/workers/workers.ts), TLS included.
  it('`clotho api` runs against the cluster with TEMPORAL_TLS_* alone', async () => {
    const api = clothoOnHost(test.dir, 'api-tls', env, [
      'api',
      '--port',
      String(await freePort()),
      '--batcher-id',
      `tls-${randomUUID().slice(0, 8)}`,
      '--store',
      join(test.dir, 'store'),
    ]);
    try {
      await api.waitForLine(/listening on/, 90_000);
    } finally {
      await api.stop(5_000);
    }
  });
});
