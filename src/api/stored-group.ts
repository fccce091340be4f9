import { SCORED_DATA_FIELDS, type ScoredDataGroup } from '../schema/scored-data.js';
import { JsonBytes } from '../store/trajectory-store.js';
import { FREE_FORM_FIELDS, fromStored, hasExactNumbers, toStored } from './exact-json.js';
import type { IngestGroup } from './service.js';

/**
 * How a posted group lies in the trajectory store. Serialising a group again costs the API about as much as parsing
 * it did (its token arrays are most of it), so a group that validation left as it came (the usual post) is stored as
 * the bytes it was posted in; any other as its parsed, plain form (`toStored`). Reading either gives the same group.
 */

/** Top-level keys a post may carry and still be kept as posted: Atropos's 14 and Clotho's three additions. */
const KEPT_AS_POSTED = new Set<string>([...SCORED_DATA_FIELDS, 'idempotency_key', 'policy_version', 'tools']);

/**
 * Whether the posted JSON of one group (`posted`, as JSON.parse read it) reads back as its validated form `group`:
 * validation took it as it was (strict, not lax numbers), it names no key validation would drop (the stored form's
 * own `clotho_exact_json` among them), and no free-form number would lose its form (`1.0`) by JSON.parse.
 */
export function keepsAsPosted(posted: unknown, group: Record<string, unknown>): boolean {
  if (posted === null || typeof posted !== 'object' || Array.isArray(posted)) return false;
  for (const key of Object.keys(posted)) if (!KEPT_AS_POSTED.has(key)) return false;
  return !FREE_FORM_FIELDS.some((field) => hasExactNumbers(group[field]));
}

/** What the store keeps for a posted group: its posted bytes when it has them, else its plain form. */
export const groupBlob = ({ group, raw }: IngestGroup): unknown => (raw ? new JsonBytes(raw) : toStored(group));

/**
 * The group a stored blob holds, with exactly Atropos's 14 fields: a group kept as posted may lack the ones that
 * default to null and carry Clotho's additions, which the batcher already has.
 */
export function storedGroup(stored: ScoredDataGroup): ScoredDataGroup {
  const group = fromStored(stored) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const field of SCORED_DATA_FIELDS) out[field] = group[field] ?? null;
  return out as ScoredDataGroup;
}
