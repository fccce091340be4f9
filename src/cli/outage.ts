import type { ServerStatus } from '../inference/server-manager.js';

/**
 * What is down, for the progress line: the inference servers this process could not reach and for how long, and,
 * when none is up, the groups in flight that wait for one (`inference server http://… unreachable for 40 s, 12
 * groups waiting`). Empty while every server is up.
 */
export function outageNote(servers: readonly ServerStatus[], groupsInFlight: number, now = Date.now()): string {
  const down = servers.filter((s) => !s.healthy && s.downSince !== undefined);
  if (down.length === 0) return '';
  const seconds = Math.max(0, Math.round((now - Math.min(...down.map((s) => s.downSince!))) / 1000));
  const names = down.map((s) => s.baseUrl).join(', ');
  const what = `inference server${down.length > 1 ? 's' : ''} ${names} unreachable for ${seconds} s`;
  return down.length === servers.length ? `${what}, ${groupsInFlight} group${groupsInFlight === 1 ? '' : 's'} waiting` : what;
}
