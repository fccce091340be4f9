import type { Context } from 'hono';
import type { IngestResult, ScoredDataListResponse, ScoredDataPost } from '../schema/api.js';
import type { ScoredDataGroup } from '../schema/scored-data.js';
import { QueueFullError, UnknownEnvError, type IngestGroup, type TrajectoryService } from './service.js';
import { unprocessable } from './request.js';

/**
 * Takes Clotho's additions out of a posted group, leaving Atropos's 14 keys; `raw` is its posted JSON when that reads
 * back as the group (`keepsAsPosted`). Its messages are as posted (Atropos
 * takes any content); nothing on the way to the trainer reads them, so they pass as the group type's messages.
 */
export function toIngestGroup(post: ScoredDataPost, fallbackKey?: string, raw?: Uint8Array): IngestGroup {
  const { idempotency_key, policy_version, ...group } = post;
  const idempotencyKey = idempotency_key ?? fallbackKey;
  return {
    group: group as ScoredDataGroup,
    ...(raw === undefined ? {} : { raw }),
    ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
    ...(policy_version === undefined ? {} : { policyVersion: policy_version }),
  };
}

/**
 * Hands groups to the service; an unknown `env_id` becomes a 422 naming each offending group
 * (`loc` `["body", "env_id"]` for a single group, `["body", i, "env_id"]` in a list), and a full queue a 503
 * with `Retry-After` in FastAPI's error shape: Atropos's env client retries a 5xx (a 4xx it drops).
 */
export async function ingest(
  c: Context,
  service: TrajectoryService,
  groups: IngestGroup[],
  single: boolean,
): Promise<IngestResult[] | Response> {
  try {
    return await service.ingestGroups(groups);
  } catch (error) {
    if (error instanceof QueueFullError) {
      return c.json({ detail: error.message }, 503, { 'Retry-After': String(Math.ceil(error.retryAfterSeconds)) });
    }
    if (!(error instanceof UnknownEnvError)) throw error;
    const detail = groups.flatMap(({ group }, i) =>
      group.env_id !== null && error.envIds.includes(group.env_id)
        ? [{ loc: single ? ['body', 'env_id'] : ['body', i, 'env_id'], msg: error.message, type: 'value_error' }]
        : [],
    );
    return unprocessable(c, detail.length > 0 ? detail : [{ loc: ['body'], msg: error.message, type: 'value_error' }]);
  }
}

/** Atropos's `/scored_data_list` answer, with counters of Clotho's outcomes only when they occurred. */
export function summarise(results: IngestResult[]): ScoredDataListResponse {
  let buffered = 0;
  let lastBufferSize = 0;
  let duplicates = 0;
  let dropped = 0;
  for (const r of results) {
    if (r.status === 'buffered') {
      buffered += 1;
      lastBufferSize = r.buffer_size;
    } else if (r.status === 'dropped') dropped += 1;
    else if (r.duplicate) duplicates += 1;
  }
  const out: ScoredDataListResponse = { status: 'received', groups_processed: results.length };
  if (buffered > 0) Object.assign(out, { buffered, last_buffer_size: lastBufferSize });
  if (duplicates > 0) out.duplicates = duplicates;
  if (dropped > 0) out.dropped = dropped;
  return out;
}
