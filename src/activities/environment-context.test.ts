import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { LoadedEnvironment } from '../env/loaded.js';
import { FileSystemStore } from '../store/trajectory-store.js';
import { groupResource, setupKey } from './environment-context.js';

let root: string;
let store: FileSystemStore;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'clotho-group-resource-'));
  store = new FileSystemStore(root);
});
afterAll(() => rm(root, { recursive: true, force: true }));

const address = { runId: 'run', environment: 'env', itemIndex: 3 };
const environment = (setup?: () => unknown) => ({ definition: { setup } }) as unknown as LoadedEnvironment;

describe('groupResource', () => {
  it('hands out what setup returned, read from the store', async () => {
    await store.put(setupKey(address), { value: { sandbox: 'http://127.0.0.1:9' } });
    expect(await groupResource(store, address, environment(() => null))).toEqual({ sandbox: 'http://127.0.0.1:9' });
  });

  it('is null without asking the store when the environment has no setup (its groups ran none)', async () => {
    const read = vi.spyOn(store, 'tryGet');
    expect(await groupResource(store, { ...address, itemIndex: 4 }, environment())).toBeNull();
    expect(read).not.toHaveBeenCalled();
    read.mockRestore();
  });
});
