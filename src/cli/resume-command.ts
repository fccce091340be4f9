/** An argument as a POSIX shell reads it back: as it is when plain, else single-quoted. */
function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`;
}

/**
 * The command line that resumes run `runId`: `clotho <command>` with this command's arguments, the run named
 * (`--env.run_id`) when they did not name it, and `extra` flags they lack; quoted for a shell.
 */
export function resumeCommand(command: string, argv: readonly string[], runId: string, extra: readonly string[] = []): string {
  const named = argv.some((arg) => arg === '--env.run_id' || arg.startsWith('--env.run_id='));
  const args = [...argv, ...(named ? [] : ['--env.run_id', runId]), ...extra.filter((flag) => !argv.includes(flag))];
  return ['clotho', command, ...args].map(shellQuote).join(' ');
}
