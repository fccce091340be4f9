import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import type { LoadedEnvironment } from '../env/loaded.js';
import { FileSystemStore } from '../store/trajectory-store.js';
import { groupResource, setupKey } from './environment-context.js';

/** A store in a directory of its own, removed when the test ends. */
async function scratchStore(): Promise<FileSystemStore> {
  const root = await mkdtemp(join(tmpdir(), 'clotho-group-resource-'));
  onTestFinished(() => rm(root, { recursive: true, force: true }));
  return new FileSystemStore(root);
}

const address = { runId: 'run', environment: 'env', itemIndex: 3 };
const environment = (setup?: () => unknown) => ({ definition: { setup } }) as unknown as LoadedEnvironment;

describe('groupResource', () => {
  it('hands out what setup returned, read from the store', async () => {
    const store = await scratchStore();
    await store.put(setupKey(address), { value: { sandbox: 'http://127.0.0.1:9' } });
    expect(
      await groupResource(
        store,
        address,
        environment(() => null),
      ),
    ).toEqual({ sandbox: 'http://127.0.0.1:9' });
  });

  it('is null without asking the store when the environment has no setup (its groups ran none)', async () => {
    const store = await scratchStore();
    const read = vi.spyOn(store, 'tryGet');
    expect(await groupResource(store, address, environment())).toBeNull();
    expect(read).not.toHaveBeenCalled();
    read.mockRestore();
  });
});
