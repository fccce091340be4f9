import { freePort } from '../../../temporal-dev/index.js';
import type { Supervised } from './supervisor.js';
import {
  atroposWorkerPid,
  startApi,
  startEnv,
  startServer,
  startTrainer,
  type ChaosServer,
  type ChaosSetup,
  type EnvMode,
} from './processes.js';

/** The four kinds of process the chaos test kills. */
export type Target = 'env' | 'api' | 'trainer' | 'temporal';

/** A process that exited without the harness asking it to. */
export interface UnexpectedExit {
  name: string;
  code: number | string;
  at: number;
  tail: string;
}

/** Seconds an `--atropos` command may take to exit once its Python worker is dead. */
const COMMAND_EXIT_S = 30;

/**
 * The live processes of a chaos run and how to kill and restart each. Exits the harness did not cause are recorded
 * (a process that dies of another's crash is a finding too). In a run of an Atropos environment, the environment
 * process that is killed is the Python worker, in the process group of its own its command started it in.
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

  /** `modelCallsInFlight`: calls the model has not answered yet (groups mid-collect, in an Atropos run). */
  constructor(
    readonly setup: ChaosSetup,
    private readonly modelCallsInFlight: () => number = () => 0,
  ) {}

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

  /** kill -9 of the target's process group (of an Atropos run's Python worker, for `env`). */
  async kill(target: Target): Promise<void> {
    if (target === 'temporal') return this.server.kill();
    const child = this[target];
    this.expected.add(child);
    if (target === 'env' && this.setup.atropos) return this.killAtroposWorker(child);
    await child.kill();
  }

  /**
   * Waits until a group is mid-collect (the model has a call of it in flight) or `timeoutMs` has passed, and says how
   * many calls are in flight: an Atropos run's worker is killed mid-group, where the crash costs the most.
   */
  async midGroup(timeoutMs = 10_000): Promise<number> {
    const until = Date.now() + timeoutMs;
    while (this.modelCallsInFlight() === 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
    return this.modelCallsInFlight();
  }

  /**
   * SIGKILL of the Python worker's process group; its command, which cannot run the run without it, must then exit
   * by itself (`serve` with the worker's death, `worker` stopping its workflow worker). One still running after
   * {@link COMMAND_EXIT_S} is killed too, and the kill fails with what it printed.
   */
  private async killAtroposWorker(command: Supervised): Promise<void> {
    const python = atroposWorkerPid(command);
    try {
      process.kill(-python, 'SIGKILL');
    } catch {
      // Gone already: its command exits all the same.
    }
    const timeout = new Promise((resolve) => setTimeout(resolve, COMMAND_EXIT_S * 1000, 'still running').unref());
    if ((await Promise.race([command.exited, timeout])) !== 'still running') return;
    await command.kill();
    throw new Error(`${command.name} did not exit within ${COMMAND_EXIT_S} s of its Python worker's kill:\n${command.tail(10)}`);
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
