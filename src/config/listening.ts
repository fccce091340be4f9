import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { z } from 'zod';

/**
 * The listening policy of every HTTP face of Clotho (`clotho api`, `clotho inference`, `clotho proxy`), decided once
 * here. On a loopback host nothing is asked. Any other host is refused unless the face has a bearer token (`--token`,
 * or the face's own variable: {@link HttpFace.tokenEnv}) or is told the network is trusted (`--trusted-network`, or
 * `CLOTHO_TRUSTED_NETWORK=1`, for clients such as Atropos's trainers that send no token; it warns on start). A face
 * with a token answers every request without it 401 naming the header, but `GET /health` and CORS preflights.
 */

/** One HTTP face: its command, where its token comes from, and what anyone who reaches it could do without one. */
export interface HttpFace {
  command: string;
  tokenEnv: string;
  exposes: string;
}

export const API_FACE: HttpFace = {
  command: 'clotho api',
  tokenEnv: 'CLOTHO_API_TOKEN',
  exposes: 'register a trainer, post groups and take batches',
};
export const INFERENCE_FACE: HttpFace = {
  command: 'clotho inference',
  tokenEnv: 'CLOTHO_INFERENCE_TOKEN',
  exposes: 'generate with the policy and swap its weights for any GGUF in --weights-dir',
};
export const PROXY_FACE: HttpFace = {
  command: 'clotho proxy',
  tokenEnv: 'CLOTHO_PROXY_TOKEN',
  exposes: 'open sessions and generate with the policy, and point the proxy at other servers (/setup)',
};

/** The variable that says the network is trusted, for every face. */
export const TRUSTED_NETWORK_ENV = 'CLOTHO_TRUSTED_NETWORK';

/** The flags of the policy, for `parseArgs`. */
export const LISTENING_OPTIONS = {
  host: { type: 'string' },
  token: { type: 'string' },
  'trusted-network': { type: 'boolean' },
} as const;

/** Their schemas, to spread into a command's flag schema. */
export const ListeningFlagsShape = {
  host: z.string().min(1).default('127.0.0.1'),
  token: z.string().min(1).optional(),
  'trusted-network': z.boolean().default(false),
};

/** The help rows of the policy's flags. */
export const listeningHelp = (face: HttpFace) =>
  `  --host <addr>        address to listen on (default 127.0.0.1); any other than loopback needs --token or
                       --trusted-network
  --token <secret>     require "Authorization: Bearer <secret>" on every request but GET /health (default
                       $${face.tokenEnv})
  --trusted-network    serve a host other than loopback without a token (or ${TRUSTED_NETWORK_ENV}=1), for clients
                       that send none, on a network only they can reach; warns on start`;

/** Loopback addresses, reachable only from this machine, so serving them without a token is safe. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** How a face listens: with the token it requires (if any) and a warning to print, or refused with the reason. */
export type Listening = { ok: true; token?: string; warning?: string } | { ok: false; error: string };

/** Decides how `face` may listen on `host:port`, given its flags and the environment. */
export function decideListening(
  face: HttpFace,
  flags: { host: string; port: number; token?: string | undefined; trustedNetwork: boolean },
  env: Record<string, string | undefined>,
): Listening {
  const token = flags.token ?? (env[face.tokenEnv] || undefined);
  if (token !== undefined || isLoopback(flags.host)) return { ok: true, ...(token === undefined ? {} : { token }) };
  if (!flags.trustedNetwork && env[TRUSTED_NETWORK_ENV] !== '1') {
    return {
      ok: false,
      error:
        `${face.command}: --host ${flags.host} is reachable from other machines; set --token (or ${face.tokenEnv}) to require a ` +
        `bearer token, or --trusted-network (${TRUSTED_NETWORK_ENV}=1) to serve clients that send none on a network only they can reach`,
    };
  }
  return {
    ok: true,
    warning: `${face.command}: warning: --trusted-network: anyone who can reach ${flags.host}:${flags.port} can ${face.exposes}, without a token`,
  };
}

/**
 * Compares two secrets in time independent of where they differ. Both are hashed first so inputs
 * of different lengths compare in constant time too.
 */
export function secretsEqual(given: string, expected: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/**
 * Requires `Authorization: Bearer <token>` on every request but `GET /health` and CORS preflights (browsers never send
 * credentials on those). A request without it is answered 401 by `refuse`, in the face's own error shape, with a
 * message naming the header.
 */
export function bearerAuth(token: string, face: HttpFace, refuse: (c: Context, message: string) => Response): MiddlewareHandler {
  const message = `missing or wrong bearer token: send "Authorization: Bearer <token>" with the token ${face.command} was given (--token or ${face.tokenEnv})`;
  return async (c, next) => {
    if (c.req.method === 'OPTIONS' && c.req.header('Access-Control-Request-Method')) return next();
    if (c.req.method === 'GET' && c.req.path === '/health') return next();
    const match = /^Bearer\s+(.+)$/i.exec(c.req.header('Authorization') ?? '');
    if (!match?.[1] || !secretsEqual(match[1].trim(), token)) {
      c.header('WWW-Authenticate', 'Bearer');
      return refuse(c, message);
    }
    return next();
  };
}

/** A 401 in OpenAI's error shape (`clotho inference`, `clotho proxy`): what OpenAI clients read. */
export const openAIUnauthorized = (c: Context, message: string) =>
  c.json({ error: { message, type: 'invalid_request_error', param: null, code: 'invalid_api_key' } }, 401);
