import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRunWorkflows, viewTemporal } from './temporal.js';

let dir: string;
/** No profile file unless a test writes one: the machine's ~/.config/temporalio must not leak in. */
let noFile: Record<string, string>;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clotho-view-temporal-'));
  noFile = { TEMPORAL_CONFIG_FILE: join(dir, 'absent.toml') };
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('clotho view connects as the other commands do', () => {
  it('uses the local dev server when nothing is configured', () => {
    expect(viewTemporal({ ...noFile })).toEqual({ connection: { address: '127.0.0.1:7233' }, namespace: 'default', configured: false });
  });

  it('takes TLS client certificates, the API key, gRPC metadata and the namespace, not the address alone', async () => {
    const files = { ca: join(dir, 'ca.pem'), crt: join(dir, 'client.pem'), key: join(dir, 'client.key') };
    await writeFile(files.ca, 'CA PEM');
    await writeFile(files.crt, 'CLIENT PEM');
    await writeFile(files.key, 'KEY PEM');
    const target = viewTemporal({
      ...noFile,
      TEMPORAL_ADDRESS: 'cluster.internal:7233',
      TEMPORAL_NAMESPACE: 'training',
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: files.ca,
      TEMPORAL_TLS_CLIENT_CERT_PATH: files.crt,
      TEMPORAL_TLS_CLIENT_KEY_PATH: files.key,
      TEMPORAL_GRPC_META_X_TEAM: 'rl',
    });
    expect(target).toMatchObject({
      namespace: 'training',
      configured: true,
      connection: { address: 'cluster.internal:7233', metadata: { 'x-team': 'rl' } },
    });
    const tls = target.connection.tls;
    if (typeof tls !== 'object') throw new Error(`expected TLS options, got ${String(tls)}`);
    expect(Buffer.from(tls.clientCertPair!.crt).toString()).toBe('CLIENT PEM');
    expect(Buffer.from(tls.serverRootCACertificate!).toString()).toBe('CA PEM');
  });

  it('reads a profile file (Temporal Cloud with an API key)', async () => {
    const file = join(dir, 'temporal.toml');
    await writeFile(
      file,
      ['[profile.cloud]', 'address = "ns.acct.tmprl.cloud:7233"', 'namespace = "ns.acct"', 'api_key = "k"', ''].join('\n'),
    );
    expect(viewTemporal({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'cloud' })).toEqual({
      connection: { address: 'ns.acct.tmprl.cloud:7233', apiKey: 'k', tls: true },
      namespace: 'ns.acct',
      configured: true,
    });
  });

  it('reports a configured server it cannot reach, naming it, instead of showing runs without Temporal', async () => {
    await expect(connectRunWorkflows({ ...noFile, TEMPORAL_ADDRESS: '127.0.0.1:1' })).rejects.toThrow(/Temporal at 127\.0\.0\.1:1/);
  });
});
