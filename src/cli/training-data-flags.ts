import { parseArgs } from 'node:util';
import { z } from 'zod';
import { ConfigError } from '../config/config-error.js';
import { openStore } from '../store/open-store.js';
import type { TrajectoryStore } from '../store/trajectory-store.js';

/** What `clotho sft-gen` and `clotho dpo-gen` differ in: their own flags and defaults. */
export interface TrainingDataSpec {
  command: 'sft-gen' | 'dpo-gen';
  /** `--minimum-score-diff-max-min`'s default (Atropos: 0 for SFT, 0.5 for DPO). */
  minimumScoreDiffDefault: number;
  /** Flags of this command alone, with their zod types (values arrive as strings or booleans). */
  ownFlags: Record<string, { type: 'string' | 'boolean'; schema: z.ZodType }>;
}

/** Where the groups come from. */
export type Source =
  | { kind: 'api'; apiUrl: string; token?: string; groupSize: number; maxTokenLen: number }
  | { kind: 'jsonl'; path: string }
  | { kind: 'store'; store: TrajectoryStore; runId: string };

/** The parsed command line. */
export interface TrainingDataFlags {
  filepath: string;
  source: Source;
  tokenizer?: string;
  saveMessages: boolean;
  /** Records to write; null: all the source has (offline sources without `--num-seqs-to-save`). */
  numSeqsToSave: number | null;
  allowNegativeScores: boolean;
  minimumScoreDiff: number;
  appendToPrevious: boolean;
  dryRun: boolean;
  /** Values of the command's own flags, by flag name. */
  own: Record<string, unknown>;
}

const int = (min: number) => z.coerce.number().int().min(min);

/** Flags both commands take: Atropos's, then Clotho's offline sources and bearer token. */
const COMMON = {
  'api-url': { type: 'string', schema: z.url() },
  'group-size': { type: 'string', schema: int(1) },
  'max-token-len': { type: 'string', schema: int(1) },
  tokenizer: { type: 'string', schema: z.string().min(1) },
  'save-messages': { type: 'boolean', schema: z.boolean() },
  'num-seqs-to-save': { type: 'string', schema: int(1) },
  'allow-negative-scores': { type: 'boolean', schema: z.boolean() },
  'minimum-score-diff-max-min': { type: 'string', schema: z.coerce.number().finite() },
  'append-to-previous': { type: 'boolean', schema: z.boolean() },
  'dry-run': { type: 'boolean', schema: z.boolean() },
  from: { type: 'string', schema: z.string().min(1) },
  run: { type: 'string', schema: z.string().min(1) },
  store: { type: 'string', schema: z.string().min(1) },
  token: { type: 'string', schema: z.string().min(1) },
} as const;

/** Flags that only mean something when reading from the API. */
const API_ONLY = ['api-url', 'group-size', 'max-token-len', 'token', 'tasks-per-step'];

/**
 * Parses `<filepath> [flags]`; throws ConfigError naming every wrong flag. `env` supplies `CLOTHO_API_TOKEN` and
 * `CLOTHO_HOME`.
 */
export function parseTrainingDataFlags(spec: TrainingDataSpec, argv: string[], env: NodeJS.ProcessEnv = process.env): TrainingDataFlags {
  const all = { ...COMMON, ...spec.ownFlags };
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: Object.fromEntries(Object.entries(all).map(([name, f]) => [name, { type: f.type }])),
      strict: true,
      allowPositionals: true,
    });
  } catch (error) {
    throw new ConfigError([(error as Error).message]);
  }
  const problems: string[] = [];
  const values: Record<string, unknown> = {};
  for (const [name, raw] of Object.entries(parsed.values)) {
    const result = all[name as keyof typeof all]!.schema.safeParse(raw);
    if (result.success) values[name] = result.data;
    else problems.push(`--${name}: ${result.error.issues[0]?.message ?? 'invalid'}, got ${JSON.stringify(raw)}`);
  }
  const [filepath, ...extra] = parsed.positionals;
  if (filepath === undefined) problems.push(`missing <filepath>, the JSONL file to write`);
  if (extra.length > 0) problems.push(`unexpected argument "${extra[0]}"`);
  if (values.from !== undefined && values.run !== undefined) problems.push('--from and --run both name a source: give one');
  if (values.store !== undefined && values.run === undefined) problems.push('--store only applies with --run');
  const offline = values.from !== undefined || values.run !== undefined;
  const misplaced = offline ? API_ONLY.filter((name) => values[name] !== undefined) : [];
  for (const name of misplaced)
    problems.push(`--${name} only applies when reading from the API, not with --${values.from !== undefined ? 'from' : 'run'}`);
  let store: TrajectoryStore | undefined;
  if (values.run !== undefined) {
    try {
      store = openStore(values.store as string | undefined, env);
    } catch (error) {
      problems.push((error as Error).message);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);

  const token = (values.token as string | undefined) ?? (env.CLOTHO_API_TOKEN || undefined);
  const source: Source =
    values.from !== undefined
      ? { kind: 'jsonl', path: values.from as string }
      : values.run !== undefined
        ? { kind: 'store', runId: values.run as string, store: store! }
        : {
            kind: 'api',
            apiUrl: (values['api-url'] as string | undefined) ?? 'http://localhost:8000',
            groupSize: (values['group-size'] as number | undefined) ?? 2,
            maxTokenLen: (values['max-token-len'] as number | undefined) ?? 2048,
            ...(token === undefined ? {} : { token }),
          };
  return {
    filepath: filepath!,
    source,
    ...(values.tokenizer === undefined ? {} : { tokenizer: values.tokenizer as string }),
    saveMessages: values['save-messages'] === true,
    numSeqsToSave: (values['num-seqs-to-save'] as number | undefined) ?? (offline ? null : 100),
    allowNegativeScores: values['allow-negative-scores'] === true,
    minimumScoreDiff: (values['minimum-score-diff-max-min'] as number | undefined) ?? spec.minimumScoreDiffDefault,
    appendToPrevious: values['append-to-previous'] === true,
    dryRun: values['dry-run'] === true,
    own: Object.fromEntries(Object.keys(spec.ownFlags).map((name) => [name, values[name]])),
  };
}

/** The flag lines both commands' help shows, after their own. */
export const COMMON_HELP = `Source (one of; default the API):
  --api-url <url>                     the trajectory API to take batches from as its trainer (default http://localhost:8000)
  --group-size <n>                    registered batch size is group size × tasks per step (default 2)
  --max-token-len <n>                 registered max_token_len (default 2048)
  --token <secret>                    bearer token of the API (default $CLOTHO_API_TOKEN)
  --from <file.jsonl>                 a finished run's groups (clotho process's or Atropos's process output), offline
  --run <run id> [--store <dir|url>]  a run's groups in the trajectory store it used, a directory or s3://bucket/prefix
                                      (default $CLOTHO_HOME/store), offline

Records:
  --tokenizer <name or path>          decode each sequence's tokens (a local tokenizer folder, an alias such as qwen3,
                                      or a Hugging Face repo id) and write text split into the shared prefix and each
                                      completion; without it, records carry the groups' messages
  --save-messages                     write the groups' messages, even with --tokenizer
  --num-seqs-to-save <n>              records to write before stopping (default 100 from the API: the last batch is
                                      written whole; from --from or --run: every group, or exactly n)
  --allow-negative-scores             keep sequences scoring 0 or less
  --append-to-previous                append to <filepath> if it exists (without it an existing file is an error)
  --dry-run                           load the tokenizer and reach the API (or open the source), write nothing`;
