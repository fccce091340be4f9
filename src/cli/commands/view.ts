import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { status as devServerStatus } from '../../../temporal-dev/index.js';
import { startApiServer } from '../../api/server.js';
import { ConfigError } from '../../config/config-error.js';
import { openStore, storeLabel } from '../../store/open-store.js';
import { FileSystemStore, type TrajectoryStore } from '../../store/trajectory-store.js';
import type { CommandIo } from '../io.js';
import { apiSource } from '../view/api-source.js';
import { createViewApp } from '../view/app.js';
import { jsonlSource } from '../view/jsonl-source.js';
import type { RunSource } from '../view/source.js';
import { listStoredRuns } from '../view/store-layout.js';
import { storeSource } from '../view/store-source.js';
import { connectRunWorkflows, viewTemporal, type RunWorkflows } from '../view/temporal.js';
import { decodersFor } from '../view/tokens.js';
import { isLoopback } from '../../config/listening.js';
import { untilInterrupted } from '../interrupt.js';

export const VIEW_USAGE = `Usage: clotho view [<groups.jsonl> ...] [--run <id> ...] [--api <url> ...] [options]

Serves a read-only web page to browse runs → groups → rollouts: each rollout's messages turn by turn with its tool
calls and results, its score, per-turn rewards and parsed answer, and its tokens tinted by inference logprob with the
masked (untrained) part set apart; each group's score spread and a link to its workflow in the Temporal UI.

Sources (any number of each; with none, every run in the trajectory store):
  <groups.jsonl>          scored groups as \`clotho process\` (or Atropos's process) writes them; lines the store also
                          holds link to their workflows and show their parsed answers
  --run <id>              a run in the trajectory store: its scored groups, and its dropped, failed or running ones
                          as far as they got (Temporal's visibility says which, when a server answers)
  --api <url>             a running \`clotho api\`: the groups waiting for its trainer (GET /queue, which takes none
                          of them from the trainer), read again on Reload

Options:
  --store <dir|url>       the trajectory store the runs used: a directory or s3://bucket/prefix (default
                          $CLOTHO_HOME/store)
  --token <secret>        bearer token of the --api (default $CLOTHO_API_TOKEN)
  --host <addr>           address to listen on (default 127.0.0.1)
  --port <n>              port (default 8300; 0 picks a free one)
  --temporal-ui <url>     base URL of the Temporal UI for workflow links (default: the local dev server's, else
                          http://127.0.0.1:8233)
  --no-temporal           do not ask Temporal (TEMPORAL_ADDRESS or a profile, or a dev server on 127.0.0.1:7233) about the runs
  --tokenizer <source>    how token ids are shown: auto (decoded with the embedded engine's tokenizer, qwen3, for
                          runs it reproduces), none (ids), or a tokenizer source: qwen3, a Hub repo id, a folder
                          (default auto)
  -h, --help              show this help`;

const OPTIONS = {
  run: { type: 'string', multiple: true },
  api: { type: 'string', multiple: true },
  token: { type: 'string' },
  store: { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  'temporal-ui': { type: 'string' },
  'no-temporal': { type: 'boolean' },
  tokenizer: { type: 'string' },
} as const;

const FlagsSchema = z.strictObject({
  run: z.array(z.string().regex(/^[A-Za-z0-9._-]+$/, 'expected a run id (letters, digits, . _ -)')).default([]),
  api: z.array(z.url({ protocol: /^https?$/ })).default([]),
  token: z.string().min(1).optional(),
  store: z.string().min(1).optional(),
  host: z.string().min(1).default('127.0.0.1'),
  port: z.coerce.number().int().min(0).max(65535).default(8300),
  'temporal-ui': z.url().optional(),
  'no-temporal': z.boolean().default(false),
  tokenizer: z.string().min(1).default('auto'),
});

/** `clotho view`: serves the viewer until Ctrl-C or SIGTERM. */
export async function viewCommand(args: string[], io: CommandIo, untilStopped: () => Promise<void> = untilInterrupted): Promise<number> {
  let values: unknown;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args, options: OPTIONS, strict: true, allowPositionals: true }));
  } catch (error) {
    throw new ConfigError([(error as Error).message]);
  }
  const parsed = FlagsSchema.safeParse(values);
  if (!parsed.success) throw new ConfigError(parsed.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`));
  const flags = parsed.data;
  for (const path of positionals) if (!existsSync(path)) throw new ConfigError([`${path}: no such file`]);
  let store: TrajectoryStore;
  try {
    store = openStore(flags.store);
  } catch (error) {
    throw new ConfigError([(error as Error).message]);
  }
  const decoders = await decodersFor(flags.tokenizer);
  // Temporal's visibility only speaks of store runs: named ones, or every run when no other source is named.
  const onlyOthers = flags.run.length === 0 && (positionals.length > 0 || flags.api.length > 0);
  const workflows = flags['no-temporal'] || onlyOthers ? undefined : await connectRunWorkflows();
  const token = flags.token ?? (process.env.CLOTHO_API_TOKEN || undefined);
  try {
    const runs = await sources({ files: positionals, runIds: flags.run, apis: flags.api, token }, store, workflows);
    if (runs.length === 0)
      io.err(`clotho view: no runs in ${storeLabel(store)}; name a JSONL file, --run <id> (--store <dir|url>) or --api <url>`);
    const target = viewTemporal();
    const temporalUi = {
      base: flags['temporal-ui'] ?? (target.configured ? undefined : (await devServerStatus()).server?.uiUrl) ?? 'http://127.0.0.1:8233',
      namespace: target.namespace,
    };
    const app = createViewApp({ runs, decoders, temporalUi });
    const server = await startApiServer({ app, host: flags.host, port: flags.port });
    io.out(
      `clotho view listening on ${server.url}/ (${runs.length} run${runs.length === 1 ? '' : 's'}${workflows ? ', with Temporal' : ''})`,
    );
    if (!isLoopback(flags.host)) io.err(`clotho view: --host ${flags.host} shows these trajectories to other machines, without a password`);
    await untilStopped();
    await server.close();
  } finally {
    await workflows?.close();
  }
  return 0;
}

/** The runs to browse: the JSONL files, store runs and APIs named, or every run in the store when none is. */
async function sources(
  { files, runIds, apis, token }: { files: string[]; runIds: string[]; apis: string[]; token: string | undefined },
  store: TrajectoryStore,
  workflows: RunWorkflows | undefined,
): Promise<RunSource[]> {
  const ids = new Set<string>();
  const unique = (wanted: string) => {
    let id = wanted;
    for (let n = 2; ids.has(id); n++) id = `${wanted} (${n})`;
    ids.add(id);
    return id;
  };
  // A directory that is not there holds no runs (nothing to list); a bucket is asked.
  const storeFound = !(store instanceof FileSystemStore) || existsSync(store.root) ? store : null;
  const named = files.length > 0 || runIds.length > 0 || apis.length > 0;
  const stored = named ? runIds : storeFound ? await listStoredRuns(storeFound) : [];
  return [
    ...files.map((path) => jsonlSource(path, { id: unique(basename(path)), store: storeFound })),
    ...stored.map((runId) => storeSource(store, runId, { id: unique(runId), ...(workflows ? { workflows } : {}) })),
    ...apis.map((url) => apiSource(url, { id: unique(`api ${new URL(url).host}`), ...(token === undefined ? {} : { token }) })),
  ];
}
