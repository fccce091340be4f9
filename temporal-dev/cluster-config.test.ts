import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { clusterConfig, clusterDynamicConfig, type ClusterConfigInput } from './cluster-config.js';

const input: ClusterConfigInput = {
  ip: '127.0.0.1',
  ports: {
    frontend: 17233,
    frontendHttp: 17243,
    frontendMembership: 16933,
    history: 17234,
    historyMembership: 16934,
    matching: 17235,
    matchingMembership: 16935,
    worker: 17239,
    workerMembership: 16939,
  },
  postgres: { ip: '127.0.0.1', port: 15432, user: 'temporal', password: 'pw' },
  databases: { default: 'temporal', visibility: 'temporal_visibility' },
  dynamicConfigFile: '/state/dynamic-config.yaml',
};
const tls = { certFile: '/c/server.pem', keyFile: '/c/server.key', caFile: '/c/ca.pem', serverName: 'localhost' };

describe('clusterConfig', () => {
  it('puts both stores on PostgreSQL (postgres12) and every service on the given ports of one address', () => {
    const config = parse(clusterConfig(input));
    expect(config.persistence.defaultStore).toBe('postgres-default');
    expect(config.persistence.visibilityStore).toBe('postgres-visibility');
    for (const [store, database] of [
      ['postgres-default', 'temporal'],
      ['postgres-visibility', 'temporal_visibility'],
    ]) {
      expect(config.persistence.datastores[store!].sql).toMatchObject({
        pluginName: 'postgres12',
        databaseName: database,
        connectAddr: '127.0.0.1:15432',
        connectProtocol: 'tcp',
        user: 'temporal',
        password: 'pw',
      });
    }
    expect(config.services.frontend.rpc).toEqual({ grpcPort: 17233, membershipPort: 16933, bindOnIP: '127.0.0.1', httpPort: 17243 });
    expect(config.services.history.rpc).toEqual({ grpcPort: 17234, membershipPort: 16934, bindOnIP: '127.0.0.1' });
    expect(config.services.matching.rpc.grpcPort).toBe(17235);
    expect(config.services.worker.rpc.grpcPort).toBe(17239);
    expect(config.clusterMetadata.clusterInformation.active.rpcAddress).toBe('127.0.0.1:17233');
    expect(config.dynamicConfigClient.filepath).toBe('/state/dynamic-config.yaml');
    // No listeners beyond the services': no metrics, no pprof.
    expect(config.global.metrics).toBeUndefined();
    expect(config.global.pprof).toBeUndefined();
    expect(config.global.tls).toBeUndefined();
  });

  it('configures frontend TLS, trusted by the system worker through the same CA', () => {
    const config = parse(clusterConfig({ ...input, tls }));
    expect(config.global.tls.frontend.server).toEqual({ certFile: '/c/server.pem', keyFile: '/c/server.key' });
    expect(config.global.tls.frontend.client).toEqual({ serverName: 'localhost', rootCaFiles: ['/c/ca.pem'] });
    expect(config.global.tls.systemWorker).toEqual({ client: { serverName: 'localhost', rootCaFiles: ['/c/ca.pem'] } });
  });

  it('requires client certificates under mutual TLS, and gives the system worker one', () => {
    const mutual = { ...tls, clientCaFile: '/c/clients-ca.pem', clientCertFile: '/c/worker.pem', clientKeyFile: '/c/worker.key' };
    const config = parse(clusterConfig({ ...input, tls: mutual }));
    expect(config.global.tls.frontend.server).toMatchObject({ requireClientAuth: true, clientCaFiles: ['/c/clients-ca.pem'] });
    expect(config.global.tls.systemWorker).toMatchObject({ certFile: '/c/worker.pem', keyFile: '/c/worker.key' });
    expect(() => clusterConfig({ ...input, tls: { ...tls, clientCaFile: '/c/clients-ca.pem' } })).toThrow(/client certificate/);
  });
});

describe('clusterDynamicConfig', () => {
  it('checks JWTs against the JWKS with the default claim mapper and authorizer, the system worker on the internal frontend', () => {
    const ports = { ...input.ports, internalFrontend: 17236, internalFrontendHttp: 17246, internalFrontendMembership: 16936 };
    const config = parse(clusterConfig({ ...input, ports, authorization: { jwksUrl: 'http://127.0.0.1:9999/jwks.json' } }));
    expect(config.global.authorization).toEqual({
      jwtKeyProvider: { keySourceURIs: ['http://127.0.0.1:9999/jwks.json'], refreshInterval: '1m' },
      permissionsClaimName: 'permissions',
      authorizer: 'default',
      claimMapper: 'default',
    });
    expect(config.services['internal-frontend'].rpc).toEqual({
      grpcPort: 17236,
      membershipPort: 16936,
      bindOnIP: '127.0.0.1',
      httpPort: 17246,
    });
    expect(parse(clusterConfig(input)).services['internal-frontend']).toBeUndefined();
    expect(() => clusterConfig({ ...input, authorization: { jwksUrl: 'http://127.0.0.1:9999/jwks.json' } })).toThrow(/internal frontend/);
  });

  it('turns off the version check and reads search attributes through', () => {
    const config = parse(clusterDynamicConfig());
    expect(config['frontend.enableServerVersionCheck']).toEqual([{ value: false }]);
    expect(config['system.forceSearchAttributesCacheRefreshOnRead']).toEqual([{ value: true }]);
  });
});
