import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { playEpisode, resolveEnvConfig, type Message, type ModelClient } from 'clotho';
import { beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_QUESTIONS, writeFixture } from './fixture.js';
import rlaif, { DEFAULT_CRITERIA, type Response, type RlaifItem } from './index.js';

let data: string;
beforeAll(async () => {
  data = await writeFixture(await mkdtemp(join(tmpdir(), 'clotho-rlaif-')), 'parquet');
});

const loadAll = async (argv: string[]) => {
  const source = await rlaif.load(resolveEnvConfig(rlaif, ['--env.data_path', data, ...argv]));
  return Array.from({ length: source.size }, (_, i) => source.get(i));
};

/** A judge that prefers the response mentioning `word` (A or B as shown), and cannot decide when both or neither do. */
function judgeFavouring(word: string) {
  const asked: { messages: Message[]; options: Parameters<ModelClient['complete']>[1] }[] = [];
  const judge: ModelClient = {
    async complete(messages, options) {
      asked.push({ messages, options });
      const text = String(messages[1]!.content);
      const a = text.split('[Response A]')[1]!.split('[Response B]')[0]!.includes(word);
      const b = text.split('[Response B]')[1]!.split('[End of responses]')[0]!.includes(word);
      const verdict = a === b ? 'They are equally good.' : `\\boxed{${a ? 'A' : 'B'}}`;
      return Array.from({ length: options?.n ?? 1 }, () => verdict);
    },
  };
  return { judge, asked };
}

describe('rlaif', () => {
  it('loads its prompts by path, and refuses to start without one or, comparing with references, without them', async () => {
    const items = await loadAll([]);
    expect(items.map((i) => String(i.prompt.at(-1)!.content))).toEqual(FIXTURE_QUESTIONS);
    await expect(rlaif.load(resolveEnvConfig(rlaif))).rejects.toThrow('--env.data_path: rlaif needs a JSONL or Parquet file of prompts');
    await expect(loadAll(['--env.compare', 'reference'])).rejects.toThrow('--env.compare reference: row 3 of');
  });

  it('prompts with the conversation, a configured system prompt replacing its own', async () => {
    const [, twoTurns] = await loadAll([]);
    const config = resolveEnvConfig(rlaif, ['--env.system_prompt', 'Answer in French.']);
    const withSystem = { ...twoTurns!, prompt: [{ role: 'system', content: 'Be terse.' }, ...twoTurns!.prompt] };
    expect(rlaif.prompt(withSystem, config)).toEqual([{ role: 'system', content: 'Answer in French.' }, ...twoTurns!.prompt]);
    expect(rlaif.prompt(twoTurns!, resolveEnvConfig(rlaif))).toEqual(twoTurns!.prompt);
  });

  it('judges a group pairwise in both orders and scores each sample by its share of the votes', async () => {
    const [bakery] = await loadAll([]);
    const config = resolveEnvConfig(rlaif, ['--env.judge_votes', '2', '--env.judge_max_tokens', '256']);
    const parse = (text: string, finishReason = 'stop') =>
      rlaif.parse(text, bakery!, { finishReason } as Parameters<typeof rlaif.parse>[2]) as Response;
    const parsed = [parse('Try "Sourdough & Co".'), parse('Call it Bakery.')];
    const requests = await rlaif.judge!({ item: bakery!, config, parsed, completions: [], messages: [], group: null });
    expect(requests.map((r) => r.id)).toEqual(['0-1/forward', '0-1/reversed']);
    expect(String(requests[0]!.messages[1]!.content)).toContain(DEFAULT_CRITERIA);
    const { judge } = judgeFavouring('Sourdough');
    const judgements = Object.fromEntries(
      await Promise.all(requests.map(async (r) => [r.id, await judge.complete(r.messages, { n: r.n })] as const)),
    );
    const score = (sample: number) =>
      rlaif.score({ sample, parsed: parsed[sample]!, judgements, config } as unknown as Parameters<typeof rlaif.score>[0]);
    // All four votes for sample 0: preference 1 and 0, centred.
    expect(await score(0)).toEqual({ score: 0.5, metrics: { votes: 4, unparsed_votes: 0, truncated: 0 } });
    expect(await score(1)).toEqual({ score: -0.5, metrics: { votes: 4, unparsed_votes: 0, truncated: 0 } });
    // Cut off by the token budget: never shown to the judge; the other is compared with the reference.
    const cut = [parsed[0]!, parse('Call it', 'length')];
    const lone = await rlaif.judge!({ item: bakery!, config, parsed: cut, completions: [], messages: [], group: null });
    expect(lone.map((r) => r.id)).toEqual(['0-reference/forward', '0-reference/reversed']);
  });

  it('evaluates one answer against the reference when the data has one (win_rate), else scores 0 unjudged', async () => {
    const [bakery, , haiku] = (await loadAll([])) as RlaifItem[];
    const { judge, asked } = judgeFavouring('Sourdough');
    const won = await playEpisode(rlaif, { item: bakery!, replies: ['"Sourdough Sunrise"'], judge, argv: ['--env.data_path', data] });
    expect(won.score).toBe(0.5);
    expect(won.metrics).toEqual({ votes: 6, unparsed_votes: 0, truncated: 0, win_rate: 1 });
    expect(asked).toHaveLength(2);
    for (const { options } of asked) expect(options).toEqual({ n: 3, temperature: 1, maxTokens: 4096 });
    expect(String(asked[0]!.messages[1]!.content)).toContain(
      '[Response A]\n"Sourdough Sunrise"\n\n[Response B]\nHow about "Rise & Crumb"?',
    );

    const tied = await playEpisode(rlaif, { item: bakery!, replies: ['"Crumbs"'], judge, argv: ['--env.judge_votes', '1'] });
    expect(tied).toMatchObject({ score: 0, metrics: { votes: 2, unparsed_votes: 2, truncated: 0, win_rate: 0.5 } });

    asked.length = 0;
    const unjudged = await playEpisode(rlaif, { item: haiku!, replies: ['Rain on red maples'], judge });
    expect(unjudged).toMatchObject({ score: 0, metrics: { votes: 0, unparsed_votes: 0, truncated: 0 } });
    expect(asked).toHaveLength(0);
  });
});
