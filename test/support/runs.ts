/**
 * What the end-to-end tests of environments share: a scratch folder per test file, and `clotho process` and
 * `clotho evaluate` run to the end against the suite's Temporal server, with what they wrote read back.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, inject } from 'vitest';
import type { EvaluationSample } from '../../src/env/evaluate.js';
import type { ScoredDataGroup } from '../../src/schema/scored-data.js';
import { runClotho } from './cli.js';
import { readGroups, readJsonl } from './groups.js';

/** The environment that points the CLI at the suite's Temporal server (test/global-setup.ts). */
export function temporalEnv(): Record<string, string> {
  return { TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_NAMESPACE: inject('temporalNamespace') };
}

/** A test file's scratch folder, and the servers its tests start. */
export interface Scratch {
  /** The folder: made before the file's tests (before the hooks the file registers after this), removed after them. */
  readonly dir: string;
  /** A path in the folder. */
  path(...parts: string[]): string;
  /** Closes `server` after the file's tests, before the folder is removed; returns it. */
  closeAfter<T extends { close(): unknown }>(server: T): T;
}

/** A scratch folder named `<prefix>…` in the system's temp folder; call at the top level of a test file. */
export function useScratch(prefix: string): Scratch {
  let dir: string | undefined;
  const servers: { close(): unknown }[] = [];
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), prefix));
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  const scratch: Scratch = {
    get dir() {
      if (dir === undefined) throw new Error('the scratch folder is made in beforeAll: use it in a hook or a test');
      return dir;
    },
    path: (...parts) => join(scratch.dir, ...parts),
    closeAfter: (server) => {
      servers.push(server);
      return server;
    },
  };
  return scratch;
}

/**
 * Runs `clotho process <args> --env.data_path_to_save_groups <out>` against the suite's Temporal server: it must exit
 * 0 with nothing on stderr after reporting all of its `groups` groups, and `out` must hold exactly that many.
 */
export async function runProcess(args: string[], out: string, groups: number): Promise<{ groups: ScoredDataGroup[]; stdout: string }> {
  const { code, stdout, stderr } = await runClotho(['process', ...args, '--env.data_path_to_save_groups', out], temporalEnv());
  expect(stderr).toBe('');
  expect(code).toBe(0);
  expect(stdout).toContain(`groups ${groups}/${groups}`);
  const written = await readGroups(out);
  expect(written).toHaveLength(groups);
  return { groups: written, stdout };
}

/**
 * One group of two sequences from the embedded engine (the CLI's own, as no --openai.base_url is given): `clotho
 * process <args>` for one step, each completion at most `maxTokens` tokens, equal scores kept (random weights seldom
 * tell samples apart).
 */
export async function processEngineGroup(args: string[], out: string, maxTokens: number): Promise<ScoredDataGroup> {
  const { groups } = await runProcess(
    [
      ...args,
      '--env.total_steps',
      '1',
      '--env.group_size',
      '2',
      '--env.max_token_length',
      String(maxTokens),
      '--env.ensure_scores_are_not_same',
      'false',
    ],
    out,
    1,
  );
  const group = groups[0]!;
  expect(group.tokens).toHaveLength(2);
  return group;
}

/**
 * Runs `clotho evaluate <args> --env.data_dir_to_save_evals <evals>`: it must exit 0 with nothing on stderr. Returns
 * the metrics and samples it wrote there, and what it printed.
 */
export async function runEvaluate(
  args: string[],
  evals: string,
): Promise<{ metrics: Record<string, number>; samples: EvaluationSample[]; stdout: string }> {
  const { code, stdout, stderr } = await runClotho(['evaluate', ...args, '--env.data_dir_to_save_evals', evals], temporalEnv());
  expect(stderr).toBe('');
  expect(code).toBe(0);
  const metrics = JSON.parse(await readFile(join(evals, 'metrics.json'), 'utf8')) as Record<string, number>;
  return { metrics, samples: await readJsonl<EvaluationSample>(join(evals, 'samples.jsonl')), stdout };
}
