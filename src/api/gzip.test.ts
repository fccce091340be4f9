import { gunzipSync, gzipSync } from 'node:zlib';
import { beforeEach, describe, expect, it } from 'vitest';
import { createApi } from './app.js';
import { FakeTrajectoryService, sampleGroup } from '../../test/support/fake-trajectory-service.js';
import { GzipBodyError, gunzipLimited, isGzipEncoded } from './gzip.js';

let service: FakeTrajectoryService;
let app: ReturnType<typeof createApi>;

beforeEach(() => {
  service = new FakeTrajectoryService();
  app = createApi({ service });
});

describe('gzip request bodies', () => {
  it('inflates a gzip body as Atropos envs send it', async () => {
    const group = sampleGroup(4, 200);
    const res = await app.request('/scored_data', {
      method: 'POST',
      body: gzipSync(Buffer.from(JSON.stringify(group))),
      headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' },
    });
    expect(await res.json()).toEqual({ status: 'received' });
    expect(service.queue[0]?.tokens).toEqual(group.tokens);
  });

  it('matches Content-Encoding loosely and bounds what it inflates', async () => {
    expect(isGzipEncoded('x-gzip')).toBe(true);
    expect(isGzipEncoded('identity')).toBe(false);
    expect(isGzipEncoded(undefined)).toBe(false);
    const packed = gzipSync(Buffer.alloc(5000));
    expect((await gunzipLimited(packed, 5000)).byteLength).toBe(5000);
    await expect(gunzipLimited(packed, 4999)).rejects.toEqual(new GzipBodyError('too_large'));
    await expect(gunzipLimited(Buffer.from('plain'), 5000)).rejects.toEqual(new GzipBodyError('invalid'));
  });
});

describe('gzip responses', () => {
  const fetchLatest = (headers: Record<string, string>) => app.request('/latest_example', { headers });

  beforeEach(async () => {
    await app.request('/scored_data', { method: 'POST', body: JSON.stringify(sampleGroup(4, 200)) });
  });

  it('compresses responses of at least 1000 bytes when the client accepts gzip', async () => {
    const res = await fetchLatest({ 'Accept-Encoding': 'gzip, deflate' });
    expect(res.headers.get('content-encoding')).toBe('gzip');
    expect(res.headers.get('vary')).toMatch(/Accept-Encoding/);
    const raw = Buffer.from(await res.arrayBuffer());
    expect(Number(res.headers.get('content-length'))).toBe(raw.byteLength);
    expect(JSON.parse(gunzipSync(raw).toString()).tokens).toHaveLength(4);
  });

  it('leaves small responses and clients without gzip alone', async () => {
    const small = await app.request('/', { headers: { 'Accept-Encoding': 'gzip' } });
    expect(small.headers.get('content-encoding')).toBeNull();
    expect(await small.json()).toEqual({ message: 'AtroposLib API' });
    const plain = await fetchLatest({});
    expect(plain.headers.get('content-encoding')).toBeNull();
    expect(((await plain.json()) as { tokens: unknown[] }).tokens).toHaveLength(4);
  });
});
