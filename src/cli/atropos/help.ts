import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ConfigError } from '../../config/config-error.js';
import { asCommandLines, atroposEnvironmentFile } from './environment-file.js';
import type { CommandIo } from '../io.js';
import { atroposWorkerEnv, ensureAtroposPython } from './python.js';
import { ATROPOS_CLOTHO_FLAGS_HELP, splitAtroposArgv } from './session.js';

/**
 * `clotho <command> --atropos env.py[:Class] … --help`: Atropos's own help for that class and subcommand (its
 * `--env.*` and `--openai.*` fields, with the class's defaults), as `python env.py <mode> --help` prints it, then the
 * flags Clotho takes out first. Builds nothing and needs no Temporal: the worker's `describe` only parses the flags.
 */
export async function atroposHelpCommand(command: string, argv: string[], io: CommandIo): Promise<number> {
  const { spec, atropos } = splitAtroposArgv(argv);
  await atroposEnvironmentFile(spec);
  // A worker names the run's Atropos mode after the file, as Atropos's CLI does (`env.py serve …`).
  const [named, ...rest] = atropos;
  if (command === 'worker' && named !== 'serve' && named !== 'process')
    throw new ConfigError(["--atropos env.py serve|process: the run's Atropos mode (its help is that mode's)"]);
  const args = command === 'worker' ? [named!, ...rest] : [command, ...atropos];
  const python = await ensureAtroposPython((line) => io.err(`clotho ${command}: ${line}`));
  const described = await promisify(execFile)(python, ['-m', 'clotho_atropos', 'describe', spec, ...args], {
    env: atroposWorkerEnv(),
    maxBuffer: 16 * 1024 * 1024,
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({
      code: typeof error.code === 'number' ? error.code : 1,
      stdout: error.stdout ?? '',
      stderr: error.stderr ?? '',
    }),
  );
  if (described.code !== 0) {
    io.err(asCommandLines(`${described.stdout}${described.stderr}`.trimEnd(), command));
    return described.code;
  }
  io.out(described.stdout.trimEnd());
  io.out(ATROPOS_CLOTHO_FLAGS_HELP);
  return 0;
}
