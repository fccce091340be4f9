import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';

/**
 * Compares two secrets in time independent of where they differ. Both are hashed first so inputs
 * of different lengths compare in constant time too.
 */
export function secretsEqual(given: string, expected: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/**
 * Requires `Authorization: Bearer <token>` on every request but CORS preflights (browsers never
 * send credentials on those); anything else gets 401 in FastAPI's error shape.
 */
export function bearerAuth(token: string): MiddlewareHandler {
  return async (c, next) => {
    if (c.req.method === 'OPTIONS' && c.req.header('Access-Control-Request-Method')) return next();
    const match = /^Bearer\s+(.+)$/i.exec(c.req.header('Authorization') ?? '');
    if (!match?.[1] || !secretsEqual(match[1].trim(), token)) {
      c.header('WWW-Authenticate', 'Bearer');
      return c.json({ detail: 'Not authenticated' }, 401);
    }
    return next();
  };
}
