import { StepConfigSchema, type StepConfig } from './schemas.js';
import { STEP_NAMES, type StepName, type StepOptions, type StepOptionsTable } from '../schema/rollout.js';

/** Step configs of a run, in seconds, as config files and flags speak them. */
export type StepConfigTable = Record<StepName, StepConfig>;

/** Seconds the model servers may take per request; the LLM steps' timeouts follow them. */
export interface StepTimeouts {
  /** The policy servers' request timeout (`--openai.timeout`). */
  generate: number;
  /** The teacher servers' request timeout; the policy's when no teacher is configured. */
  teacher: number;
  /** The judge servers' request timeout; the policy's when no judge is configured. */
  judge?: number;
}

/**
 * LLM calls are slow and their servers flaky: retry long, and heartbeat so that a call on a dead worker is sent
 * again within seconds. Calls heartbeat every `PROGRESS_INTERVAL_MS` (2 s) while they wait for the server.
 */
const llmStep = (timeout: number): StepConfig =>
  StepConfigSchema.parse({ start_to_close_timeout: timeout, heartbeat_timeout: 10, maximum_attempts: 10, maximum_interval: 60 });

// Local work (parse, score, store writes) either finishes fast or is broken: fail early.
const localStep: StepConfig = StepConfigSchema.parse({ start_to_close_timeout: 60, maximum_attempts: 5, maximum_interval: 30 });

/**
 * Tool calls and group setup/teardown reach outside the worker (MCP servers, sandboxes): they get more time than
 * local work and keep their own task queue, and heartbeat while they run (`heartbeating`), so that one on a worker
 * that died is retried on another within the heartbeat timeout instead of stalling its episode for 300 s.
 */
const remoteStep: StepConfig = StepConfigSchema.parse({
  start_to_close_timeout: 300,
  heartbeat_timeout: 10,
  maximum_attempts: 5,
  maximum_interval: 30,
});

/**
 * Steps that run as local activities by default, whose task-queue round trips would cost more than the work
 * (issue 25, `npm run bench:tool-use` and `bench:orchestration` measure both placements): the environment's own steps,
 * and generation and tool calls too, so that an episode's turns are `takeTurns` activities in its workflow's worker.
 * The rule for moving generation (or tools) to its queue with `--steps.generate.local false`: when it must run on
 * other hosts than the workflows (`clotho worker` processes that serve the LLM queue scale it there), or when a call
 * usually takes longer than about 8 s (a local activity holds its workflow task, which the SDK renews every 4 s at
 * three history events each; a queued call is six events whatever it takes, and heartbeats its progress). `deliver`
 * runs in the env-run beside its launches, where a local activity is never replay-safe.
 */
const LOCAL_BY_DEFAULT: readonly StepName[] = ['prepare', 'generate', 'tool', 'step', 'parse', 'score', 'assemble'];

/** Default retry policy and timeouts of every workflow step, in seconds. */
export function defaultStepConfigs(timeouts: StepTimeouts): StepConfigTable {
  const table = {} as StepConfigTable;
  for (const name of STEP_NAMES) table[name] = { ...localStep };
  for (const name of ['tool', 'setup', 'teardown'] as const) table[name] = { ...remoteStep };
  // An agent's whole episode (issue 27): minutes, heartbeating its calls; a retry replays what the model answered.
  table.harness = { ...remoteStep, start_to_close_timeout: 3600 };
  table.generate = llmStep(timeouts.generate);
  table.teacher = llmStep(timeouts.teacher);
  table.judge = llmStep(timeouts.judge ?? timeouts.generate);
  for (const name of STEP_NAMES) table[name].local = LOCAL_BY_DEFAULT.includes(name);
  return table;
}

const ms = (seconds: number): number => Math.max(1, Math.round(seconds * 1000));

/** Converts one step's config (seconds) into the workflow's options (milliseconds). */
export function toStepOption(config: StepConfig): StepOptions {
  return {
    startToCloseTimeoutMs: ms(config.start_to_close_timeout),
    ...(config.heartbeat_timeout === undefined ? {} : { heartbeatTimeoutMs: ms(config.heartbeat_timeout) }),
    initialIntervalMs: ms(config.initial_interval),
    backoffCoefficient: config.backoff_coefficient,
    maximumIntervalMs: ms(config.maximum_interval),
    maximumAttempts: config.maximum_attempts,
    local: config.local,
  };
}

/** Converts a whole table of step configs (seconds) into the workflow's `StepOptionsTable` (milliseconds). */
export function toStepOptions(table: StepConfigTable): StepOptionsTable {
  const options = {} as StepOptionsTable;
  for (const name of STEP_NAMES) options[name] = toStepOption(table[name]);
  return options;
}
