import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An issuer of test JWTs as an identity provider issues them for Temporal's default claim mapper: an RSA key pair,
 * its public key served as a JWKS on loopback (what the server's `jwtKeyProvider` reads), RS256 tokens whose
 * `permissions` claim lists `<namespace>:<role>` (`temporal-system:<role>`: every namespace). Node's own crypto
 * signs: a JWT is three base64url parts, and the test needs nothing else of a JWT library.
 */
export interface JwtIssuer {
  /** `http://127.0.0.1:<port>/jwks.json`. */
  jwksUrl: string;
  token(permissions: string[], options?: { expiresInSeconds?: number }): string;
  close(): Promise<void>;
}

const KID = 'clotho-test-key';
const base64url = (value: object | Buffer) => (Buffer.isBuffer(value) ? value : Buffer.from(JSON.stringify(value))).toString('base64url');

/** A token signed with `key` under `kid`: a foreign key makes a token the server must refuse. */
export function signToken(key: KeyObject, kid: string, permissions: string[], expiresInSeconds = 3600): string {
  const now = Math.floor(Date.now() / 1000);
  const head = `${base64url({ alg: 'RS256', typ: 'JWT', kid })}.${base64url({ sub: 'clotho-test', permissions, iat: now, exp: now + expiresInSeconds })}`;
  return `${head}.${base64url(sign('sha256', Buffer.from(head), key))}`;
}

export function rsaKeys() {
  return generateKeyPairSync('rsa', { modulusLength: 2048 });
}

export async function startJwtIssuer(): Promise<JwtIssuer> {
  const { privateKey, publicKey } = rsaKeys();
  const jwks = JSON.stringify({ keys: [{ ...publicKey.export({ format: 'jwk' }), kid: KID, alg: 'RS256', use: 'sig' }] });
  const server: Server = createServer((request, response) => {
    if (request.url !== '/jwks.json') {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'content-type': 'application/json' }).end(jwks);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    jwksUrl: `http://127.0.0.1:${port}/jwks.json`,
    token: (permissions, options = {}) => signToken(privateKey, KID, permissions, options.expiresInSeconds),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export { KID as TEST_KID };
