// A single-node Temporal cluster on PostgreSQL for Clotho:
//   node --import tsx temporal-dev/cluster-cli.ts start|stop|status|env [options]
// `start` builds the server once (minutes), creates PostgreSQL and the schema at the first start, and prints the
// environment that points Clotho (and the `temporal` CLI) at the cluster; `env` prints it again.
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import type { ClusterAuthorization, ClusterTlsFiles } from './cluster-config.js';
import { clusterClientEnv } from './cluster-connect.js';
import { clusterStatus, startCluster, stopCluster } from './cluster.js';

const HELP = `Usage: node --import tsx temporal-dev/cluster-cli.ts <start|stop|status|env> [options]

A Temporal server (go.temporal.io/server, built once into <CLOTHO_HOME>/cluster/bin) on a PostgreSQL cluster of its
own (Debian's postgresql), both in the state dir, both running in the background until \`stop\`.

Commands:
  start    start PostgreSQL and the server unless running (first start: initdb, role, databases, schema), register
           the namespace and Clotho's search attributes; print the client environment
  stop     stop the server, then PostgreSQL; every file stays
  status   whether it runs and serves, its address and pids; exit code 1 when not serving
  env      print the client environment (export lines): TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TLS_*

Options:
  --state-dir <dir>          default $CLOTHO_HOME/cluster (or <repo>/.clotho/cluster)
  --port <n>                 frontend gRPC port at the first start (default: a free port, then kept)
  --namespace <name>         namespace to register (default: default)
  --tls-cert <pem>           frontend TLS: server certificate (with --tls-key, --tls-ca, --tls-server-name)
  --tls-key <pem>            its key
  --tls-ca <pem>             the CA that signed it (clients verify against it)
  --tls-server-name <host>   a host name in the certificate (default: localhost)
  --tls-client-ca <pem>      mutual TLS: clients need a certificate signed by this CA
  --tls-client-cert <pem>    mutual TLS: the client certificate the cluster's own clients present
  --tls-client-key <pem>     its key
  --jwks-url <url>           API keys: every call needs a JWT signed by a key of this JWKS (Temporal's default claim
                             mapper and authorizer; permissions claim "<namespace>:<role>", temporal-system:<role>
                             for all), with --admin-token-file
  --admin-token-file <file>  a JWT with temporal-system:admin, for the cluster's own calls (namespace, search
                             attributes); \`env\` prints it as TEMPORAL_API_KEY
  -h, --help`;

const OPTIONS = {
  'state-dir': { type: 'string' },
  port: { type: 'string' },
  namespace: { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  'tls-ca': { type: 'string' },
  'tls-server-name': { type: 'string' },
  'tls-client-ca': { type: 'string' },
  'tls-client-cert': { type: 'string' },
  'tls-client-key': { type: 'string' },
  'jwks-url': { type: 'string' },
  'admin-token-file': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const FlagsSchema = z.strictObject({
  'state-dir': z.string().min(1).optional(),
  port: z.coerce.number().int().min(1).max(65535).optional(),
  namespace: z.string().min(1).optional(),
  'tls-cert': z.string().min(1).optional(),
  'tls-key': z.string().min(1).optional(),
  'tls-ca': z.string().min(1).optional(),
  'tls-server-name': z.string().min(1).optional(),
  'tls-client-ca': z.string().min(1).optional(),
  'tls-client-cert': z.string().min(1).optional(),
  'tls-client-key': z.string().min(1).optional(),
  'jwks-url': z.url({ protocol: /^(https?|file)$/ }).optional(),
  'admin-token-file': z.string().min(1).optional(),
  help: z.boolean().optional(),
});
type Flags = z.infer<typeof FlagsSchema>;

function tlsOf(flags: Flags): ClusterTlsFiles | undefined {
  const { 'tls-cert': cert, 'tls-key': key, 'tls-ca': ca } = flags;
  if (cert === undefined && key === undefined && ca === undefined) return undefined;
  if (!cert || !key || !ca) throw new Error('--tls-cert, --tls-key and --tls-ca go together');
  const file = (path: string | undefined) => (path === undefined ? undefined : resolve(path));
  const clientCa = file(flags['tls-client-ca']);
  return {
    certFile: resolve(cert),
    keyFile: resolve(key),
    caFile: resolve(ca),
    serverName: flags['tls-server-name'] ?? 'localhost',
    ...(clientCa ? { clientCaFile: clientCa } : {}),
    ...(flags['tls-client-cert'] ? { clientCertFile: file(flags['tls-client-cert'])! } : {}),
    ...(flags['tls-client-key'] ? { clientKeyFile: file(flags['tls-client-key'])! } : {}),
  };
}

async function authorizationOf(flags: Flags): Promise<ClusterAuthorization | undefined> {
  const { 'jwks-url': jwksUrl, 'admin-token-file': tokenFile } = flags;
  if (jwksUrl === undefined && tokenFile === undefined) return undefined;
  if (!jwksUrl || !tokenFile) throw new Error('--jwks-url and --admin-token-file go together');
  const adminToken = (
    await readFile(tokenFile, 'utf8').catch((error: Error) => {
      throw new Error(`--admin-token-file ${tokenFile}: ${error.message}`);
    })
  ).trim();
  if (adminToken === '') throw new Error(`--admin-token-file ${tokenFile}: empty`);
  return { jwksUrl, adminToken };
}

const exports = (env: Record<string, string>) =>
  Object.entries(env)
    .map(([name, value]) => `export ${name}=${value}`)
    .join('\n');

/** Runs one command; returns the exit code. */
export async function clusterCli(args: string[], out = console.log, err = console.error): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    err(`cluster: ${(error as Error).message}\n${HELP}`);
    return 2;
  }
  const flags = FlagsSchema.safeParse(parsed.values);
  if (!flags.success) {
    for (const issue of flags.error.issues) err(`cluster: --${issue.path.join('.')}: ${issue.message}`);
    return 2;
  }
  const [command, ...extra] = parsed.positionals;
  if (flags.data.help || command === undefined) {
    out(HELP);
    return command === undefined && !flags.data.help ? 2 : 0;
  }
  if (extra.length > 0) {
    err(`cluster: unexpected arguments: ${extra.join(' ')}`);
    return 2;
  }
  const stateDir = flags.data['state-dir'];
  switch (command) {
    case 'start': {
      let tls: ClusterTlsFiles | undefined;
      let authorization: ClusterAuthorization | undefined;
      try {
        tls = tlsOf(flags.data);
        authorization = await authorizationOf(flags.data);
      } catch (error) {
        err(`cluster: ${(error as Error).message}`);
        return 2;
      }
      const cluster = await startCluster({
        ...(stateDir ? { stateDir } : {}),
        ...(flags.data.port ? { port: flags.data.port } : {}),
        ...(flags.data.namespace ? { namespace: flags.data.namespace } : {}),
        ...(tls ? { tls } : {}),
        ...(authorization ? { authorization } : {}),
        log: (line) => err(`cluster: ${line}`),
      });
      out(
        `${cluster.alreadyRunning ? 'already running' : 'started'}: Temporal ${cluster.version} on ${cluster.address}, pid ${cluster.pid}, log ${cluster.logFile}`,
      );
      out(exports(clusterClientEnv(cluster)));
      return 0;
    }
    case 'stop': {
      const stopped = await stopCluster(stateDir ? { stateDir } : {});
      out(stopped.server === undefined ? 'server not running' : `stopped server (pid ${stopped.server})`);
      out(stopped.postgres ? 'stopped PostgreSQL' : 'PostgreSQL not running');
      return 0;
    }
    case 'status':
    case 'env': {
      const status = await clusterStatus(stateDir ? { stateDir } : {});
      if (!status.record || !status.address) {
        err('cluster: none recorded in the state dir (run `start`)');
        return 1;
      }
      const { record } = status;
      const env = clusterClientEnv({
        address: status.address,
        namespace: record.namespace,
        ...(record.tls ? { tls: record.tls } : {}),
        ...(record.authorization ? { authorization: record.authorization } : {}),
      });
      if (command === 'env') {
        out(exports(env));
        return 0;
      }
      out(`server:     ${status.running ? `running (pid ${status.record.pid})` : 'not running'}${status.serving ? ', serving' : ''}`);
      out(`postgres:   ${status.postgresPid ? `running (pid ${status.postgresPid}, port ${status.record.postgres.port})` : 'not running'}`);
      out(`address:    ${status.address}${status.record.tls ? ' (TLS)' : ''}`);
      out(`namespace:  ${status.record.namespace}`);
      out(`version:    ${status.record.version}`);
      return status.serving ? 0 : 1;
    }
    default:
      err(`cluster: unknown command ${command}\n${HELP}`);
      return 2;
  }
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  clusterCli(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: Error) => {
      console.error(`cluster: ${error.message}`);
      process.exit(1);
    },
  );
}
