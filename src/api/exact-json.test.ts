import { describe, expect, it } from 'vitest';
import { EXACT_KEY, exactJson, freeFormTexts, fromStored, keepExactNumbers, toStored } from './exact-json.js';
import { floatJson, groupJson, responseJson } from './render.js';

describe('freeFormTexts', () => {
  it('finds each free-form member of a group or of every group in a list, skipping strings and nesting', () => {
    const group = '{"tokens": [[1, 2]], "note": "a \\"}{[\\" b", "generation_params" : {"t": [1.0, {"x": "]"}]}, "overrides":null}';
    expect(freeFormTexts(group)).toEqual([
      new Map([
        ['generation_params', '{"t": [1.0, {"x": "]"}]}'],
        ['overrides', 'null'],
      ]),
    ]);
    expect(freeFormTexts(` [ ${group} , 3, {"images": [2.50]} ] `).map((m) => Object.fromEntries(m))).toEqual([
      { generation_params: '{"t": [1.0, {"x": "]"}]}', overrides: 'null' },
      {},
      { images: '[2.50]' },
    ]);
  });

  it('reads escaped keys, and the last of a repeated key as JSON.parse does', () => {
    expect(freeFormTexts('{"generation\\u005fparams": {"a": 1.0}, "group_overrides": 1, "group_overrides": {"b": 2.0}}')).toEqual([
      new Map([
        ['generation_params', '{"a": 1.0}'],
        ['group_overrides', '{"b": 2.0}'],
      ]),
    ]);
  });
});

describe('exact numbers of free-form fields', () => {
  const body =
    '{"scores": [1.0], "generation_params": {"temperature": 1.0, "top_p": 0.9, "seed": 12345678901234567890, "k": 1E-7},' +
    ' "overrides": [{"set_advantage_to_zero": true}], "messages": [[{"role": "user", "content": "x", "reward": 2.0}]]}';

  it('keeps the text of numbers JS would write otherwise, and only those fields', () => {
    const group = JSON.parse(body) as Record<string, unknown>;
    const overrides = group.overrides;
    keepExactNumbers(body, [group]);
    expect(exactJson(group.generation_params)).toBe('{"temperature":1.0,"top_p":0.9,"seed":12345678901234567890,"k":1E-7}');
    expect(exactJson(group.messages)).toBe('[[{"role":"user","content":"x","reward":2.0}]]');
    expect(group.overrides).toBe(overrides);
  });

  it('survives the store: plain JSON for any reader, exact numbers for the API', () => {
    const group = JSON.parse(body) as Record<string, unknown>;
    keepExactNumbers(body, [group]);
    const stored = JSON.parse(JSON.stringify(toStored(group))) as Record<string, unknown>;
    // eslint-disable-next-line no-loss-of-precision -- the number as JSON.parse reads it, rounded: what plain readers get
    expect(stored.generation_params).toEqual({ temperature: 1, top_p: 0.9, seed: 12345678901234567890, k: 1e-7 });
    expect(Object.keys(stored[EXACT_KEY] as object)).toEqual(['messages', 'generation_params']);
    const back = fromStored(stored);
    expect(Object.keys(back)).not.toContain(EXACT_KEY);
    expect(exactJson(back.generation_params)).toBe('{"temperature":1.0,"top_p":0.9,"seed":12345678901234567890,"k":1E-7}');
    const plain = { tokens: [[1]], generation_params: { temperature: 1 } };
    expect(toStored(plain)).toEqual(plain);
    expect(fromStored(plain)).toBe(plain);
  });
});

describe('rendering as Atropos writes JSON', () => {
  it('writes float fields with a decimal point at any depth, and nothing else changes', () => {
    expect(floatJson([[1, -2, 0.5, 1e21, 1.5e-7], []])).toBe('[[1.0,-2.0,0.5,1e+21,1.5e-7],[]]');
    expect(floatJson(3)).toBe('3.0');
    expect(floatJson(null)).toBe('null');
  });

  it('writes a group with the 14 fields in order: floats as floats, ints as ints, free-form as posted', () => {
    const body =
      '{"tokens": [[5, 6]], "masks": [[-100, 6]], "scores": [1], "inference_logprobs": [[1.0, -0.25]], "generation_params": {"temperature": 1.0, "n": 2}}';
    const group = { ...JSON.parse(body), env_id: 3, extra: 'dropped' } as Record<string, unknown>;
    keepExactNumbers(body, [group]);
    const text = groupJson(group);
    expect(text).toBe(
      '{"tokens":[[5,6]],"masks":[[-100,6]],"scores":[1.0],"advantages":null,"ref_logprobs":null,"messages":null,' +
        '"generation_params":{"temperature":1.0,"n":2},"inference_logprobs":[[1.0,-0.25]],"overrides":null,"group_overrides":null,' +
        '"images":null,"env_id":3,"distill_token_ids":null,"distill_logprobs":null}',
    );
    expect(responseJson({ batch: [group], batch_id: 'b', skipped: undefined }, { groups: ['batch'] })).toBe(
      `{"batch":[${text}],"batch_id":"b"}`,
    );
    expect(responseJson({ batch: null }, { groups: ['batch'] })).toBe('{"batch":null}');
    expect(responseJson({ env_weight: 1, queue_size: 2 }, { floats: ['env_weight'] })).toBe('{"env_weight":1.0,"queue_size":2}');
  });
});
