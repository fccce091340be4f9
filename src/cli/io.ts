/** Where a command writes; tests pass collectors. */
export interface CommandIo {
  out(line: string): void;
  err(line: string): void;
  /** Rewrites the current status line on a terminal; absent when output is not a terminal. */
  status?(line: string): void;
}

export const processIo: CommandIo = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  ...(process.stderr.isTTY ? { status: (line: string) => process.stderr.write(`\r\x1b[K${line}`) } : {}),
};
