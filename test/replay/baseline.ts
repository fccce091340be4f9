import { canFinish } from '../../src/version.js';

type StartedEvent = { workflowExecutionStartedEventAttributes?: { memo?: { fields?: Record<string, { data?: string }> } } };

/**
 * The Clotho version a committed history recorded in its memo (`clothoVersion`, JSON in base64 as `temporal workflow
 * show --output json` writes it); undefined for a history recorded before versions were.
 */
export function historyVersion(history: { events: unknown[] }): string | undefined {
  const data = (history.events[0] as StartedEvent).workflowExecutionStartedEventAttributes?.memo?.fields?.clothoVersion?.data;
  return data === undefined ? undefined : (JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as string);
}

/** Whether the history was recorded by a Clotho at or after the replay baseline: the only ones the suite replays. */
export function atBaseline(history: { events: unknown[] }): boolean {
  return canFinish(historyVersion(history));
}
