import { executeToolCall, resolveEnvConfig, type Tool, type ToolContext } from 'clotho';
import { describe, expect, it } from 'vitest';
import toolUse from './index.js';
import { generateTask, generateTasks, TASK_KINDS, type ToolUseTask } from './tasks.js';

const config = resolveEnvConfig(toolUse);
const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];

/**
 * A scripted agent: reads the question as a model would, calls the real tools one at a time through Clotho's executor
 * (state carried from call to call, as the runtime carries it), parses their text answers and returns its final answer.
 */
async function solve(task: ToolUseTask): Promise<{ answer: string; calls: number }> {
  const tools = (await toolUse.tools!(task, config)).filter((t): t is Tool => 'execute' in t);
  const ctx: ToolContext = {
    item: task,
    state: toolUse.initialState!(task, 0, config),
    group: null,
    sample: 0,
    turn: 0,
    call: 0,
    idempotencyKey: 'scripted',
    signal: new AbortController().signal,
    heartbeat: () => undefined,
  };
  let calls = 0;
  const call = async (name: string, args: Record<string, unknown>): Promise<string> => {
    const result = await executeToolCall(tools, { id: `c${calls}`, name, arguments: args }, { ...ctx, call: calls++ });
    expect(result.outcome, `${name}(${JSON.stringify(args)}): ${result.content}`).toBe('ok');
    return result.content;
  };
  const match = (text: string, pattern: RegExp): string => {
    const m = pattern.exec(text);
    expect(m, `${pattern} in ${text}`).not.toBeNull();
    return m![1]!;
  };
  const q = task.question;
  switch (task.kind) {
    case 'province_sum': {
      const province = match(q, /province of (\w+),/);
      const listing = match(await call('lookup', { title: `Province of ${province}` }), /towns?: (.+?)\. Its capital/);
      const populations: string[] = [];
      for (const town of listing.split(/, | and /))
        populations.push(match(await call('lookup', { title: town }), /population of ([\d,]+)/));
      const factor = match(q, /multiplied by (\d+)/);
      return { answer: await call('calculator', { expression: `(${populations.join(' + ')}) * ${factor}` }), calls };
    }
    case 'founding_chain': {
      let town = match(q, /The town of (\w+)/);
      const steps = q.includes('back one step') ? 1 : Number(match(q, /back (\d+) steps/));
      for (let i = 0; i < steps; i++) town = match(await call('lookup', { title: town }), /settlers from (\w+)/);
      // The last hop through search rather than lookup: the town's own passage is among the best three for its name.
      const hits = (await call('search', { query: town, k: 3 })).split('\n');
      const own = hits.find((line) => line.startsWith(`${town}:`, line.indexOf(' ') + 1));
      expect(own, hits.join('\n')).toBeDefined();
      return { answer: match(own!, /is a town in the province of (\w+)/), calls };
    }
    case 'ledger': {
      const shop = match(q, /the shop (\w+)/);
      const [, from, to] = /(?:from (\w+) to (\w+)|in (\w+)),/.exec(q)!.filter(Boolean);
      const keys = (await call('kv_list', { prefix: `sales/${shop}/` })).split('\n');
      expect(keys).toHaveLength(12);
      const first = MONTHS.indexOf(from!.toLowerCase());
      const last = to ? MONTHS.indexOf(to.toLowerCase()) : first;
      const values: string[] = [];
      for (const month of MONTHS.slice(first, last + 1)) values.push(await call('kv_get', { key: `sales/${shop}/${month.slice(0, 3)}` }));
      await call('kv_set', { key: 'scratch/total', value: Number(await call('calculator', { expression: values.join(' + ') })) });
      const rent = match(q, /rent of (\d+)/);
      return { answer: await call('calculator', { expression: `${await call('kv_get', { key: 'scratch/total' })} - ${rent}` }), calls };
    }
    case 'codes': {
      const codes = match(q, /under the codes? (.+)\?$/).split(/, | and /);
      const elevations: string[] = [];
      for (const code of codes) {
        const town = await call('kv_get', { key: `code/${code}` });
        elevations.push(match(await call('lookup', { title: town }), /elevation of ([\d,]+) metres/));
      }
      return { answer: await call('calculator', { expression: elevations.join(' + ') }), calls };
    }
  }
}

describe('generateTasks', () => {
  it('gives the same tasks for the same seed, and other tasks for another', () => {
    const a = generateTasks({ seed: 7, count: 20, hops: 4 });
    expect(generateTasks({ seed: 7, count: 20, hops: 4 })).toEqual(a);
    expect(JSON.parse(JSON.stringify(a))).toEqual(a); // JSON-safe: items travel between processes
    const b = generateTasks({ seed: 8, count: 20, hops: 4 });
    expect(b.map((t) => t.question)).not.toEqual(a.map((t) => t.question));
    // Task i does not depend on how many were asked for: a larger data set extends a smaller one.
    expect(generateTasks({ seed: 7, count: 5, start: 15, hops: 4 })).toEqual(a.slice(15));
    expect(generateTask({ seed: 7, index: 3, hops: 4 })).toEqual(a[3]);
  });

  it('takes the kinds in turn and scales the work with hops', () => {
    expect(generateTasks({ seed: 1, count: 8 }).map((t) => t.kind)).toEqual([...TASK_KINDS, ...TASK_KINDS]);
    expect(generateTasks({ seed: 1, count: 3, kinds: ['codes'] }).every((t) => t.kind === 'codes')).toBe(true);
    const [easy] = generateTasks({ seed: 1, count: 1, hops: 1, kinds: ['province_sum'] });
    const [hard] = generateTasks({ seed: 1, count: 1, hops: 8, kinds: ['province_sum'] });
    expect(easy!.documents.find((d) => d.title.startsWith('Province of') && easy!.question.includes(d.title.slice(12)))!.text).toContain(
      'has one town',
    );
    expect(hard!.documents.find((d) => hard!.question.includes(`province of ${d.title.slice(12)},`))!.text).toContain('has 8 towns');
    expect(() => generateTask({ seed: 1, index: 0, hops: 9 })).toThrow(/hops/);
  });

  it('makes every task solvable by a sequence of real tool calls that reaches the gold answer', async () => {
    for (let hops = 1; hops <= 8; hops++) {
      for (const task of generateTasks({ seed: 1000 + hops, count: 24, hops })) {
        const { answer, calls } = await solve(task);
        expect(calls, task.question).toBeGreaterThanOrEqual(hops + 1);
        const completion = `I checked with the tools. \\boxed{${answer}}`;
        const parsed = toolUse.parse(completion, task, {} as never);
        const scored = await toolUse.score({ item: task, parsed, completion, messages: [], turnRewards: [] } as never);
        expect(scored, `${task.id}: ${task.question} → ${answer}, gold ${task.answer}`).toMatchObject({ score: 1 });
      }
    }
  });
});
