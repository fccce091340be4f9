import { groupKey, type GroupAddress, type Trajectory } from '../../src/activities/group-state.js';
import type { CallRecord } from '../../src/activities/harness-session.js';
import type { HarnessOutcome } from '../../src/env/harness.js';
import type { TrajectoryStore } from '../../src/store/trajectory-store.js';

/**
 * A harness rollout's store records written by hand (issue 27: `…/harness/sample-<s>/call-<k>` and `…/result`), for
 * tests of what `clotho inspect` and the viewer show of them.
 */

/** A model call's record: `completion` words of reply, one token each. */
export function callRecord(call: number, summary: string, completion: string, fields: { promptTokens?: number; modelMs?: number } = {}) {
  const tokenIds = completion.split(' ').map((_, i) => 100 + i);
  return {
    call,
    request: `request-${call}`,
    messages: [],
    params: 'params',
    prev: call === 0 ? null : `prev-${call}`,
    summary,
    promptTokens: fields.promptTokens ?? 100 + 50 * call,
    completion: { text: completion, tokenIds, logprobs: tokenIds.map(() => -0.5), finishReason: 'stop' },
    response: { id: `chatcmpl-${call}` },
    modelMs: fields.modelMs ?? 10 * (call + 1),
  } satisfies CallRecord;
}

/** A finished rollout's outcome: the agent exited 0 and the check passed, unless `fields` say otherwise. */
export function harnessOutcome(fields: Partial<HarnessOutcome> = {}): HarnessOutcome {
  return {
    agent: 'bash',
    ended: 'exited',
    exitCode: 0,
    output: '',
    calls: 0,
    replayed: 0,
    diverged: [],
    check: { exitCode: 0, passed: true, output: 'OK\n', timedOut: false },
    ...fields,
  };
}

/** A rollout's trajectory of these messages. */
export function harnessTrajectory(messages: Trajectory['messages']): Trajectory {
  return {
    messages,
    tokens: [1, 2, 3],
    masks: [-100, 2, 3],
    logprobs: [1, -0.1, -0.2],
    completionTokens: 2,
    finishReason: 'stop',
    done: true,
  };
}

/** Writes a rollout's call records and, when it finished, its result. */
export async function writeHarnessRollout(
  store: TrajectoryStore,
  address: GroupAddress,
  sample: number,
  calls: ReturnType<typeof callRecord>[],
  result?: { outcome: HarnessOutcome; trajectory?: Trajectory },
): Promise<void> {
  const key = (part: string) => groupKey(address, 'harness', `sample-${sample}`, part);
  for (const call of calls) await store.put(key(`call-${call.call}`), call);
  if (result) {
    await store.put(key('result'), {
      trajectory: result.trajectory ?? harnessTrajectory([{ role: 'user', content: 'fix it' }]),
      outcome: result.outcome,
    });
  }
}
