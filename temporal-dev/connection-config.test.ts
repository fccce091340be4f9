import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configuredTemporal } from './connection-config.js';
import { ensureDevServer } from './ensure.js';

let dir: string;
/** No profile file unless a test writes one: the machine's ~/.config/temporalio must not leak in. */
let noFile: Record<string, string>;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clotho-connection-config-'));
  noFile = { TEMPORAL_CONFIG_FILE: join(dir, 'absent.toml') };
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('configuredTemporal', () => {
  it('is undefined when neither the environment nor a profile names an address', () => {
    expect(configuredTemporal({ ...noFile, TEMPORAL_NAMESPACE: 'ns', TEMPORAL_ADDRESS: undefined })).toBeUndefined();
    expect(configuredTemporal({ ...noFile, TEMPORAL_ADDRESS: '' })).toBeUndefined();
  });

  it('reads TLS files from TEMPORAL_TLS_* into the options both connection kinds take', async () => {
    const files = { ca: join(dir, 'ca.pem'), crt: join(dir, 'client.pem'), key: join(dir, 'client.key') };
    await writeFile(files.ca, 'CA PEM');
    await writeFile(files.crt, 'CLIENT PEM');
    await writeFile(files.key, 'KEY PEM');
    const configured = configuredTemporal({
      ...noFile,
      TEMPORAL_ADDRESS: 'cluster.internal:7233',
      TEMPORAL_NAMESPACE: 'training',
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: files.ca,
      TEMPORAL_TLS_SERVER_NAME: 'frontend.internal',
      TEMPORAL_TLS_CLIENT_CERT_PATH: files.crt,
      TEMPORAL_TLS_CLIENT_KEY_PATH: files.key,
    });
    expect(configured?.namespace).toBe('training');
    const tls = configured?.connection.tls;
    expect(configured?.connection.address).toBe('cluster.internal:7233');
    expect(typeof tls === 'object' && tls !== null).toBe(true);
    if (typeof tls !== 'object' || tls === null) return;
    expect(tls.serverNameOverride).toBe('frontend.internal');
    expect(Buffer.from(tls.serverRootCACertificate!).toString()).toBe('CA PEM');
    expect(Buffer.from(tls.clientCertPair!.crt).toString()).toBe('CLIENT PEM');
    expect(Buffer.from(tls.clientCertPair!.key).toString()).toBe('KEY PEM');
  });

  it('turns TLS on for an API key (Temporal Cloud) and passes gRPC metadata', () => {
    const configured = configuredTemporal({
      ...noFile,
      TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233',
      TEMPORAL_API_KEY: 'secret-key',
      TEMPORAL_GRPC_META_X_TEAM: 'rl',
    });
    expect(configured?.connection).toEqual({
      address: 'ns.acct.tmprl.cloud:7233',
      apiKey: 'secret-key',
      tls: true,
      metadata: { 'x-team': 'rl' },
    });
  });

  it('reads a profile file, and the environment overrides it', async () => {
    const file = join(dir, 'temporal.toml');
    await writeFile(
      file,
      ['[profile.prod]', 'address = "prod.example:7233"', 'namespace = "rl-prod"', 'api_key = "from-file"', ''].join('\n'),
    );
    const fromFile = configuredTemporal({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'prod' });
    expect(fromFile).toEqual({ connection: { address: 'prod.example:7233', apiKey: 'from-file', tls: true }, namespace: 'rl-prod' });
    const overridden = configuredTemporal({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'prod', TEMPORAL_NAMESPACE: 'rl-test' });
    expect(overridden?.namespace).toBe('rl-test');
    expect(() => configuredTemporal({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'missing' })).toThrow(/missing/);
  });
});

describe('ensureDevServer with a configured server', () => {
  it('hands the TLS and API key through in `connection`, without probing or starting anything', async () => {
    const endpoint = await ensureDevServer({
      env: { ...noFile, TEMPORAL_ADDRESS: 'cloud.example:7233', TEMPORAL_NAMESPACE: 'ns.acct', TEMPORAL_API_KEY: 'k' },
      cliPath: '/nonexistent',
    });
    expect(endpoint).toMatchObject({ address: 'cloud.example:7233', namespace: 'ns.acct', started: false });
    expect(endpoint.connection).toEqual({ address: 'cloud.example:7233', apiKey: 'k', tls: true });
  });
});
