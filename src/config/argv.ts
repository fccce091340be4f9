/** One `--key value` of a command line; `true` for a bare `--key`, null for `None`. */
export interface Flag {
  key: string;
  value: string | null | true;
}

/** Splits argv into `--k=v`, `--k v`, bare `--k` (true) and positionals; `None` means null, `--` ends flags. */
export function tokenize(argv: string[], isBoolean: (key: string) => boolean): { flags: Flag[]; args: string[] } {
  const flags: Flag[] = [];
  const args: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === '--') {
      args.push(...argv.slice(i + 1));
      break;
    }
    if (!token.startsWith('--')) {
      args.push(token);
      continue;
    }
    const eq = token.indexOf('=');
    const key = eq < 0 ? token.slice(2) : token.slice(2, eq);
    let value: string | true = eq < 0 ? true : token.slice(eq + 1);
    const next = argv[i + 1];
    // A boolean takes the next token only when it is one, so `--env.use_wandb gsm8k` keeps its positional.
    if (value === true && next !== undefined && !next.startsWith('--') && (!isBoolean(key) || ['true', 'false', 'None'].includes(next))) {
      value = next;
      i++;
    }
    flags.push({ key, value: value === 'None' ? null : value });
  }
  return { flags, args };
}

/**
 * The value of one string flag as the command line gives it (its last occurrence), before anything is resolved: for
 * what resolution itself depends on, such as the run whose config becomes the defaults.
 */
export function flagValue(argv: string[], key: string): string | undefined {
  const value = tokenize(argv, () => false)
    .flags.filter((f) => f.key === key)
    .at(-1)?.value;
  return typeof value === 'string' ? value : undefined;
}
