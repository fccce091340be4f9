import { readdir, readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { ATROPOS_BOUNDARY } from './atropos.js';
import type { BoundaryContract } from './boundary.js';

const HISTORIES = new URL('../../test/replay/histories/', import.meta.url);

type Payloads = { payloads?: { data: string }[] };
interface Event {
  eventId: string;
  activityTaskScheduledEventAttributes?: { activityType: { name: string }; input?: Payloads };
  activityTaskCompletedEventAttributes?: { scheduledEventId: string; result?: Payloads };
}

const decoded = (payloads: Payloads | undefined): unknown[] =>
  (payloads?.payloads ?? []).map((p) => JSON.parse(Buffer.from(p.data, 'base64').toString('utf8')));

/** Every input and answer of an Atropos activity in the committed histories: what the workers really exchanged. */
async function recorded(): Promise<{ file: string; activity: string; kind: 'input' | 'answer'; value: unknown }[]> {
  const found = [];
  for (const file of (await readdir(HISTORIES)).filter((f) => f.endsWith('.json')).sort()) {
    const { events } = JSON.parse(await readFile(new URL(file, HISTORIES), 'utf8')) as { events: Event[] };
    const scheduled = new Map<string, string>();
    for (const event of events) {
      const started = event.activityTaskScheduledEventAttributes;
      if (started?.activityType.name.startsWith('atropos')) {
        scheduled.set(event.eventId, started.activityType.name);
        for (const value of decoded(started.input))
          found.push({ file, activity: started.activityType.name, kind: 'input' as const, value });
      }
      const completed = event.activityTaskCompletedEventAttributes;
      const activity = completed && scheduled.get(completed.scheduledEventId);
      if (activity) for (const value of decoded(completed.result)) found.push({ file, activity, kind: 'answer' as const, value });
    }
  }
  return found;
}

describe("the Atropos worker's boundary", () => {
  it('takes every input and answer the committed histories recorded between the workflows and the Python worker', async () => {
    const payloads = await recorded();
    const activities: BoundaryContract['activities'] = ATROPOS_BOUNDARY.activities;
    // Each activity the workflows call, in both directions.
    expect(new Set(payloads.map((p) => `${p.activity} ${p.kind}`))).toEqual(
      new Set(
        ['atroposNextItem', 'atroposCollect', 'atroposCheckpoint', 'atroposMetrics', 'atroposEvaluate'].flatMap((a) => [
          `${a} input`,
          `${a} answer`,
        ]),
      ),
    );
    const refused = payloads.flatMap(({ file, activity, kind, value }) => {
      const parsed = activities[activity]![kind].safeParse(value);
      return parsed.success ? [] : [`${file}: ${activity}'s ${kind}: ${String(parsed.error)}`];
    });
    expect(refused).toEqual([]);
  });
});
