import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTemporalCli, startDevServer, type DevServer } from '../../temporal-dev/index.js';
import { spawnClotho, waitFor } from '../support/cli.js';
import { gsm8kCommand, gsm8kResponder } from '../support/gsm8k-model.js';
import { startScriptedOpenAI, type ScriptedOpenAI } from '../support/scripted-openai.js';

let model: ScriptedOpenAI;
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clotho-temporal-restart-'));
  model = await startScriptedOpenAI({ responder: gsm8kResponder((_, sample) => sample === 0, 300) });
});
afterAll(async () => {
  await model?.close();
  await rm(dir, { recursive: true, force: true });
});

const server = async (port: number) =>
  startDevServer({ cliPath: await ensureTemporalCli(), stateDir: dir, dbFilename: join(dir, 'temporal.sqlite'), port, headless: true });

/**
 * Issue 40: the command that watches a run waited on Temporal's client alone, which retries a call for a few seconds.
 * In a chaos run whose server was killed 12 times (seed 4290222483), `clotho serve` ended with "Failed to get Workflow
 * execution history" (exit 1) while its workers waited for the server; here, with the server kept down until the
 * command says it waits for it, the command said nothing at all. Now it waits, says so, and says when it is back.
 */
describe('clotho process while its Temporal server is killed -9 and comes back later', () => {
  it('waits for the server, says so, and finishes the run with every item written once', async () => {
    let temporal: DevServer = await server(0);
    const out = join(dir, 'groups.jsonl');
    const items = 6;
    const run = spawnClotho(
      gsm8kCommand('process', model.baseUrl, {
        'env.total_steps': items,
        'env.group_size': 2,
        'env.max_groups_in_flight': 2,
        'env.data_path_to_save_groups': out,
        store: join(dir, 'store'),
      }),
      { TEMPORAL_ADDRESS: temporal.address },
    );
    try {
      await waitFor(() => model.requests.length >= 2, 120_000, 'the first model calls');
      await temporal.kill();
      await waitFor(
        () => run.stdout().includes('Temporal is out of reach') || run.child.exitCode !== null,
        120_000,
        'the command to say it waits for Temporal',
      );
      expect(run.child.exitCode, run.stderr()).toBeNull();
      temporal = await server(temporal.port);
      const code = await run.exited;
      expect(run.stderr()).not.toContain('Failed to get Workflow execution history');
      expect(code).toBe(0);
      expect(run.stdout()).toMatch(/Temporal is back after \d+ s/);
      const written = (await readFile(out, 'utf8')).trim().split('\n');
      const questions = written.map((line) => JSON.stringify((JSON.parse(line) as { messages?: unknown[] }).messages?.[0] ?? line));
      expect(written).toHaveLength(items);
      expect(new Set(questions).size).toBe(items);
    } finally {
      if (run.child.exitCode === null) run.child.kill('SIGKILL');
      await temporal.stop();
    }
  }, 300_000);
});
