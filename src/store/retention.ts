import { groupOfRecord } from './group-journal.js';
import type { TrajectoryStore } from './trajectory-store.js';

/**
 * How long the trajectory store keeps a group's blobs (`clotho api --retention`):
 * - `keep`: for ever (the default, as before retention existed);
 * - `ack`: until the trainer has the group for good: its batch acked under a lease, or served without one (Atropos's
 *   `GET /batch`, where a served batch is gone); a posted group the batcher refuses (stale, empty, too long) at once;
 * - `<duration>` (`90s`, `30m`, `12h`, `7d`): until no blob of the group was written for that long, whatever became
 *   of it, so groups no ack ever names (dropped by their env-run, failed, trained through `--trainer temporal`) go too;
 * - `ack,<duration>`: both.
 */
export interface RetentionPolicy {
  ack: boolean;
  /** Age in milliseconds past which a group's blobs are deleted; null: never by age. */
  maxAgeMs: number | null;
}

export const KEEP: RetentionPolicy = { ack: false, maxAgeMs: null };

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90s`, `30m`, `12h`, `7d`, `250ms` in milliseconds; throws for anything else. */
export function parseDuration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text.trim());
  const ms = match ? Number(match[1]) * UNITS[match[2]!]! : NaN;
  if (!(ms > 0) || !Number.isFinite(ms)) throw new Error(`"${text}" is not a duration (a number and ms, s, m, h or d: 30m, 12h, 7d)`);
  return Math.round(ms);
}

/** Parses `--retention keep|ack|<duration>|ack,<duration>`. */
export function parseRetention(spec: string): RetentionPolicy {
  const parts = spec.split(',').map((p) => p.trim().toLowerCase());
  if (parts.length === 1 && parts[0] === 'keep') return KEEP;
  const policy: RetentionPolicy = { ack: false, maxAgeMs: null };
  for (const part of parts) {
    if (part === 'ack' && !policy.ack) policy.ack = true;
    else if (part !== 'ack' && part !== 'keep' && policy.maxAgeMs === null) policy.maxAgeMs = parseDuration(part);
    else throw new Error(`--retention ${spec}: expected keep, ack, a duration (30m, 12h, 7d) or ack,<duration>`);
  }
  return policy;
}

/**
 * The group a store key belongs to: `<run>/<env>/item-<i>` for every key of a rollout group (its prompt, turns, tool
 * records, checkpoints, judgements, the assembled group), `api/<hash>` for a group posted to the API. Null for what is
 * not a group's: the API's record of accepted idempotency keys, the batcher's state.
 */
export function groupOfKey(key: string): string | null {
  // The group's own key as well as those inside it: what lies inside `<key>/`.
  const group = groupOfRecord(`${key}/_`);
  if (group !== null) return group;
  const parts = key.split('/');
  if (parts.length === 2 && parts[0] === 'api') return key;
  return null;
}

/**
 * Deletes the blobs of delivered groups, given their batcher refs (`<run>/<env>/item-<i>/group` or `api/<hash>`):
 * a rollout group's whole prefix, a posted group's one entry.
 */
export async function deleteGroups(store: TrajectoryStore, refs: readonly string[]): Promise<void> {
  const groups = [...new Set(refs.map((ref) => groupOfKey(ref) ?? ref))];
  // A few at a time: a batch names tens of groups, each a listing and a delete on an object store. Every deletion
  // has ended when this returns or throws, none goes on behind the caller's back.
  const failures: unknown[] = [];
  for (let i = 0; i < groups.length; i += 16) {
    const settled = await Promise.allSettled(groups.slice(i, i + 16).map((group) => store.deletePrefix(group)));
    for (const result of settled) if (result.status === 'rejected') failures.push(result.reason);
  }
  if (failures.length > 0)
    throw new AggregateError(failures, `${failures.length} of ${groups.length} groups not deleted: ${String(failures[0])}`);
}

/** What one sweep found and deleted. */
export interface SweepResult {
  groups: number;
  bytes: number;
}

/** Deletes every group whose newest blob is older than `maxAgeMs` at `now`. */
export async function sweepOldGroups(store: TrajectoryStore, maxAgeMs: number, now = Date.now()): Promise<SweepResult> {
  const newest = new Map<string, { modified: number; bytes: number }>();
  for await (const entry of store.list('')) {
    const group = groupOfKey(entry.key);
    if (group === null) continue;
    const seen = newest.get(group);
    newest.set(group, { modified: Math.max(seen?.modified ?? 0, entry.modified.getTime()), bytes: (seen?.bytes ?? 0) + entry.size });
  }
  const old = [...newest].filter(([, g]) => now - g.modified > maxAgeMs);
  await deleteGroups(
    store,
    old.map(([group]) => group),
  );
  return { groups: old.length, bytes: old.reduce((n, [, g]) => n + g.bytes, 0) };
}

/** A sweep running every so often until stopped. */
export interface RetentionSweep {
  /** Runs a sweep now (after the one in progress, if any). */
  sweepNow(): Promise<SweepResult>;
  stop(): Promise<void>;
}

/**
 * Sweeps the store for groups older than `maxAgeMs` every `intervalMs` (default: a quarter of the age, between
 * 1 s and 10 min). A failed sweep (the store unreachable) is reported and tried again at the next interval.
 */
export function startRetentionSweep(
  store: TrajectoryStore,
  maxAgeMs: number,
  options: { intervalMs?: number; onError?: (error: unknown) => void; onSweep?: (result: SweepResult) => void } = {},
): RetentionSweep {
  const intervalMs = options.intervalMs ?? Math.min(600_000, Math.max(1000, Math.floor(maxAgeMs / 4)));
  let running: Promise<SweepResult | undefined> = Promise.resolve(undefined);
  const sweep = () => {
    const next = running.then(async () => {
      const result = await sweepOldGroups(store, maxAgeMs);
      options.onSweep?.(result);
      return result;
    });
    running = next.catch((error: unknown) => {
      options.onError?.(error);
      return undefined;
    });
    return next;
  };
  const timer = setInterval(() => void sweep().catch(() => undefined), intervalMs);
  timer.unref();
  return {
    sweepNow: sweep,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}

/** What a process that serves batches runs for a retention policy. */
export interface Retention {
  /** Deletes delivered groups' blobs (`ack`); failures are reported, never thrown. Absent when the policy keeps them. */
  onDelivered?: (refs: string[]) => Promise<void>;
  /** Stops the sweep by age, if any, after the sweep in progress. */
  stop(): Promise<void>;
}

/**
 * The retention `policy` over `store`: deletion on delivery and a sweep by age as the policy asks. Errors (the store
 * unreachable) go to `report` and leave blobs behind, which a sweep by age catches later; they never fail an ack.
 */
export function retentionFor(
  store: TrajectoryStore,
  policy: RetentionPolicy = KEEP,
  report: (line: string) => void = (line) => console.error(line),
): Retention {
  const sweep =
    policy.maxAgeMs === null
      ? undefined
      : startRetentionSweep(store, policy.maxAgeMs, {
          onError: (error) => report(`retention: sweep of the trajectory store failed: ${String(error)}`),
        });
  return {
    ...(policy.ack
      ? {
          async onDelivered(refs: string[]) {
            try {
              await deleteGroups(store, refs);
            } catch (error) {
              report(`retention: could not delete ${refs.length} delivered groups from the trajectory store: ${String(error)}`);
            }
          },
        }
      : {}),
    stop: async () => sweep?.stop(),
  };
}
