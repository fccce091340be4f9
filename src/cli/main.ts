import { WorkflowFailedError } from '@temporalio/client';
import { ConfigError } from '../config/config-error.js';
import { createBatcherService } from './api-service.js';
import { apiCommand, runApiCommand } from './commands/api.js';
import { dpoGenCommand, DPO_GEN_USAGE } from './commands/dpo-gen.js';
import { evaluateCommand, EVALUATE_FLAGS, EVALUATE_USAGE } from './commands/evaluate.js';
import { inferenceCommand, INFERENCE_USAGE } from './commands/inference.js';
import { inspectCommand, INSPECT_USAGE } from './commands/inspect.js';
import { listCommand, LIST_USAGE } from './commands/list.js';
import { runsCommand, RUNS_USAGE } from './commands/runs.js';
import { atroposEvaluateCommand } from './atropos/evaluate.js';
import { atroposHelpCommand } from './atropos/help.js';
import { atroposProcessCommand } from './atropos/process.js';
import { atroposServeCommand } from './atropos/serve.js';
import { atroposWorkerCommand } from './atropos/worker.js';
import { verifiersEvaluateCommand } from './verifiers/evaluate.js';
import { verifiersProcessCommand } from './verifiers/process.js';
import { verifiersServeCommand } from './verifiers/serve.js';
import { verifiersWorkerCommand } from './verifiers/worker.js';
import { PROCESS_PLAN, processCommand, PROCESS_USAGE } from './commands/process.js';
import { SERVE_FLAGS, serveCommand, SERVE_USAGE } from './commands/serve.js';
import { sftGenCommand, SFT_GEN_USAGE } from './commands/sft-gen.js';
import { temporalCommand } from './commands/temporal.js';
import { workerCommand, WORKER_USAGE } from './commands/worker.js';
import { METRICS_FLAGS } from './run-metrics.js';
import { processIo, type CommandIo } from './io.js';
import { environmentHelp } from './help.js';
import { environmentSourcesHelp } from './environment-sources.js';
import { InterruptedError } from './interrupt.js';
import { causeOf } from '../workflows/messages.js';

/**
 * An Atropos environment's run (`--atropos env.py`) or a verifiers environment's (`--verifiers <env>`) has a command
 * of its own: the worker is Python's, its flags the framework's. Undefined for Clotho's own environments.
 */
function other(
  args: string[],
  io: CommandIo,
  commands: Record<'atropos' | 'verifiers', (args: string[], io: CommandIo) => Promise<number>>,
): Promise<number> | undefined {
  const framework = (['atropos', 'verifiers'] as const).find((name) =>
    args.some((arg) => arg === `--${name}` || arg.startsWith(`--${name}=`)),
  );
  return framework ? commands[framework](args, io) : undefined;
}

interface Command {
  summary: string;
  run(args: string[], io: CommandIo): Promise<number>;
  /** Help for `clotho <command> --help`; commands that parse their own flags print their own. */
  help?(args: string[]): Promise<string>;
}

/** Every command of `clotho`, declared in one place. */
const COMMANDS: Record<string, Command> = {
  process: {
    summary: 'run an environment durably and write scored groups to JSONL + HTML',
    run: (args, io) => other(args, io, { atropos: atroposProcessCommand, verifiers: verifiersProcessCommand }) ?? processCommand(args, io),
    help: (args) =>
      environmentHelp(PROCESS_USAGE, args, PROCESS_PLAN, (name) => ({ '--env.data_path_to_save_groups': `data/${name}.jsonl` })),
  },
  serve: {
    summary: "feed a running `clotho api`'s trainer, as an Atropos environment in serve mode",
    run: (args, io) => other(args, io, { atropos: atroposServeCommand, verifiers: verifiersServeCommand }) ?? serveCommand(args, io),
    help: (args) => environmentHelp(SERVE_USAGE, args, { commandFlags: SERVE_FLAGS }),
  },
  evaluate: {
    summary: "evaluate the policy on an environment's items and report its metrics",
    run: (args, io) =>
      other(args, io, { atropos: atroposEvaluateCommand, verifiers: verifiersEvaluateCommand }) ?? evaluateCommand(args, io),
    help: (args) => environmentHelp(EVALUATE_USAGE, args, { commandFlags: EVALUATE_FLAGS }),
  },
  worker: {
    summary: "run a run's workers (scale out, or resume after a crash) against TEMPORAL_ADDRESS",
    run: (args, io) => other(args, io, { atropos: atroposWorkerCommand, verifiers: verifiersWorkerCommand }) ?? workerCommand(args, io),
    help: (args) => environmentHelp(WORKER_USAGE, args, { commandFlags: METRICS_FLAGS }),
  },
  api: {
    summary: 'serve the Atropos-compatible trajectory API in front of the batcher workflow',
    run: (args, io) => apiCommand(args, { io, createService: createBatcherService }),
  },
  'run-api': {
    summary: "Atropos's run-api by name: clotho api taking run-api's flags (--host, --port, --reload)",
    run: (args, io) => runApiCommand(args, { io, createService: createBatcherService }),
  },
  list: {
    summary: 'list the built-in environments with what each does',
    run: listCommand,
    help: async () => LIST_USAGE,
  },
  runs: {
    summary: 'list the open runs (env-runs, batchers) with the Clotho version that started each and whether this one can finish it',
    run: runsCommand,
    help: async () => RUNS_USAGE,
  },
  inference: {
    summary: 'serve a GGUF model (or a generated one) with an OpenAI-compatible API on CPU',
    run: (args) => inferenceCommand(args),
    help: async () => INFERENCE_USAGE,
  },
  temporal: { summary: 'start | stop | status of the local Temporal dev server', run: temporalCommand },
  'sft-gen': {
    summary: "write SFT data (each group's best sequences) from the API's batches, a run's JSONL or the store",
    run: sftGenCommand,
    help: async () => SFT_GEN_USAGE,
  },
  'dpo-gen': {
    summary: 'write DPO pairs (chosen, rejected) from the API’s batches, a run’s JSONL or the store',
    run: dpoGenCommand,
    help: async () => DPO_GEN_USAGE,
  },
  inspect: {
    summary: "print a rollout group's timeline: steps, turns, tool calls, retries with their errors, scores",
    run: inspectCommand,
    help: async () => INSPECT_USAGE,
  },
  proxy: {
    summary: "Atropos's ManagedServer OpenAI proxy: token ids, masks and logprobs per session for plain-OpenAI agents",
    run: async (args, io) => (await import('./commands/proxy.js')).proxyCommand(args, io),
    help: async () => (await import('./commands/proxy.js')).PROXY_USAGE,
  },
  view: {
    summary: 'browse runs, groups and rollouts (JSONL, store, Temporal) in a local web page',
    run: async (args, io) => (await import('./commands/view.js')).viewCommand(args, io),
    help: async () => (await import('./commands/view.js')).VIEW_USAGE,
  },
};

function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length));
  const rows = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  return [
    'Usage: clotho <command> [options]',
    '',
    'Durable RL environments for LLMs on Temporal, wire-compatible with Atropos.',
    '',
    'Commands:',
    ...rows,
    '',
    environmentSourcesHelp('process, serve, evaluate and worker take an environment, one of:'),
    '',
    "Run `clotho <command> --help` for its flags; `clotho process <environment> --help` lists the environment's, and",
    "`clotho process --atropos env.py --help` an Atropos environment's. `clotho list` names the built-in environments.",
  ].join('\n');
}

/** The commands that run an environment, and so take `--atropos env.py`. */
const ATROPOS_COMMANDS = ['process', 'serve', 'evaluate', 'worker'];

/** The `clotho` entry point; returns the exit code (only bin/clotho.js sets it). */
export async function main(argv: string[], io: CommandIo = processIo): Promise<number> {
  const [name, ...args] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    io.out(usage());
    return name ? 0 : 2;
  }
  const command = COMMANDS[name];
  if (!command) {
    io.err(`clotho: unknown command "${name}"\n\n${usage()}`);
    return 2;
  }
  try {
    // Help loads the named environment, so an unknown or broken one is reported like any other error.
    const wantsHelp = args.includes('--help') || args.includes('-h');
    // An Atropos environment's flags are its class's (Atropos's own help lists them), a verifiers environment's
    // verifiers' (its worker's --help lists them).
    if (wantsHelp && args.includes('--atropos') && ATROPOS_COMMANDS.includes(name)) return await atroposHelpCommand(name, args, io);
    if (command.help && wantsHelp && !args.includes('--atropos') && !args.includes('--verifiers')) {
      io.out(await command.help(args.filter((a) => a !== '--help' && a !== '-h')));
      return 0;
    }
    return await command.run(args, io);
  } catch (error) {
    if (error instanceof InterruptedError) {
      io.err(`clotho ${name}: interrupted; the run is kept in Temporal and resumes with the same --env.run_id`);
      return 130;
    }
    if (error instanceof ConfigError) {
      for (const problem of error.problems) io.err(`clotho ${name}: ${problem}`);
      return 2;
    }
    // A failed workflow's message is only "Workflow execution failed": its reason is the innermost cause.
    const reason = error instanceof WorkflowFailedError ? `${error.message}: ${causeOf(error)}` : (error as Error).message;
    io.err(`clotho ${name}: ${reason}`);
    return 1;
  }
}
