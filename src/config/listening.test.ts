import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { API_FACE, bearerAuth, decideListening, INFERENCE_FACE, isLoopback, openAIUnauthorized, PROXY_FACE } from './listening.js';

describe('the listening policy of the HTTP faces', () => {
  it('knows loopback addresses', () => {
    expect(['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]'].every(isLoopback)).toBe(true);
    expect(['0.0.0.0', '10.0.0.1', '::', 'example.com'].some(isLoopback)).toBe(false);
  });

  it("asks nothing on loopback, refuses another host without a token or trust, and reads each face's variable", () => {
    const flags = (host: string, more: { token?: string; trustedNetwork?: boolean } = {}) => ({
      host,
      port: 1,
      trustedNetwork: false,
      ...more,
    });
    expect(decideListening(INFERENCE_FACE, flags('127.0.0.1'), {})).toEqual({ ok: true });
    for (const face of [API_FACE, INFERENCE_FACE, PROXY_FACE]) {
      const refused = decideListening(face, flags('0.0.0.0'), {});
      expect(refused.ok).toBe(false);
      expect(!refused.ok && refused.error).toContain(`--token (or ${face.tokenEnv})`);
      expect(decideListening(face, flags('0.0.0.0'), { [face.tokenEnv]: 't' })).toEqual({ ok: true, token: 't' });
    }
    // A face reads only its own variable: an API token in the shell does not lock `clotho inference`.
    expect(decideListening(INFERENCE_FACE, flags('127.0.0.1'), { CLOTHO_API_TOKEN: 't' })).toEqual({ ok: true });
    expect(decideListening(PROXY_FACE, flags('::', { token: 'flag' }), { CLOTHO_PROXY_TOKEN: 'env' })).toEqual({ ok: true, token: 'flag' });
    for (const [more, env] of [
      [{ trustedNetwork: true }, {}],
      [{}, { CLOTHO_TRUSTED_NETWORK: '1' }],
    ] as const) {
      const trusted = decideListening(PROXY_FACE, flags('10.0.0.1', more), env);
      expect(trusted).toEqual({ ok: true, warning: expect.stringContaining('warning: --trusted-network') });
    }
  });

  it("answers 401 in the face's shape naming the header, and lets GET /health and CORS preflights through", async () => {
    const app = new Hono().use(bearerAuth('s3cret', INFERENCE_FACE, openAIUnauthorized));
    app.all('*', (c) => c.text('ok'));
    const denied = await app.request('/v1/models');
    expect(denied.status).toBe(401);
    expect(denied.headers.get('WWW-Authenticate')).toBe('Bearer');
    expect(((await denied.json()) as any).error).toMatchObject({
      code: 'invalid_api_key',
      message: expect.stringContaining('Authorization: Bearer'),
    });
    expect((await app.request('/v1/models', { headers: { Authorization: 'Bearer s3cre' } })).status).toBe(401);
    expect((await app.request('/v1/models', { headers: { Authorization: 'bearer s3cret' } })).status).toBe(200);
    expect((await app.request('/health')).status).toBe(200);
    expect((await app.request('/health', { method: 'POST' })).status).toBe(401);
    expect((await app.request('/x', { method: 'OPTIONS', headers: { 'Access-Control-Request-Method': 'POST' } })).status).toBe(200);
  });
});
