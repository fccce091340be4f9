import { parseArgs } from 'node:util';
import { z } from 'zod';
import { startDetached, status, stopDetached } from '../../../temporal-dev/index.js';
import { processIo, type CommandIo } from '../io.js';

const HELP = `Usage: clotho temporal <start|stop|status> [options]

Runs a local Temporal dev server (SQLite-backed, with the web UI and Clotho's search attributes)
in the background, recorded in the state dir so later commands find it.

Commands:
  start    start the server unless it already runs; prints its address and UI URL
  stop     stop the server (SIGTERM, then SIGKILL) and wait for it to exit
  status   print whether it runs, its address, UI and pid; exit code 1 when not running

Options:
  --port <n>             frontend gRPC port (start only; default 7233)
  --ui-port <n>          web UI port (start only; default --port + 1000)
  --db-filename <path>   SQLite file (start only; default <state-dir>/temporal.sqlite)
  --state-dir <dir>      pid file, log, SQLite and CLI install (default $CLOTHO_HOME or <repo>/.clotho)
  -h, --help             show this help`;

const FlagsSchema = z.strictObject({
  port: z.coerce.number().int().min(1).max(65535).optional(),
  'ui-port': z.coerce.number().int().min(1).max(65535).optional(),
  'db-filename': z.string().min(1).optional(),
  'state-dir': z.string().min(1).optional(),
  help: z.boolean().optional(),
});

const OPTIONS = {
  port: { type: 'string' },
  'ui-port': { type: 'string' },
  'db-filename': { type: 'string' },
  'state-dir': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const SubcommandSchema = z.enum(['start', 'stop', 'status']);
type Subcommand = z.infer<typeof SubcommandSchema>;

const parse = (args: string[]) => parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true });

/** `clotho temporal start | stop | status`; returns the exit code. */
export async function temporalCommand(args: string[], io: CommandIo = processIo): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(args);
  } catch (error) {
    io.err(`clotho temporal: ${(error as Error).message.split('. ')[0]}`);
    io.err('Run `clotho temporal --help` for usage.');
    return 2;
  }
  const flags = FlagsSchema.safeParse(parsed.values);
  if (!flags.success) {
    for (const issue of flags.error.issues) io.err(`clotho temporal: --${issue.path.join('.')}: ${issue.message}`);
    return 2;
  }
  const { help, port, 'ui-port': uiPort, 'db-filename': dbFilename, 'state-dir': stateDir } = flags.data;
  const [subcommand, ...extra] = parsed.positionals;
  if (help) {
    io.out(HELP);
    return 0;
  }
  const command = SubcommandSchema.safeParse(subcommand);
  if (!command.success || extra.length > 0) {
    io.err(
      subcommand === undefined
        ? 'clotho temporal: missing command (start, stop or status)'
        : `clotho temporal: unexpected "${[subcommand, ...extra].join(' ')}"`,
    );
    io.err('Run `clotho temporal --help` for usage.');
    return 2;
  }
  const startOnly = Object.entries({ port, 'ui-port': uiPort, 'db-filename': dbFilename }).find(([, value]) => value !== undefined);
  if (subcommand !== 'start' && startOnly) {
    io.err(`clotho temporal ${subcommand}: --${startOnly[0]} applies to start only`);
    return 2;
  }
  const options = {
    ...(port ? { port } : {}),
    ...(uiPort ? { uiPort } : {}),
    ...(dbFilename ? { dbFilename } : {}),
    ...(stateDir ? { stateDir } : {}),
  };
  try {
    return await run(command.data, options, io);
  } catch (error) {
    io.err(`clotho temporal ${subcommand}: ${(error as Error).message}`);
    return 1;
  }
}

async function run(
  subcommand: Subcommand,
  options: { port?: number; uiPort?: number; dbFilename?: string; stateDir?: string },
  io: CommandIo,
): Promise<number> {
  if (subcommand === 'start') {
    const server = await startDetached(options);
    io.out(`Temporal dev server ${server.alreadyRunning ? 'already running' : 'started'} (pid ${server.pid})`);
    io.out(`  address: ${server.address}`);
    io.out(`  UI:      ${server.uiUrl ?? '(headless)'}`);
    io.out(`  log:     ${server.logFile}`);
    return 0;
  }
  if (subcommand === 'stop') {
    const pid = await stopDetached(options);
    io.out(pid === undefined ? 'Temporal dev server was not running' : `Temporal dev server stopped (pid ${pid})`);
    return 0;
  }
  const current = await status(options);
  if (!current.running || !current.server) {
    io.out('Temporal dev server: not running');
    return 1;
  }
  const { pid, address, uiUrl, dbFilename, logFile } = current.server;
  io.out(`Temporal dev server: running (pid ${pid})${current.serving ? '' : ', but not answering'}`);
  io.out(`  address:  ${address}`);
  io.out(`  UI:       ${uiUrl ?? '(headless)'}`);
  io.out(`  database: ${dbFilename ?? '(in memory)'}`);
  io.out(`  log:      ${logFile}`);
  return current.serving ? 0 : 1;
}
