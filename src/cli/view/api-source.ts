import { fromScored } from './groups.js';
import { summariseGroup, type GroupSummary, type RawGroup } from './model.js';
import type { LoadedRun, RunSource } from './source.js';

/** Groups asked for per `GET /queue` (the API's largest page). */
const PAGE = 200;
/** Groups read at most per load: `clotho api --max-queue-groups` defaults to as many. */
const MAX_GROUPS = 5000;

/** One entry of `GET /queue`. */
interface Waiting {
  id: string;
  env_id: number | null;
  policy_version: number | null;
  received_at: number | null;
  group: unknown;
}

/** Where a waiting group came from, for its label: its id, env, policy and arrival (UTC). */
function labelOf(entry: Waiting): string {
  const parts = [entry.id, entry.env_id === null ? 'no env' : `env ${entry.env_id}`];
  if (entry.policy_version !== null) parts.push(`policy ${entry.policy_version}`);
  if (entry.received_at !== null) parts.push(`received ${new Date(entry.received_at * 1000).toISOString().slice(11, 19)} UTC`);
  return parts.join(' · ');
}

/**
 * The groups waiting for the trainer in a running `clotho api` (queued, buffered, or in batches formed but not yet
 * served), read with `GET /queue`, which takes nothing from the trainer. Each load (the page's Reload) reads the queue
 * again; until then a group the trainer took meanwhile can still be opened.
 */
export function apiSource(url: string, options: { id: string; token?: string }): RunSource {
  const base = url.replace(/\/+$/, '');
  const headers: Record<string, string> = options.token === undefined ? {} : { Authorization: `Bearer ${options.token}` };
  let read = new Map<string, RawGroup>();

  const page = async (offset: number): Promise<{ total: number; groups: Waiting[] }> => {
    const response = await fetch(`${base}/queue?offset=${offset}&limit=${PAGE}`, { headers });
    const text = await response.text();
    if (response.status === 401) throw new Error(`${base} wants a bearer token: --token (or CLOTHO_API_TOKEN)`);
    if (!response.ok) throw new Error(`GET ${base}/queue answered ${response.status}: ${text.slice(0, 200)}`);
    return JSON.parse(text) as { total: number; groups: Waiting[] };
  };

  return {
    id: options.id,
    kind: 'api',
    origin: `${base} · groups waiting for the trainer`,
    async load(): Promise<LoadedRun> {
      const notices: string[] = [];
      const groups: GroupSummary[] = [];
      const raw = new Map<string, RawGroup>();
      try {
        // Pages shift when the trainer takes groups between them: an id already read is not listed twice.
        let total = 0;
        for (let offset = 0; offset < MAX_GROUPS; offset += PAGE) {
          const got = await page(offset);
          total = got.total;
          for (const entry of got.groups) {
            if (raw.has(entry.id)) continue;
            try {
              const group = fromScored(entry.group);
              raw.set(entry.id, group);
              groups.push(summariseGroup(group, { id: entry.id, label: labelOf(entry), address: null, status: 'scored' }));
            } catch (error) {
              notices.push(`${entry.id}: ${(error as Error).message}`);
            }
          }
          if (got.groups.length < PAGE) break;
        }
        if (total > MAX_GROUPS) notices.push(`showing the first ${MAX_GROUPS} of ${total} waiting groups`);
        if (total === 0) notices.push(`no groups wait for the trainer in ${base}`);
      } catch (error) {
        notices.push(`${base}: ${(error as Error).message}`);
      }
      read = raw;
      return { groups, notices };
    },
    async group(id) {
      return read.get(id);
    },
  };
}
