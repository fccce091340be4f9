import type { ChaosOptions } from './run.js';

/** A chaos run's size and schedule: everything but the seed and where it writes. */
export type ChaosProfile = Omit<ChaosOptions, 'seed' | 'log' | 'recordHistoriesTo' | 'keep'>;

/**
 * The short version, in `npm test`: each process killed twice, in about a minute and a half on two cores. Bounds
 * are what a recovery may take beyond its restart delay: the restarted process's start-up (2–5 s of tsx and
 * Temporal connections on a busy machine) plus what Temporal waits before it moves work off the dead worker:
 * - env: a workflow task the dead worker had started (5 s, WORKFLOW_TASK_TIMEOUT_MS; a group's turns run in it by
 *   default) or a model call on the LLM queue it had in flight (10 s heartbeat timeout), then the next group;
 * - api: a workflow task the dead worker had started (5 s); a task on its sticky queue is taken over at start-up;
 * - trainer: the lease (5 s) of a batch the dead trainer held, when no other batch is waiting;
 * - temporal: the server's start-up and every client reconnecting.
 */
export const SHORT: ChaosProfile = {
  schedule: {
    killsPerTarget: 2,
    killDelayS: [0.5, 3],
    restartDelayS: [1, 3],
    bounds: { env: 20, api: 15, trainer: 12, temporal: 20 },
    giveUpS: 60,
    minGroupsLeft: 8,
  },
  groupSize: 2,
  numSteps: 120,
  maxBatchesOffpolicy: 2,
  leaseSeconds: 5,
  modelDelayMs: 800,
  endTimeoutS: 120,
  rolloutHistories: 3,
};

/** The long version (`npm run test:chaos`): more kills of each process and a larger run. */
export const LONG: ChaosProfile = {
  ...SHORT,
  schedule: { ...SHORT.schedule, killsPerTarget: 4, killDelayS: [0.5, 6] },
  numSteps: 400,
  endTimeoutS: 300,
  rolloutHistories: 5,
};

/**
 * The short version of the Atropos run (`clotho serve --atropos arithmetic_env.py`, in `npm test`): its Python worker
 * killed -9 twice mid-group, its command coming back once as `clotho serve --atropos` and once as `clotho worker
 * --atropos`. The dying command fails the attempts its worker had started, so a killed worker's collects move as soon
 * as its replacement polls; that one's start-up (node, then Python importing Atropos and building the environment:
 * 10–20 s on a busy two-core machine) varies most, so the bound counts from it being up: up + 25 s. The 25 s are one
 * 10 s heartbeat timeout (should the release fail, or Temporal hand a retried collect, or a workflow task on the dead
 * command's sticky queue, to a poll the dead process left open, temporalio/temporal#1058, as the MCP crash test saw;
 * seen here too), the collect itself, its delivery and the batcher's next reading (1–3 s), and the rest for a loaded
 * CI machine, where timing bounds are what flakes first.
 */
export const ATROPOS_SHORT: ChaosProfile = {
  ...SHORT,
  atropos: true,
  schedule: {
    ...SHORT.schedule,
    targets: ['env'],
    killsPerTarget: 2,
    boundFloorS: 0,
    bounds: { ...SHORT.schedule.bounds, env: 25 },
    giveUpS: 90,
  },
  numSteps: 30,
};

/**
 * The long version of the Atropos run (`CHAOS_ATROPOS=1 npm run test:chaos`): the Python worker killed four times.
 * Not yet every process: with `CHAOS_TARGETS=env,api,trainer,temporal`, a run whose Temporal server was killed had its
 * Python worker stop taking tasks (seed 2826878972), and its command then outlived the worker's kill.
 */
export const ATROPOS_LONG: ChaosProfile = {
  ...ATROPOS_SHORT,
  schedule: { ...ATROPOS_SHORT.schedule, killsPerTarget: 4, killDelayS: [0.5, 6] },
  numSteps: 300,
  endTimeoutS: 300,
  rolloutHistories: 5,
};
