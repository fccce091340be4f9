import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** PEM files of a throwaway PKI: a CA, a server certificate for localhost and 127.0.0.1, a client certificate. */
export interface TestCertificates {
  caFile: string;
  serverCertFile: string;
  serverKeyFile: string;
  clientCertFile: string;
  clientKeyFile: string;
}

async function openssl(args: string[]): Promise<void> {
  try {
    await run('openssl', args);
  } catch (error) {
    throw new Error(`openssl ${args[0]} failed (install Debian's openssl): ${(error as { stderr?: string }).stderr ?? error}`);
  }
}

/** A leaf certificate signed by the CA, with the extensions TLS stacks insist on (SAN, key usages). */
async function leaf(dir: string, ca: { cert: string; key: string }, name: string, subject: string, extensions: string[]) {
  const files = {
    cert: join(dir, `${name}.pem`),
    key: join(dir, `${name}.key`),
    csr: join(dir, `${name}.csr`),
    ext: join(dir, `${name}.ext`),
  };
  await openssl([
    'req',
    '-new',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    files.key,
    '-out',
    files.csr,
    '-subj',
    subject,
  ]);
  await writeFile(files.ext, `${['basicConstraints=critical,CA:FALSE', 'keyUsage=critical,digitalSignature', ...extensions].join('\n')}\n`);
  await openssl([
    'x509',
    '-req',
    '-in',
    files.csr,
    '-CA',
    ca.cert,
    '-CAkey',
    ca.key,
    '-CAcreateserial',
    '-days',
    '2',
    '-sha256',
    '-extfile',
    files.ext,
    '-out',
    files.cert,
  ]);
  return files;
}

/** Generates the PKI into `dir` with Debian's openssl; nothing is reused between tests. */
export async function makeCertificates(dir: string): Promise<TestCertificates> {
  await mkdir(dir, { recursive: true });
  const ca = { cert: join(dir, 'ca.pem'), key: join(dir, 'ca.key') };
  await openssl([
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    ca.key,
    '-out',
    ca.cert,
    '-days',
    '2',
    '-sha256',
    '-subj',
    '/CN=Clotho test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  const server = await leaf(dir, ca, 'server', '/CN=localhost', [
    'subjectAltName=DNS:localhost,IP:127.0.0.1',
    'extendedKeyUsage=serverAuth',
  ]);
  const client = await leaf(dir, ca, 'client', '/CN=clotho-worker', ['extendedKeyUsage=clientAuth']);
  return {
    caFile: ca.cert,
    serverCertFile: server.cert,
    serverKeyFile: server.key,
    clientCertFile: client.cert,
    clientKeyFile: client.key,
  };
}
