import { freePort } from '../../../temporal-dev/index.js';
import type { Supervised } from './supervisor.js';
import { startApi, startEnv, startServer, startTrainer, type ChaosServer, type ChaosSetup, type EnvMode } from './processes.js';

/** The four kinds of process the chaos test kills. */
export type Target = 'env' | 'api' | 'trainer' | 'temporal';

/** A process that exited without the harness asking it to. */
export interface UnexpectedExit {
  name: string;
  code: number | string;
  at: number;
  tail: string;
}

/**
 * The live processes of a chaos run and how to kill and restart each. Exits the harness did not cause are recorded
 * (a process that dies of another's crash is a finding too).
 */
export class ChaosWorld {
  server!: ChaosServer;
  api!: Supervised;
  env!: Supervised;
  envMode: EnvMode = 'serve';
  trainer!: Supervised;
  /** The env id the first `clotho serve` registered as; later serve processes of the same run must get it back. */
  envId = -1;
  /** Env ids later serve processes registered as, when not `envId`. */
  envIdChanges: number[] = [];
  readonly exits: UnexpectedExit[] = [];
  private readonly expected = new Set<Supervised>();

  constructor(readonly setup: ChaosSetup) {}

  get address(): string {
    return this.server.address;
  }

  private watch(child: Supervised): Supervised {
    void child.exited.then((code) => {
      if (!this.expected.has(child)) this.exits.push({ name: child.name, code, at: Date.now(), tail: child.tail(15) });
    });
    return child;
  }

  async startAll(): Promise<void> {
    this.server = await startServer(this.setup);
    // Picked once the server runs: the dev server takes free ports of its own as it starts.
    this.setup.apiPort = await freePort();
    await this.start('api');
    await this.start('trainer');
    await this.start('env', 'serve');
  }

  /** Starts (or restarts) one process; resolves with the time it was ready (listening, registered, polling). */
  async start(target: Target, mode: EnvMode = 'serve'): Promise<number> {
    switch (target) {
      case 'temporal':
        this.server = await startServer(this.setup, this.server.server.port);
        return Date.now();
      case 'api': {
        const { process: child, readyAt } = await startApi(this.setup, this.address);
        this.api = this.watch(child);
        return readyAt;
      }
      case 'trainer': {
        const { process: child, readyAt } = await startTrainer(this.setup);
        this.trainer = this.watch(child);
        return readyAt;
      }
      case 'env': {
        const { process: child, readyAt, envId } = await startEnv(this.setup, this.address, mode);
        this.env = this.watch(child);
        this.envMode = mode;
        if (envId !== undefined) {
          if (this.envId < 0) this.envId = envId;
          else if (envId !== this.envId) this.envIdChanges.push(envId);
        }
        return readyAt;
      }
    }
  }

  /** kill -9 of the target's process group. */
  async kill(target: Target): Promise<void> {
    if (target === 'temporal') return this.server.kill();
    const child = this[target];
    this.expected.add(child);
    await child.kill();
  }

  /** Marks the env process's own exit (serve, at the end of its run) as expected. */
  expectExit(child: Supervised): void {
    this.expected.add(child);
  }

  /** Stops everything gracefully (SIGKILL after a few seconds), the server last. */
  async stopAll(): Promise<void> {
    const children = [this.trainer, this.env, this.api].filter(Boolean);
    for (const child of children) this.expected.add(child);
    await Promise.all(children.map((child) => child.stop(5_000)));
    await this.server?.stop();
  }
}
