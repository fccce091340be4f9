import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureDevServer } from './ensure.js';
import { CLOTHO_SEARCH_ATTRIBUTES, listCustomSearchAttributes } from './search-attributes.js';
import { isServerListening } from './server.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clotho-ensure-test-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('ensureDevServer', () => {
  it('uses TEMPORAL_ADDRESS as is, without probing or starting anything', async () => {
    const endpoint = await ensureDevServer({
      env: { TEMPORAL_ADDRESS: 'temporal.example:7233', TEMPORAL_NAMESPACE: 'prod' },
      cliPath: '/nonexistent',
    });
    expect(endpoint).toMatchObject({ address: 'temporal.example:7233', namespace: 'prod', started: false });
    await endpoint.stop();
  });

  it('starts a server once, reuses it afterwards (restoring missing search attributes), and only the starter stops it', async () => {
    // Port 0: the server takes free ports itself, retrying when one is taken before it binds (a port handed out by
    // freePort() could be bound by a parallel test first).
    const options = { env: {}, stateDir: dir, dbFilename: null };
    const first = await ensureDevServer({ ...options, port: 0 });
    try {
      expect(first).toMatchObject({
        address: expect.stringMatching(/^127\.0\.0\.1:[1-9]\d*$/),
        namespace: 'default',
        started: true,
        uiUrl: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      });
      const port = Number(first.address.split(':')[1]);

      const connection = await Connection.connect({ address: first.address });
      try {
        await connection.operatorService.removeSearchAttributes({ namespace: 'default', searchAttributes: ['ClothoMeanScore'] });
        expect((await listCustomSearchAttributes(connection, 'default')).has('ClothoMeanScore')).toBe(false);

        const second = await ensureDevServer({ ...options, port });
        expect(second).toMatchObject({ address: first.address, namespace: 'default', started: false });
        const registered = await listCustomSearchAttributes(connection, 'default');
        expect([...registered.keys()]).toEqual(expect.arrayContaining(Object.keys(CLOTHO_SEARCH_ATTRIBUTES)));

        await second.stop();
        expect(await isServerListening(first.address)).toBe(true);
      } finally {
        await connection.close();
      }
    } finally {
      await first.stop();
    }
    expect(await isServerListening(first.address, 500)).toBe(false);
  });
});
