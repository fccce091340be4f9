import { describe, expect, it } from 'vitest';
import type { AtroposReady } from '../../schema/atropos.js';
import { AtroposWorkerGaveUp, superviseAtroposWorker, type RestartPolicy } from './supervisor.js';
import { AtroposWorkerExit, type AtroposWorker } from './worker-process.js';

const POLICY: RestartPolicy = { restarts: 3, windowMs: 600_000, firstDelayMs: 1_000, maxDelayMs: 3_000 };

/** Fake Python workers, started in turn: each exits when the test says, or when stopped. */
function workers(configs: Record<string, unknown>[] = []) {
  const started: { worker: AtroposWorker; exit(code: number | string): void }[] = [];
  let clock = 0;
  const events: string[] = [];
  const start = async (): Promise<AtroposWorker> => {
    const n = started.length;
    let exit!: (code: number | string) => void;
    const exited = new Promise<number | string>((resolve) => (exit = resolve));
    const ready = {
      identity: `${n}@host`,
      config: configs[n] ?? { group_size: 2, data_path_to_save_groups: `g_${n}.jsonl` },
    } as AtroposReady;
    const worker = { ready, pid: n, exited, lastLines: () => `worker ${n}'s lines`, stop: async () => exit('SIGTERM') };
    started.push({ worker, exit });
    return worker;
  };
  const options = {
    policy: POLICY,
    onExit: async (worker: AtroposWorker, code: number | string) => void events.push(`released ${worker.ready.identity} (${code})`),
    notice: (line: string) => void events.push(line),
    sleep: async (ms: number) => {
      clock += ms;
      events.push(`waited ${ms} ms`);
    },
    now: () => clock,
  };
  /** Resolves once worker `n` has started. */
  const startedWorker = async (n: number) => {
    while (started.length <= n) await new Promise((resolve) => setImmediate(resolve));
    return started[n]!;
  };
  return { start, options, events, startedWorker, advance: (ms: number) => (clock += ms) };
}

describe('superviseAtroposWorker', () => {
  it('starts a worker that died again, 1 s, 2 s, 3 s (at most) apart, after handing on what it held, and stops the current one', async () => {
    const fake = workers();
    const supervised = await superviseAtroposWorker(fake.start, fake.options);
    for (const n of [0, 1, 2]) (await fake.startedWorker(n)).exit('SIGKILL');
    await fake.startedWorker(3);
    await supervised.stop();
    expect(fake.events).toEqual([
      'released 0@host (SIGKILL)',
      'the Atropos worker exited (SIGKILL): restart 1 of at most 3 within 10 minutes, in 1 s',
      'waited 1000 ms',
      'released 1@host (SIGKILL)',
      'the Atropos worker exited (SIGKILL): restart 2 of at most 3 within 10 minutes, in 2 s',
      'waited 2000 ms',
      'released 2@host (SIGKILL)',
      'the Atropos worker exited (SIGKILL): restart 3 of at most 3 within 10 minutes, in 3 s',
      'waited 3000 ms',
      'released 3@host (SIGTERM)',
    ]);
  });

  it('gives up past its restarts within the window, with the last lines; restarts older than the window do not count', async () => {
    const fake = workers();
    const supervised = await superviseAtroposWorker(fake.start, fake.options);
    (await fake.startedWorker(0)).exit(1);
    (await fake.startedWorker(1)).exit(1);
    // Eleven minutes on, the first restart no longer counts: three more are allowed.
    fake.advance(11 * 60_000);
    for (const n of [2, 3, 4]) (await fake.startedWorker(n)).exit(1);
    await expect(supervised.gaveUp).rejects.toThrow(AtroposWorkerGaveUp);
    await expect(supervised.gaveUp).rejects.toThrow(
      "the Atropos worker exited (1) 4 times within 10 minutes; its last lines:\nworker 4's lines",
    );
    await supervised.stop();
  });

  it('counts a restart that exits before it serves, and gives up when a restart builds another config', async () => {
    const fake = workers([{ group_size: 2 }, { group_size: 2 }, { group_size: 3 }]);
    let starts = 0;
    const start = () =>
      ++starts === 2
        ? Promise.reject(new AtroposWorkerExit('the Atropos worker', 1, 'ModuleNotFoundError: no module named x'))
        : fake.start();
    const supervised = await superviseAtroposWorker(start, fake.options);
    (await fake.startedWorker(0)).exit('SIGKILL');
    await fake.startedWorker(1);
    expect(fake.events).toContain('the Atropos worker exited (did not serve): restart 2 of at most 3 within 10 minutes, in 2 s');
    (await fake.startedWorker(1)).exit('SIGKILL');
    await expect(supervised.gaveUp).rejects.toThrow("the restarted Atropos worker built another environment config than the run's");
    expect(fake.events.at(-1)).toBe('released 2@host (stopped)');
  });
});
