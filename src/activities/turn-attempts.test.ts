import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { afterEach, describe, expect, it } from 'vitest';
import { assistantTurns, startScriptedOpenAI, type ScriptedOpenAI } from '../../test/support/scripted-openai.js';
import { weatherTools } from '../../test/support/tool-environment.js';
import { BaseEnvConfigSchema, ServerConfigSchema } from '../config/schemas.js';
import { loadEnvironmentData } from '../env/loaded.js';
import { createOpenAIClient } from '../inference/openai-client.js';
import { FileSystemStore } from '../store/trajectory-store.js';
import type { GroupState } from './group-state.js';
import { createTurnActivities, type TakeTurnsInput, type TakeTurnsResult } from './turn.js';

/**
 * Issue 38, finding 1, for an episode's turns: a `takeTurns` local activity can run twice side by side, when its
 * workflow task times out while it still runs (its worker cut off from Temporal, which then hands the task to another
 * worker, whose replay runs the activity again). A turn's state record is a delta on the one before it, by key: the
 * stale run's late write of a turn must not replace the record the live run built its next turns on.
 */

const servers: ScriptedOpenAI[] = [];
const roots: string[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  await Promise.all(roots.splice(0).map((root) => rm(root, { recursive: true, force: true })));
});

// The stale run's failure is expected.
const quiet = new DefaultLogger('ERROR');

/** The assistant texts a state record adds: a base record's, or a delta's (issue 25's format 2). */
function assistantTexts(record: unknown): unknown[] {
  const r = record as { base?: GroupState; trajectories?: Record<string, { messages?: { role: string; content: unknown }[] }> };
  const messages = r.base ? r.base.trajectories[0]!.messages : (r.trajectories?.['0']?.messages ?? []);
  return messages.filter((m) => m.role === 'assistant').map((m) => m.content);
}

describe('two takeTurns of one group side by side: the stale one, and the one that replaced it', () => {
  it("keeps every turn record the live run wrote: the stale run's late turn is not written", async () => {
    const root = await mkdtemp(join(tmpdir(), 'clotho-turn-attempts-'));
    roots.push(root);
    const store = new FileSystemStore(root);
    const config = BaseEnvConfigSchema.extend(weatherTools.config).parse({ group_size: 1, any_turn_is_call: true });
    const environments = { 'weather-tools': await loadEnvironmentData(weatherTools, config as never) };
    // Each run has its own model: the stale one's second turn is held until the live run is done.
    let atHeld!: () => void;
    const held = new Promise<void>((resolve) => (atHeld = resolve));
    let letGo!: () => void;
    const released = new Promise<void>((resolve) => (letGo = resolve));
    const model = async (name: string, hold: boolean) => {
      const server = await startScriptedOpenAI({
        responder: async (body) => {
          const turn = assistantTurns(body);
          if (hold && turn === 1) {
            atHeld();
            await released;
          }
          return { choices: [{ text: `${name}${turn}` }] };
        },
      });
      servers.push(server);
      const client = createOpenAIClient(ServerConfigSchema.parse({ base_url: server.baseUrl, timeout: 30 }));
      return createTurnActivities({ inference: () => client, store, environments }).takeTurns;
    };
    const input: TakeTurnsInput = {
      runId: 'run',
      environment: 'weather-tools',
      itemIndex: 0,
      turn: 0,
      state: null,
      groupSize: 1,
      sampling: { temperature: 1, topP: 1 },
      maxTokenLength: 256,
      maxTurns: 3,
    };
    const run = (takeTurns: Awaited<ReturnType<typeof model>>) =>
      new MockActivityEnvironment({ isLocal: true, attempt: 1 }, { logger: quiet }).run(takeTurns, input);

    const stale = run(await model('stale-', true)).then(
      (result) => result as TakeTurnsResult,
      (error: Error) => error,
    );
    await held;
    const live = await run(await model('live-', false));
    letGo();
    await stale;

    const turn = (t: number) => store.get(`run/weather-tools/item-0/turn-${t}/generated`);
    // Turn 0 the live run read back (the stale run wrote it first); turns 1 and 2 it generated.
    expect(live).toMatchObject({ turns: 3, next: false });
    expect([assistantTexts(await turn(0)), assistantTexts(await turn(1)), assistantTexts(await turn(2))]).toEqual([
      ['stale-0'],
      ['live-1'],
      ['live-2'],
    ]);
  });
});
