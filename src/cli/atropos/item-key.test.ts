import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../config/config-error.js';
import { atroposItemKeyPath, ensureAtroposItemKey } from './item-key.js';

let store: string;
beforeEach(async () => (store = await mkdtemp(join(tmpdir(), 'clotho-item-key-'))));
afterEach(() => rm(store, { recursive: true, force: true }));

describe("an Atropos run's item key", () => {
  it("is made once, in the run's store folder, readable by its owner only", async () => {
    const path = atroposItemKeyPath(store, 'run-1', 'gsm8k');
    expect(path).toBe(join(store, 'run-1', 'gsm8k', 'atropos-item-key'));
    expect(await ensureAtroposItemKey(path, 'run-1', false)).toBe(path);
    const key = await readFile(path, 'utf8');
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    // The run's later commands and its workers read the same key.
    await ensureAtroposItemKey(path, 'run-1', false);
    await ensureAtroposItemKey(path, 'run-1', true);
    expect(await readFile(path, 'utf8')).toBe(key);
  });

  it('is the same for two commands making it at once', async () => {
    const path = atroposItemKeyPath(store, 'run-2', 'gsm8k');
    await Promise.all([ensureAtroposItemKey(path, 'run-2', false), ensureAtroposItemKey(path, 'run-2', false)]);
    expect(await readFile(path, 'utf8')).toMatch(/^[0-9a-f]{64}$/);
  });

  it('refuses a worker joining a run that has none (it would sign with another key)', async () => {
    const path = atroposItemKeyPath(store, 'run-3', 'gsm8k');
    await expect(ensureAtroposItemKey(path, 'run-3', true)).rejects.toThrow(ConfigError);
    await expect(ensureAtroposItemKey(path, 'run-3', true)).rejects.toThrow(
      /run run-3 has no Atropos item key at .*: start it with clotho process or serve/,
    );
  });
});
