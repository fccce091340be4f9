import { closeMcpServers, ConfigError, playEpisode, resolveEnvConfig, toScoreResult, type Message, type ToolResultMessage } from 'clotho';
import { afterAll, describe, expect, it } from 'vitest';
import { turnAdvantages } from './advantages.js';
import { answersMatch, extractAnswer } from './answer.js';
import toolUse, { SYSTEM_PROMPT } from './index.js';
import { generateTask, type ToolUseTask } from './tasks.js';

const configFor = (argv: string[]) => resolveEnvConfig(toolUse, argv);
const config = configFor([]);
const task = (kind: ToolUseTask['kind']) => generateTask({ seed: 3, index: 0, kinds: [kind] });
const scoreOf = (item: ToolUseTask, completion: string, messages: Message[] = [], turnRewards: number[] = []) =>
  toScoreResult(
    toolUse.score({ item, parsed: toolUse.parse(completion, item, {} as never), completion, messages, turnRewards } as never) as never,
  );
const result = (content: string): ToolResultMessage => ({ role: 'tool', tool_call_id: 'c', name: 't', content });
const stepOf = (toolResults: ToolResultMessage[], cfg = config) =>
  toolUse.step!(
    { toolResults, messages: [], turn: 0, sample: 0, state: null, item: task('codes'), group: null, config: cfg } as never,
    cfg,
  );

afterAll(closeMcpServers);

describe('tool_use config and data', () => {
  it('defaults to long episodes and takes its own flags', () => {
    expect(config).toMatchObject({
      max_turns: 30,
      group_size: 4,
      max_token_length: 8192,
      seed: 0,
      hops: 3,
      turn_reward: 0.1,
      turn_advantages: false,
      gamma: 1,
      mcp_servers: [],
      kinds: ['province_sum', 'founding_chain', 'ledger', 'codes'],
    });
    const custom = configFor([
      '--env.seed',
      '5',
      '--env.hops=6',
      '--env.kinds',
      '["ledger"]',
      '--env.turn_advantages',
      '--env.turn_reward',
      '0.05',
      '--env.mcp_servers',
      '[{"command": "npx", "args": ["-y", "some-mcp-server"]}]',
    ]);
    expect(custom).toMatchObject({
      seed: 5,
      hops: 6,
      kinds: ['ledger'],
      turn_advantages: true,
      turn_reward: 0.05,
      mcp_servers: [{ command: 'npx', args: ['-y', 'some-mcp-server'], timeout_s: 60 }],
    });
    expect(() => configFor(['--env.hops', '9'])).toThrow(ConfigError);
    expect(() => configFor(['--env.mcp_servers', '[{"cmd": "x"}]'])).toThrow(ConfigError);
  });

  it('generates item i on demand, the same every time', async () => {
    const source = await toolUse.load(configFor(['--env.size', '50', '--env.seed', '9']));
    expect(source.size).toBe(50);
    expect(source.get(7)).toEqual(generateTask({ seed: 9, index: 7, hops: 3 }));
    expect(source.get(7)).toEqual(source.get(7));
    expect(source.get(49)).toEqual(generateTask({ seed: 9, index: 49, hops: 3 }));
  });

  it('prompts for tool use and a boxed answer, starting from the task’s store', () => {
    const item = task('ledger');
    expect(toolUse.prompt(item, config)).toEqual([
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: item.question },
    ]);
    expect(SYSTEM_PROMPT).toContain('\\boxed{}');
    const state = toolUse.initialState!(item, 0, config);
    expect(state).toEqual({ kv: item.kv });
    state.kv.extra = 1;
    expect(item.kv).not.toHaveProperty('extra');
  });

  it('offers MCP servers’ tools beside its own', async () => {
    const withMcp = configFor([
      '--env.mcp_servers',
      JSON.stringify([{ command: process.execPath, args: ['--import', 'tsx', 'test/support/mcp-server.ts'] }]),
    ]);
    const names = (await toolUse.tools!(task('codes'), withMcp)).map((t) => (t as { name: string }).name);
    expect(names).toEqual([
      'calculator',
      'kv_get',
      'kv_set',
      'kv_list',
      'search',
      'lookup',
      'reverse',
      'fail',
      'crash',
      'pid',
      'meta',
      'image',
    ]);
  });
});

describe('tool_use answers and rewards', () => {
  it('extracts the last boxed or <answer> answer after any reasoning', () => {
    expect(extractAnswer('first \\boxed{1}, finally \\boxed{\\text{12,400}}')).toBe('\\text{12,400}');
    expect(extractAnswer('<answer> Ekest </answer>')).toBe('Ekest');
    expect(extractAnswer('<think>maybe \\boxed{3}</think>so \\boxed{4}')).toBe('4');
    expect(extractAnswer('<think>\\boxed{3}')).toBeNull();
    expect(extractAnswer('the answer is 5')).toBeNull();
    expect(answersMatch('12,400', 12400)).toBe(true);
    expect(answersMatch('-3,150.0', -3150)).toBe(true);
    expect(answersMatch('12 or 13', 12)).toBe(false);
    expect(answersMatch('The province of Ekest.', 'Ekest')).toBe(true);
    expect(answersMatch('\\text{ekest}', 'Ekest')).toBe(true);
    expect(answersMatch('Ekestia', 'Ekest')).toBe(false);
  });

  it('scores +1/-1 with counts of turns, tool calls and errors', () => {
    const item = task('codes');
    const messages: Message[] = [
      { role: 'user', content: item.question },
      { role: 'assistant', content: '', tool_calls: [] },
      result('Broundal'),
      result('Error: no key "code/R-1"'),
      { role: 'assistant', content: `\\boxed{${item.answer}}` },
    ];
    expect(scoreOf(item, `\\boxed{${item.answer}}`, messages, [-0.1, 0])).toEqual({
      score: 1,
      metrics: { correct: 1, answered: 1, turns: 2, tool_calls: 2, failed_calls: 1, turn_reward: -0.1 },
    });
    expect(scoreOf(item, '\\boxed{1}')).toMatchObject({ score: -1, metrics: { correct: 0, answered: 1 } });
    expect(scoreOf(item, 'no idea')).toMatchObject({ score: -1, metrics: { correct: 0, answered: 0 } });
    const chain = task('founding_chain');
    expect(scoreOf(chain, `It is \\boxed{${chain.answer}}.`).score).toBe(1);
  });

  it('rewards each turn by how its tool calls went and ends at a turn without calls', () => {
    expect(stepOf([result('42'), result('stored a')])).toEqual({ messages: [], done: false, reward: 0.1 });
    expect(stepOf([result('42'), result('Error: division by zero')])).toEqual({ messages: [], done: false, reward: -0.1 });
    expect(stepOf([])).toEqual({ messages: [], done: true, reward: 0 });
    expect(stepOf([result('1')], { ...config, turn_reward: 0 })).toMatchObject({ reward: 0 });
  });
});

describe('turn advantages', () => {
  const ctx = (scores: number[], turnRewards: number[][], over: Partial<typeof config> = {}) =>
    toolUse.advantages!({ scores, turnRewards, config: { ...config, turn_advantages: true, ...over } });

  it('are absent unless asked for', () => {
    expect(toolUse.advantages!({ scores: [1, -1], turnRewards: [[0], [0]], config })).toBeNull();
  });

  it('equal GRPO’s normalized score on every turn without shaping rewards', () => {
    const a = ctx([1, -1, 1, -1], [[0, 0, 0], [0], [0, 0], [0, 0, 0, 0]])!;
    expect(a.map((turns) => turns.length)).toEqual([3, 1, 2, 4]);
    expect(a.flat()).toEqual([1, 1, 1, -1, 1, 1, -1, -1, -1, -1]);
  });

  it('credit each turn with the discounted return from it on, against the group mean', () => {
    // Returns from turn 0: 1.2 and -1.1; mean 0.05, std 1.15.
    const a = turnAdvantages(
      [1, -1],
      [
        [0.1, 0.1, 0],
        [-0.1, 0],
      ],
    );
    const expected = [[1.2, 1.1, 1].map((g) => (g - 0.05) / 1.15), [-1.1, -1].map((g) => (g - 0.05) / 1.15)];
    a.flat().forEach((v, i) => expect(v).toBeCloseTo(expected.flat()[i]!, 10));
    // With γ = 0.5 the outcome reaches early turns halved per turn.
    const d = ctx([1, 1], [[0, 0], [0]], { gamma: 0.5 })!;
    expect(d[0]![0]).toBeLessThan(d[0]![1]!);
    expect(d[1]![0]).toBeGreaterThan(0);
  });

  it('leave a group of equal returns at zero rather than dividing by a zero spread', () => {
    expect(turnAdvantages([1, 1], [[0.1], [0.1]]).flat()).toEqual([0, 0]);
    expect(turnAdvantages([1], [[]])).toEqual([[0]]);
  });
});

describe('a whole episode', () => {
  it('runs tools over several turns, carrying the store from turn to turn, and scores the final answer', async () => {
    const item = generateTask({ seed: 11, index: 0, hops: 2, kinds: ['codes'] });
    const [k1, k2] = Object.keys(item.kv); // the asked codes come first
    const [t1, t2] = [String(item.kv[k1!]), String(item.kv[k2!])];
    const elevation = (town: string) =>
      Number(/elevation of ([\d,]+)/.exec(item.documents.find((d) => d.title === town)!.text)![1]!.replace(',', ''));
    const call = (name: string, args: Record<string, unknown>) => `<tool_call>${JSON.stringify({ name, arguments: args })}</tool_call>`;
    const episode = await playEpisode(toolUse, {
      item,
      replies: [
        call('kv_get', { key: k1 }) + call('kv_get', { key: k2 }),
        call('lookup', { title: t1 }) + call('calculator', { expression: '1 / 0' }),
        call('kv_set', { key: 'partial', value: elevation(t1) }) + call('lookup', { title: t2 }),
        call('kv_get', { key: 'partial' }) + call('calculator', { expression: `${elevation(t1)} + ${elevation(t2)}` }),
        `The sum is \\boxed{${item.answer}}.`,
      ],
    });
    const results = episode.messages.filter((m) => m.role === 'tool').map((m) => m.content);
    expect(results.slice(0, 2)).toEqual([t1, t2]);
    expect(results[3]).toBe('Error: division by zero');
    expect(results[6]).toBe(String(elevation(t1))); // written in turn 2, read in turn 3
    expect(results[7]).toBe(String(item.answer));
    expect(episode).toMatchObject({ score: 1, turns: 5, parsed: String(item.answer) });
    expect(episode.metrics).toMatchObject({ correct: 1, tool_calls: 8, failed_calls: 1 });
    expect(episode.metrics.turn_reward).toBeCloseTo(0.2, 10); // +0.1 −0.1 +0.1 +0.1, and 0 for the answer
  });
});
