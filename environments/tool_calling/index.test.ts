import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { ConfigError, parseToolCalls, resolveEnvConfig, toScoreResult, type MalformedToolCall, type ToolCallRequest } from 'clotho';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CATEGORY_FILES, toJsonSchema } from './bfcl.js';
import type { BfclSchema, ModelCall } from './checker.js';
import toolCalling, { SYSTEM_PROMPT, type ToolCallingItem } from './index.js';
import { groundTruthCall } from './testing.js';

const BFCL_DIR = fileURLToPath(new URL('./data', import.meta.url));
const configFor = (argv: string[]) => resolveEnvConfig(toolCalling, argv);
type Config = ReturnType<typeof configFor>;

async function loadAll(argv: string[] = []): Promise<ToolCallingItem[]> {
  const source = await toolCalling.load(configFor(['--env.data_dir', BFCL_DIR, ...argv]));
  return Array.from({ length: source.size }, (_, i) => source.get(i));
}

/** Parses and scores one trajectory through the environment, as the rollout's parse and score steps do. */
async function scoreOf(item: ToolCallingItem, config: Config, toolCalls: ToolCallRequest[], malformedToolCalls: MalformedToolCall[] = []) {
  const base = {
    item,
    config,
    sample: 0,
    toolCalls,
    malformedToolCalls,
    messages: [],
    finishReason: 'stop',
    state: null,
    signal: new AbortController().signal,
    heartbeat() {},
  };
  const parsed = await toolCalling.parse('', item, base);
  return toScoreResult(
    await toolCalling.score({
      ...base,
      parsed,
      completion: '',
      turnRewards: [],
      judge: { complete: async () => [] },
      group: null,
      judgements: {},
    }),
  );
}
const requests = (calls: ModelCall[]): ToolCallRequest[] => calls.map((call, i) => ({ id: `call-${i}`, ...call }));

describe('tool_calling config', () => {
  it('serves all four categories by default, without partial credit', () => {
    expect(configFor([])).toMatchObject({
      data_dir: null,
      categories: ['simple', 'multiple', 'parallel', 'parallel_multiple'],
      partial_credit: false,
      underscore_names: false,
      group_size: 16,
    });
  });

  it('takes a comma-separated list of categories and rejects an unknown one', () => {
    expect(configFor(['--env.categories', 'simple, parallel']).categories).toEqual(['simple', 'parallel']);
    expect(() => configFor(['--env.categories', 'simple,live_simple'])).toThrow(ConfigError);
    expect(() => configFor(['--env.categories', ''])).toThrow(ConfigError);
  });
});

describe('tool_calling data', () => {
  let items: ToolCallingItem[];
  beforeAll(async () => {
    items = await loadAll();
  });

  it('loads every line of the four BFCL files, interleaving the categories', async () => {
    expect(items).toHaveLength(1000);
    expect(items.slice(0, 4).map((item) => item.id)).toEqual(['simple_python_0', 'multiple_0', 'parallel_0', 'parallel_multiple_0']);
    const count = (category: string) => items.filter((item) => item.category === category).length;
    expect([count('simple'), count('multiple'), count('parallel'), count('parallel_multiple')]).toEqual([400, 200, 200, 200]);
    const two = await loadAll(['--env.categories', 'parallel,simple']);
    expect(two).toHaveLength(600);
    expect(two[0]!.id).toBe('parallel_0');
  });

  it('scores every item’s ground truth +1 through the real scorer, calls in reverse order', async () => {
    const config = configFor(['--env.data_dir', BFCL_DIR]);
    const failures: string[] = [];
    for (const item of items) {
      const calls = item.expected.map((expected) => groundTruthCall(expected, item.functions)).reverse();
      const result = await scoreOf(item, config, requests(calls));
      if (result.score !== 1) failures.push(item.id);
      else expect(result.metrics).toEqual({ accuracy: 1, [`accuracy_${item.category}`]: 1, malformed_tool_calls: 0, no_tool_call: 0 });
    }
    expect(failures).toEqual([]);
  });

  it('scores the ground truth -1 with a call renamed, or every call made twice', async () => {
    const config = configFor(['--env.data_dir', BFCL_DIR]);
    for (const item of items) {
      const calls = item.expected.map((expected) => groundTruthCall(expected, item.functions));
      const renamed = [{ ...calls[0]!, name: `${calls[0]!.name}_v2` }, ...calls.slice(1)];
      expect((await scoreOf(item, config, requests(renamed))).score, item.id).toBe(-1);
      expect((await scoreOf(item, config, requests([...calls, ...calls]))).score, item.id).toBe(-1);
    }
  });

  it('offers every function as an OpenAI tool whose parameters compile as JSON Schema', () => {
    // Formats such as "date" are annotations here; ajv knows no format names without ajv-formats.
    const ajv = new Ajv({ validateFormats: false });
    for (const item of items) {
      const tools = toolCalling.tools!(item, configFor([])) as { type: string; function: { name: string; parameters: object } }[];
      expect(tools.map((tool) => tool.function.name)).toEqual(item.functions.map((fn) => fn.name));
      for (const tool of tools) {
        expect(tool.type).toBe('function');
        expect(() => ajv.compile(tool.function.parameters), `${item.id} ${tool.function.name}`).not.toThrow();
      }
    }
  });

  it('renames dotted functions in tools and answers alike with --env.underscore_names', async () => {
    const renamed = await loadAll(['--env.underscore_names', '--env.categories', 'parallel_multiple']);
    const item = renamed[0]!;
    expect(item.functions.map((fn) => fn.name)).toEqual(['math_toolkit_sum_of_multiples', 'math_toolkit_product_of_primes']);
    expect(item.expected.map((call) => call.name)).toEqual(['math_toolkit_sum_of_multiples', 'math_toolkit_product_of_primes']);
    expect(JSON.stringify(item.tools)).not.toContain('math_toolkit.');
  });
});

describe('tool_calling data files', () => {
  const saved = process.env.CLOTHO_HOME;
  afterEach(() => {
    if (saved === undefined) delete process.env.CLOTHO_HOME;
    else process.env.CLOTHO_HOME = saved;
  });
  const question = {
    id: 'simple_python_0',
    question: [[{ role: 'user', content: 'Area of a 10 by 5 triangle?' }]],
    function: [
      {
        name: 'area',
        description: 'Triangle area.',
        parameters: { type: 'dict', properties: { base: { type: 'integer' } }, required: ['base'] },
      },
    ],
  };
  const answer = { id: 'simple_python_0', ground_truth: [{ area: { base: [10] } }] };
  const writeSet = (dir: string, answers: unknown[]) => {
    mkdirSync(join(dir, 'possible_answer'), { recursive: true });
    writeFileSync(join(dir, CATEGORY_FILES.simple), `${JSON.stringify(question)}\n`);
    writeFileSync(join(dir, 'possible_answer', CATEGORY_FILES.simple), answers.map((a) => `${JSON.stringify(a)}\n`).join(''));
  };

  it('reads the cached copy when no data_dir is given', async () => {
    const home = mkdtempSync(join(tmpdir(), 'clotho-bfcl-'));
    writeSet(join(home, 'datasets', 'bfcl'), [answer]);
    process.env.CLOTHO_HOME = home;
    const source = await toolCalling.load(configFor(['--env.categories', 'simple']));
    expect(source.size).toBe(1);
    expect(source.get(0)).toMatchObject({
      id: 'simple_python_0',
      category: 'simple',
      expected: [{ name: 'area', arguments: { base: [10] } }],
    });
  });

  it('says which file is missing, and which question has no answer', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'clotho-bfcl-'));
    await expect(toolCalling.load(configFor(['--env.data_dir', dir, '--env.categories', 'simple']))).rejects.toThrow(
      `BFCL file not found: ${join(dir, CATEGORY_FILES.simple)} (--env.data_dir must hold BFCL_v4_*.json and possible_answer/)`,
    );
    writeSet(dir, [{ ...answer, id: 'simple_python_9' }]);
    await expect(toolCalling.load(configFor(['--env.data_dir', dir, '--env.categories', 'simple']))).rejects.toThrow(
      'no possible answer for simple_python_0',
    );
  });
});

describe('BFCL schema conversion', () => {
  it('turns BFCL type names into JSON Schema, keeping required, enum, description and default', () => {
    const schema: BfclSchema = {
      type: 'dict',
      required: ['a'],
      optional: ['b'],
      properties: {
        a: { type: 'float', description: 'A.', default: 1 },
        b: { type: 'tuple', items: { type: 'integer' }, optional: true },
        c: { type: 'any' },
        d: { type: 'dict', properties: { e: { type: 'string', enum: ['x', 'y'], format: 'date' } }, required: ['e'] },
        f: { type: 'array', items: { type: 'boolean' } },
      },
    };
    expect(toJsonSchema(schema)).toEqual({
      type: 'object',
      required: ['a'],
      properties: {
        a: { type: 'number', description: 'A.', default: 1 },
        b: { type: 'array', items: { type: 'integer' } },
        c: {},
        d: { type: 'object', properties: { e: { type: 'string', enum: ['x', 'y'], format: 'date' } }, required: ['e'] },
        f: { type: 'array', items: { type: 'boolean' } },
      },
    });
    expect(() => toJsonSchema({ type: 'dict', properties: { z: { type: 'complex' } } })).toThrow(
      'parameters.z: unknown BFCL type "complex"',
    );
  });
});

describe('tool_calling prompt and reward', () => {
  let item: ToolCallingItem;
  let parallel: ToolCallingItem;
  const config = configFor([]);
  beforeAll(async () => {
    const items = await loadAll(['--env.categories', 'simple,parallel']);
    item = items[0]!; // simple_python_0: calculate_triangle_area(base=10, height=5, unit optional)
    parallel = items.find((i) => i.id === 'parallel_0')!;
  });

  it('asks the model to call the functions, then puts the question', () => {
    expect(toolCalling.prompt(item, config)).toEqual([
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: 'Find the area of a triangle with a base of 10 units and height of 5 units.' },
    ]);
  });

  it('scores Hermes <tool_call> blocks: right +1, wrong -1, none or malformed counted', async () => {
    const score = (text: string) => {
      const { calls, malformed } = parseToolCalls({ content: text });
      return scoreOf(item, config, calls, malformed);
    };
    const right = '<tool_call>\n{"name": "calculate_triangle_area", "arguments": {"base": 10, "height": 5}}\n</tool_call>';
    expect(await score(right)).toEqual({
      score: 1,
      metrics: { accuracy: 1, accuracy_simple: 1, malformed_tool_calls: 0, no_tool_call: 0 },
    });
    expect(await score(right.replace('"height": 5', '"height": 5.5'))).toMatchObject({ score: -1, metrics: { accuracy: 0 } });
    expect(await score('The area is 25.')).toEqual({
      score: -1,
      metrics: { accuracy: 0, accuracy_simple: 0, malformed_tool_calls: 0, no_tool_call: 1 },
    });
    expect(await score('<tool_call>{"name": "calculate_triangle_area", "arguments": {"base": 10,}}</tool_call>')).toEqual({
      score: -1,
      metrics: { accuracy: 0, accuracy_simple: 0, malformed_tool_calls: 1, no_tool_call: 0 },
    });
    // A right call beside a block that does not parse: BFCL cannot decode the output, so it is wrong.
    expect(await score(`${right}<tool_call>{oops</tool_call>`)).toMatchObject({
      score: -1,
      metrics: { accuracy: 0, malformed_tool_calls: 1 },
    });
  });

  it('gives partial credit 2 * matched / max(expected, made) - 1 when asked', async () => {
    const partial = configFor(['--env.partial_credit']);
    const truth = parallel.expected.map((e) => groundTruthCall(e, parallel.functions));
    expect(truth).toHaveLength(2);
    expect((await scoreOf(parallel, partial, requests(truth))).score).toBe(1);
    expect((await scoreOf(parallel, partial, requests(truth.slice(0, 1)))).score).toBe(0);
    expect((await scoreOf(parallel, partial, requests([truth[0]!, truth[0]!]))).score).toBe(0);
    expect((await scoreOf(parallel, partial, requests([...truth, truth[0]!]))).score).toBeCloseTo(1 / 3);
    const withMalformed = await scoreOf(parallel, partial, requests(truth), [{ text: '{', error: 'bad JSON' }]);
    expect(withMalformed.score).toBeCloseTo(1 / 3);
    expect(withMalformed.metrics).toMatchObject({ accuracy: 0, malformed_tool_calls: 1 });
    expect((await scoreOf(parallel, partial, [])).score).toBe(-1);
    expect((await scoreOf(parallel, config, requests(truth.slice(0, 1)))).score).toBe(-1);
  });
});
