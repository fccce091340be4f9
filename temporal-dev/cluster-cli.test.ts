import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { clusterCli } from './cluster-cli.js';

let dir: string;
let out: string[];
let err: string[];
const cli = (...args: string[]) =>
  clusterCli(
    args,
    (line) => out.push(line),
    (line) => err.push(line),
  );

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clotho-cluster-cli-'));
  out = [];
  err = [];
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('cluster-cli', () => {
  it('rejects unknown commands, flags and half a TLS setup before touching anything', async () => {
    expect(await cli('launch')).toBe(2);
    expect(err.join('\n')).toMatch(/unknown command launch/);
    expect(await cli('start', '--colour')).toBe(2);
    expect(await cli('start', '--port', 'x')).toBe(2);
    expect(err.join('\n')).toMatch(/--port: /);
    expect(await cli('start', '--state-dir', dir, '--tls-cert', 'a.pem')).toBe(2);
    expect(err.join('\n')).toMatch(/--tls-cert, --tls-key and --tls-ca go together/);
  });

  it('says when no cluster is recorded, and prints a recorded one’s client environment', async () => {
    expect(await cli('status', '--state-dir', dir)).toBe(1);
    expect(err.join('\n')).toMatch(/none recorded/);
    const record = {
      ip: '127.0.0.1',
      namespace: 'default',
      version: 'v1.32.1',
      ports: {
        frontend: 17233,
        frontendHttp: 1,
        frontendMembership: 2,
        history: 3,
        historyMembership: 4,
        matching: 5,
        matchingMembership: 6,
        worker: 7,
        workerMembership: 8,
      },
      postgres: { port: 15432, user: 'temporal', password: 'pw' },
      tls: {
        certFile: '/pki/server.pem',
        keyFile: '/pki/server.key',
        caFile: '/pki/ca.pem',
        serverName: 'localhost',
        clientCaFile: '/pki/ca.pem',
        clientCertFile: '/pki/client.pem',
        clientKeyFile: '/pki/client.key',
      },
    };
    await writeFile(join(dir, 'cluster.json'), JSON.stringify(record));
    expect(await cli('env', '--state-dir', dir)).toBe(0);
    expect(out).toEqual([
      [
        'export TEMPORAL_ADDRESS=127.0.0.1:17233',
        'export TEMPORAL_NAMESPACE=default',
        'export TEMPORAL_TLS_SERVER_CA_CERT_PATH=/pki/ca.pem',
        'export TEMPORAL_TLS_SERVER_NAME=localhost',
        'export TEMPORAL_TLS_CLIENT_CERT_PATH=/pki/client.pem',
        'export TEMPORAL_TLS_CLIENT_KEY_PATH=/pki/client.key',
      ].join('\n'),
    ]);
    out = [];
    // Recorded but not running: status says so, with exit code 1.
    expect(await cli('status', '--state-dir', dir)).toBe(1);
    expect(out.join('\n')).toMatch(/server: +not running/);
    expect(out.join('\n')).toMatch(/postgres: +not running/);
  });
});
