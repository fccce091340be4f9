import { existsSync } from 'node:fs';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTemporalCli, isServerListening } from '../../temporal-dev/index.js';
import { Client, Connection } from '@temporalio/client';
import { runClotho, spawnClotho, waitFor } from '../support/cli.js';
import { gsm8kResponder, gsm8kCommand } from '../support/gsm8k-model.js';
import { startScriptedOpenAI, type ScriptedOpenAI } from '../support/scripted-openai.js';

let model: ScriptedOpenAI;
/** Once set, the model takes 8 s per answer: Ctrl-C then finds generations in flight, which the workers wait for. */
let slow = false;
beforeAll(async () => {
  const answer = gsm8kResponder((_, sample) => sample === 0, 200);
  model = await startScriptedOpenAI({ responder: async (body, i) => ({ ...(await answer(body, i)), ...(slow ? { delayMs: 8000 } : {}) }) });
});
afterAll(() => model.close());

describe('clotho process on embedded defaults', () => {
  it('starts a dev server when none runs, and stops it on Ctrl-C, keeping the run resumable', async (context) => {
    // The embedded default listens on 127.0.0.1:7233; a server someone already runs there would be reused, not stopped.
    if (await isServerListening('127.0.0.1:7233')) context.skip();
    const home = await mkdtemp(join(tmpdir(), 'clotho-home-'));
    const out = join(home, 'groups.jsonl');
    const run = spawnClotho(
      gsm8kCommand('process', model.baseUrl, {
        'env.total_steps': 50,
        'env.group_size': 2,
        'env.max_groups_in_flight': 2,
        'env.data_path_to_save_groups': out,
      }),
      { TEMPORAL_ADDRESS: '', CLOTHO_HOME: home, TEMPORAL_CLI_PATH: await ensureTemporalCli() },
      { processGroup: true },
    );
    try {
      await waitFor(async () => existsSync(out) && (await readFile(out, 'utf8')).includes('\n'), 120_000, 'the first group');
      expect(await isServerListening('127.0.0.1:7233')).toBe(true);
      // The UI link outlives the run: the output says how to serve the history again.
      expect(run.stdout()).toMatch(/Temporal UI: http:\/\/127\.0\.0\.1:8233\/namespaces\/default\/workflows\?query=/);
      expect(run.stdout()).toContain('`npx clotho temporal start` serves its history again at this link');
      // Ctrl-C in a terminal: SIGINT to the whole process group, while generations are in flight. It is as quiet as
      // SIGINT to the command alone: the dev server (a group of its own) outlives the workers that talk to it.
      slow = true;
      const requests = model.requests.length;
      await waitFor(() => model.requests.length > requests, 30_000, 'a generation in flight');
      process.kill(-run.child.pid!, 'SIGINT');
      const code = await run.exited;
      expect(code).toBe(130);
      expect(run.stderr().trim()).toBe('clotho process: interrupted; the run is kept in Temporal and resumes with the same --env.run_id');
      expect(await isServerListening('127.0.0.1:7233')).toBe(false);
      // The run's state is in the SQLite file of the project-local state directory, for a later resume.
      expect(existsSync(join(home, 'temporal.sqlite'))).toBe(true);

      // `clotho temporal start` serves the run's history again, at the printed link.
      const env = { TEMPORAL_ADDRESS: '', CLOTHO_HOME: home, TEMPORAL_CLI_PATH: await ensureTemporalCli() };
      expect((await runClotho(['temporal', 'start'], env)).code).toBe(0);
      try {
        const runId = run.stdout().match(/^run (\S+):/m)![1]!;
        const connection = await Connection.connect({ address: '127.0.0.1:7233' });
        try {
          const client = new Client({ connection });
          await waitFor(async () => (await client.workflow.count(`ClothoRunId = "${runId}"`)).count > 0, 30_000, 'the run in visibility');
        } finally {
          await connection.close();
        }
        const link = run.stdout().match(/Temporal UI: (\S+)/)![1]!;
        expect((await fetch(link)).status).toBe(200);
      } finally {
        await runClotho(['temporal', 'stop'], env);
      }
    } finally {
      if (run.child.exitCode === null) run.child.kill('SIGKILL');
    }
  });
});
