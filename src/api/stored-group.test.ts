import { describe, expect, it } from 'vitest';
import { ScoredDataPostSchema } from '../schema/api.js';
import { SCORED_DATA_FIELDS, type ScoredDataGroup } from '../schema/scored-data.js';
import { JsonBytes, serialised } from '../store/trajectory-store.js';
import { keepExactNumbers, toStored } from './exact-json.js';
import { toIngestGroup } from './ingest.js';
import { groupBlob, keepsAsPosted, storedGroup } from './stored-group.js';

/** A post as the API reads it: JSON.parse of the body, validated, free-form numbers kept exact. */
function read(body: string) {
  const value: unknown = JSON.parse(body);
  const data = ScoredDataPostSchema.parse(value) as Record<string, unknown>;
  keepExactNumbers(body, [data]);
  return { value, data };
}

/** What a reader of the store gets back from a blob written by `put`. */
const throughStore = (blob: unknown): ScoredDataGroup => {
  const bytes = serialised(blob);
  return storedGroup(JSON.parse(typeof bytes === 'string' ? bytes : Buffer.from(bytes).toString('utf8')) as ScoredDataGroup);
};

describe('a posted group in the store', () => {
  it('is kept as posted when that reads back as its validated form, Clotho’s additions and missing defaults included', () => {
    const body =
      '{"tokens": [[1, 2]], "masks": [[-100, 2]], "scores": [1.0], "idempotency_key": "k", "policy_version": 3,' +
      ' "messages": [[{"role": "user", "content": {"x": 1}}]], "generation_params": {"t": 0.5}}';
    const { value, data } = read(body);
    expect(keepsAsPosted(value, data)).toBe(true);
    const posted = toIngestGroup(data as never, undefined, Buffer.from(body));
    const blob = groupBlob(posted);
    expect(blob).toBeInstanceOf(JsonBytes);
    const back = throughStore(blob);
    expect(Object.keys(back)).toEqual(SCORED_DATA_FIELDS);
    // The same group as the parsed form written the old way, toStored.
    expect(back).toEqual(throughStore(toStored(toIngestGroup(data as never).group)));
    expect(back.env_id).toBeNull();
  });

  it('keeps the tools the model was offered in the store, and serves trainers Atropos’s 14 fields', () => {
    const tools = [{ type: 'function', function: { name: 'add', parameters: { type: 'object' } } }];
    const body = JSON.stringify({ tokens: [[1, 2]], masks: [[-100, 2]], scores: [1], tools });
    const { value, data } = read(body);
    expect(data.tools).toEqual(tools);
    expect(keepsAsPosted(value, data)).toBe(true);
    const blob = groupBlob(toIngestGroup(data as never, undefined, Buffer.from(body)));
    expect(JSON.parse(Buffer.from(serialised(blob) as Uint8Array).toString('utf8')).tools).toEqual(tools);
    expect(Object.keys(throughStore(blob))).toEqual(SCORED_DATA_FIELDS);
    expect(ScoredDataPostSchema.safeParse({ ...JSON.parse(body), tools: 'add' }).success).toBe(false);
  });

  it('is written from its parsed form when the posted JSON would read back otherwise', () => {
    const cases = {
      'a key validation drops': '{"tokens": [[1]], "masks": [[1]], "scores": [1], "note": "x"}',
      'the stored form’s own key': '{"tokens": [[1]], "masks": [[1]], "scores": [1], "clotho_exact_json": {"messages": "[]"}}',
      'a free-form float JSON.parse makes an integer': '{"tokens": [[1]], "masks": [[1]], "scores": [1], "generation_params": {"t": 1.0}}',
    };
    for (const [why, body] of Object.entries(cases)) {
      const { value, data } = read(body);
      expect(keepsAsPosted(value, data), why).toBe(false);
    }
    expect(keepsAsPosted([{}], {})).toBe(false);
  });
});
