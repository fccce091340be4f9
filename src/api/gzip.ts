import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import type { MiddlewareHandler } from 'hono';

const gunzipAsync = promisify(gunzip);
const gzipAsync = promisify(gzip);

/** Why a gzip request body was refused. */
export class GzipBodyError extends Error {
  constructor(readonly reason: 'invalid' | 'too_large') {
    super(reason === 'invalid' ? 'Invalid gzip payload' : 'Decompressed body too large');
    this.name = 'GzipBodyError';
  }
}

/** True when a `Content-Encoding` header asks for gzip, matched as loosely as Atropos does. */
export function isGzipEncoded(contentEncoding: string | undefined): boolean {
  return contentEncoding?.toLowerCase().includes('gzip') ?? false;
}

/**
 * Decompresses a gzip body, refusing to produce more than `maxBytes`, so a small bomb cannot
 * exhaust memory.
 */
export async function gunzipLimited(data: Uint8Array, maxBytes: number): Promise<Uint8Array> {
  try {
    return await gunzipAsync(data, { maxOutputLength: Math.max(1, maxBytes) });
  } catch (error) {
    const code = (error as { code?: string }).code;
    throw new GzipBodyError(code === 'ERR_BUFFER_TOO_LARGE' ? 'too_large' : 'invalid');
  }
}

/**
 * Gzips responses of at least `minimumSize` bytes for clients whose `Accept-Encoding` mentions gzip,
 * as Starlette's `GZipMiddleware(minimum_size=1000)` does. Responses here are small JSON buffered in
 * memory anyway, so the body is compressed whole and gets an exact `Content-Length`.
 */
export function gzipResponses(minimumSize = 1000): MiddlewareHandler {
  return async (c, next) => {
    await next();
    if (!c.req.header('Accept-Encoding')?.includes('gzip')) return;
    if (c.res.headers.has('Content-Encoding') || c.res.body === null) return;
    const body = new Uint8Array(await c.res.arrayBuffer());
    const headers = new Headers(c.res.headers);
    headers.append('Vary', 'Accept-Encoding');
    let payload: Uint8Array = body;
    if (body.byteLength >= minimumSize) {
      payload = await gzipAsync(body);
      headers.set('Content-Encoding', 'gzip');
    }
    headers.set('Content-Length', String(payload.byteLength));
    const status = c.res.status;
    // Cleared first: assigning over a response copies its headers, stale Content-Length included.
    c.res = undefined;
    c.res = new Response(payload, { status, headers });
  };
}
