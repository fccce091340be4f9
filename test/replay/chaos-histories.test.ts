import { readFile } from 'node:fs/promises';
import { Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { workflowBundle } from '../../src/workers/bundle.js';
import { atBaseline } from './baseline.js';

/**
 * Determinism guard over histories of a chaos run (issue 8, point 7): an env-run and its batcher from a `clotho serve`
 * run whose every process was killed -9 and restarted (the environment process as `clotho worker` too), recorded on
 * the replay baseline's code (REPLAY_BASELINE). They must replay against today's workflow code: running workflows are
 * replayed after every crash, and a change that breaks them would strand those runs. A change of command order goes
 * behind `patched` first; the release that raises the baseline records them anew (ARCHITECTURE.md, "Replay and
 * patches"):
 *   CHAOS_PROFILE=short CHAOS_STEPS=40 CHAOS_KILLS=1 CHAOS_RECORD_HISTORIES=test/replay/histories \
 *     node --import tsx test/support/chaos/main.ts
 */
const HISTORIES = new URL('./histories/', import.meta.url);

type History = { events: { eventType: string; workflowTaskStartedEventAttributes?: { identity?: string } }[] };

describe('replay of chaos-run histories', () => {
  it.each([
    ['env-run-chaos.json', 'envRun'],
    ['batcher-chaos.json', 'batcher'],
  ])('replays %s against the current workflow code', async (file, workflowType) => {
    const history = JSON.parse(await readFile(new URL(file, HISTORIES), 'utf8')) as History;
    const started = history.events[0] as unknown as { workflowExecutionStartedEventAttributes: { workflowType: { name: string } } };
    expect(started.workflowExecutionStartedEventAttributes.workflowType.name).toBe(workflowType);
    // Recorded across kills: workflow tasks were taken by more than one worker process.
    const workers = new Set(history.events.flatMap((e) => e.workflowTaskStartedEventAttributes?.identity ?? []));
    expect(workers.size).toBeGreaterThan(1);
    expect(atBaseline(history), `${file} was recorded before the replay baseline: record it anew`).toBe(true);
    await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, file);
  });
});
