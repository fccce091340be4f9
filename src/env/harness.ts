import { z } from 'zod';
import type { SandboxLimits } from '../kits/sandbox/sandbox.js';

/**
 * A harness environment (issue 27): each rollout runs a real agent program (mini-swe-agent, a bash agent, codex…)
 * in a sandbox, in a fresh copy of the task's workspace, its OpenAI base URL pointed at a per-rollout session of
 * Clotho's proxy. The trajectory is what that session saw: every model call, with exact tokens, masks and logprobs.
 * The episode ends when the program exits or spends its budget (`max_turns` calls, `max_token_length` generated
 * tokens, `agent_seconds`); a check run over the workspace afterwards (the task's tests) decides the reward.
 */

/** Where an agent finds its model and its task, inside the sandbox. */
export interface AgentSession {
  /** The session's OpenAI-compatible base URL (`…/v1`); the only address the agent can reach. */
  baseUrl: string;
  /** The model name the session answers to (any name is accepted). */
  model: string;
  /** The task statement. */
  task: string;
  /** The workspace's path inside the sandbox: the agent's working directory. */
  workspace: string;
  /** Model calls the episode may make (`max_turns`); the session refuses the one after. */
  maxCalls: number;
}

/**
 * An agent program as a harness runs it: the command, and what it needs from the host. A second agent is this much
 * code: the command line that points it at `session.baseUrl` and gives it `session.task`.
 */
export interface HarnessAgent {
  /** Names the agent in metrics, `clotho inspect` and errors. */
  name: string;
  /** The program and its arguments. */
  command(session: AgentSession): string[];
  /** Environment variables besides `OPENAI_BASE_URL`, `OPENAI_API_KEY` and `OPENAI_MODEL`, which every agent gets. */
  env?: Record<string, string>;
  /** Host folders the agent reads (its virtualenv), shown read-only at the same path. */
  readOnlyBinds?: string[];
  /** Files written into the sandbox's home (its config), by relative path. */
  files?: Record<string, string>;
  /** The agent's sandbox limits; the harness's own defaults fill the rest ({@link HARNESS_AGENT_LIMITS}). */
  limits?: SandboxLimits;
  /**
   * Checks that the agent is installed, or installs it; throws a message naming what to run. Every rollout calls it
   * (heartbeating meanwhile) before the agent starts: an install must happen once per process, the rollouts that come
   * while it runs waiting for the same one, as {@link miniSweAgent}'s does.
   */
  ensure?(): Promise<void>;
}

/** The check that scores a rollout: a command run over the workspace in a fresh sandbox after the agent exits. */
export interface HarnessCheck {
  command: string[];
  /** Files written into the workspace first (the task's tests), so that an agent that edited them is checked anyway. */
  files?: Record<string, string>;
  limits?: SandboxLimits;
}

/** How an environment runs its items through an agent (`harness` of {@link EnvironmentSpec}). */
export interface HarnessSpec<Item, Config> {
  /** The agent program for this run's config. */
  agent(config: Config): HarnessAgent;
  /** The task's workspace: files by relative path, written anew for every rollout and every attempt. */
  workspace(item: Item, config: Config): Record<string, string>;
  /** The task statement given to the agent. */
  task(item: Item, config: Config): string;
  /** The check that scores a rollout once its agent exits (the task's tests). */
  check(item: Item, config: Config): HarnessCheck;
}

/** Why an agent's episode ended. */
export const HARNESS_ENDS = ['exited', 'calls', 'tokens', 'time'] as const;
/** Why an agent's episode ended: it exited, or spent its calls, its tokens or its time. */
export type HarnessEnd = (typeof HARNESS_ENDS)[number];

/**
 * What a harness rollout leaves in its trajectory's state slot: `parse` and `score` read it as `harness`. The check's
 * exit code is the usual reward (0: the tests pass). `clotho inspect` and the viewer read it back from the store.
 */
export const HarnessOutcomeSchema = z.object({
  agent: z.string(),
  ended: z.enum(HARNESS_ENDS),
  /** The agent's exit code (null when Clotho stopped it), and the end of what it printed. */
  exitCode: z.number().int().nullable(),
  output: z.string(),
  /** Model calls of the episode; after a crash, `replayed` of them were answered from the record. */
  calls: z.number().int(),
  replayed: z.number().int(),
  /** Where a retried attempt's requests parted from the record, and why (the call's position and what differed). */
  diverged: z.array(z.object({ call: z.number().int(), reason: z.string() })),
  check: z.object({ exitCode: z.number().int().nullable(), passed: z.boolean(), output: z.string(), timedOut: z.boolean() }),
});
/** How a harness rollout went ({@link HarnessOutcomeSchema}). */
export type HarnessOutcome = z.infer<typeof HarnessOutcomeSchema>;

/** The agent's sandbox limits where it says nothing: an agent is a program with an interpreter, not a snippet. */
export const HARNESS_AGENT_LIMITS: Readonly<Required<SandboxLimits>> = {
  wallTimeMs: 600_000,
  cpuSeconds: 600,
  memoryBytes: 4 * 2 ** 30,
  processes: 128,
  outputBytes: 8 << 20,
  diskBytes: 256 << 20,
  fileBytes: 64 << 20,
  openFiles: 1024,
};
