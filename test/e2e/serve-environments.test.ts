import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FIXTURE_RECORDS, writeFixture as writeFundamentals } from '../../environments/fundamental_prediction/fixture.js';
import games from '../../environments/games/index.js';
import { mmluParquet } from '../../environments/mcqa/fixtures.js';
import { questionText, type McqaItem } from '../../environments/mcqa/index.js';
import { shapeQuestion, TASKS } from '../../environments/multimodal/shapes.js';
import { FIXTURE_QUESTIONS, writeFixture as writeChats } from '../../environments/rlaif/fixture.js';
import { isImageUrlPart } from '../../src/kits/images/images.js';
import { resolveEnvConfig } from '../../src/env/testing.js';
import type { Message } from '../../src/schema/scored-data.js';
import { apiClient, startApiProcess, TRAINER, type ApiProcess } from '../support/api-process.js';
import { spawnClotho, waitFor, type CliRun } from '../support/cli.js';
import { GSM8K_TEST, gsm8kItems } from '../support/gsm8k-model.js';
import { startScriptedOpenAI, type Responder, type ScriptedOpenAI } from '../support/scripted-openai.js';
import { uniqueId } from '../support/temporal.js';

/**
 * Issue 10: every built-in environment runs under `clotho serve`. One `clotho api`, one scripted model (also the
 * rlaif judge), and a `clotho serve` per environment, all at once: each registers, gets a group of its own into a
 * trainer batch, and exits 0 when the trainer takes its last step.
 */

const HUMANEVAL = fileURLToPath(new URL('../../environments/code_execution/data/HumanEval.jsonl', import.meta.url));
const MULTIMODAL_SEED = 5;

const text = (m: Message | undefined) => (typeof m?.content === 'string' ? m.content : '');
const userText = (messages: Message[]) => text(messages.find((m) => m.role === 'user'));
const lastUserText = (messages: Message[]) => text(messages.filter((m) => m.role === 'user').at(-1));
type Part = { type: string; text?: string; image_url?: { url: string } };
const userParts = (messages: Message[]): Part[] => {
  const content = messages.find((m) => m.role === 'user')?.content;
  return Array.isArray(content) ? (content as Part[]) : [];
};

// The judge's prompt shows the two responses under these headings; every judge request prefers A.
const JUDGE_MARK = '[Response A]';
/** The same generic reply to every policy request (scores do not matter here), `\boxed{A}` to every judge request. */
const responder: Responder = (body) => {
  const messages = ('messages' in body ? body.messages : []) as Message[];
  const judging = messages.some((m) => text(m).includes(JUDGE_MARK));
  return { choices: Array.from({ length: body.n ?? 1 }, (_, i) => ({ text: judging ? '\\boxed{A}' : `A generic reply, number ${i}.` })) };
};

const MCQA_ITEMS: McqaItem[] = [
  { subject: 'astronomy', question: 'Which planet is largest?', choices: ['Mars', 'Jupiter', 'Venus', 'Mercury'], answer: 1 },
  {
    subject: 'virology',
    question: 'What does a virus need to replicate?',
    choices: ['light', 'water', 'a host cell', 'oxygen'],
    answer: 2,
  },
];
const humanEvalPrompts = new Set(
  readFileSync(HUMANEVAL, 'utf8')
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { prompt: string }).prompt),
);
const gsm8kQuestions = new Set(gsm8kItems().map((i) => i.question));
const shapeQuestions = new Set(
  Array.from(
    { length: 8 },
    (_, index) => shapeQuestion({ seed: MULTIMODAL_SEED, index, tasks: TASKS, imageSize: 96, maxShapes: 5 }).question,
  ),
);
const GAMES_FLAGS = ['--env.max_turns', '3'];
const gamesConfig = resolveEnvConfig(games, GAMES_FLAGS);
const gamesItems = await games.load(gamesConfig);
const gameOpenings = new Set([0, 1, 2].map((i) => userText(games.prompt(gamesItems.get(i), gamesConfig))));

/** An environment under test: its flags, and what its groups' first conversation must hold to be its own. */
interface Served {
  name: string;
  flags: (dir: string) => string[];
  /** The distinctive prompt text of one of its items, taken from a conversation of a group. */
  prompt: (messages: Message[]) => string;
  known: (prompt: string) => boolean;
}

const SERVED: Served[] = [
  {
    name: 'mcqa',
    flags: (dir) => ['--env.data_path', join(dir, 'mmlu.parquet')],
    prompt: userText,
    known: (p) => MCQA_ITEMS.some((item) => questionText(item) === p),
  },
  { name: 'games', flags: () => GAMES_FLAGS, prompt: userText, known: (p) => gameOpenings.has(p) },
  {
    name: 'rlaif',
    flags: (dir) => ['--env.data_path', join(dir, 'wildchat.parquet'), '--env.judge_votes', '1', '--env.judge_max_tokens', '16'],
    prompt: lastUserText,
    known: (p) => FIXTURE_QUESTIONS.includes(p),
  },
  {
    name: 'code_execution',
    flags: () => ['--env.data_path', HUMANEVAL],
    prompt: (messages) => /```python\n([\s\S]*)```$/.exec(userText(messages))?.[1] ?? '',
    known: (p) => humanEvalPrompts.has(p),
  },
  {
    name: 'multimodal',
    flags: () => ['--env.seed', String(MULTIMODAL_SEED)],
    prompt: (messages) => userParts(messages).find((p) => p.type === 'text')?.text ?? '',
    known: (p) => shapeQuestions.has(p),
  },
  {
    name: 'fundamental_prediction',
    flags: (dir) => ['--env.data_path', join(dir, 'records.parquet')],
    prompt: userText,
    known: (p) => FIXTURE_RECORDS.some((r) => p.endsWith(`\n${r.context}`)),
  },
  {
    name: 'dataset',
    flags: () => [
      '--env.data_path',
      GSM8K_TEST,
      '--env.prompt_field',
      'question',
      '--env.answer_field',
      'answer',
      '--env.answer_pattern',
      '####\\s*(.+)$',
      '--env.reward_fns',
      'accuracy',
    ],
    prompt: userText,
    known: (p) => gsm8kQuestions.has(p),
  },
];

let dir: string;
let api: ApiProcess | undefined;
let model: ScriptedOpenAI | undefined;
const children: CliRun[] = [];
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clotho-serve-envs-'));
  await writeFile(join(dir, 'mmlu.parquet'), mmluParquet(MCQA_ITEMS));
  await writeChats(dir, 'parquet');
  await writeFundamentals(dir, 'parquet');
});
afterAll(async () => {
  for (const child of children) if (child.child.exitCode === null && child.child.signalCode === null) child.child.kill('SIGKILL');
  await api?.stop();
  await model?.close();
  await rm(dir, { recursive: true, force: true });
});

interface Batch {
  messages: Message[][] | null;
  env_id: number;
  scores: number[];
  tokens: number[][];
  images?: unknown;
}

describe('clotho serve, every built-in environment', () => {
  it("each registers, gets a group of its own prompts into a trainer batch, and exits 0 at the trainer's last step", async () => {
    const address = inject('temporalAddress');
    api = await startApiProcess({ temporalAddress: address });
    model = await startScriptedOpenAI({ responder });
    const http = apiClient(api.url);
    // One group of 2 sequences a batch: as many steps as environments, so each has one group taken at the last step.
    await http.post('/register', { ...TRAINER, batch_size: 2, num_steps: SERVED.length, max_token_len: 16_384 });
    expect((await http.get('/batch')).json).toEqual({ batch: null });

    const serve = async (served: Served) => {
      const run = spawnClotho(
        [
          'serve',
          served.name,
          ...served.flags(dir),
          '--batcher-id',
          api!.batcherId,
          '--env.run_id',
          uniqueId(`serve-${served.name}`),
          '--env.group_size',
          '2',
          '--env.ensure_scores_are_not_same',
          'false',
          '--env.max_token_length',
          '32',
          '--env.max_batches_offpolicy',
          '1',
          '--env.max_groups_in_flight',
          '1',
          '--openai.base_url',
          model!.baseUrl,
          '--judge.base_url',
          model!.baseUrl,
          '--store',
          api!.store,
        ],
        { TEMPORAL_ADDRESS: address },
      );
      children.push(run);
      await waitFor(
        () => run.stdout().includes(`registered as ${served.name}`) || run.child.exitCode !== null,
        150_000,
        `serve ${served.name} to register`,
      );
      expect(run.stderr(), served.name).toBe('');
      expect(run.child.exitCode, served.name).toBeNull();
      return { served, run, envId: Number(/env_id (\d+)/.exec(run.stdout())?.[1]) };
    };
    const runs = await Promise.all(SERVED.map(serve));
    expect(new Set(runs.map((r) => r.envId)).size).toBe(SERVED.length);

    // Each environment keeps one group waiting (1 batch of 2 sequences, groups of 2).
    const queued = async (envId: number) => (await http.getWithBody('/status-env', { env_id: envId })).json.self_queue_size as number;
    const waiting = new Set<string>();
    await waitFor(
      async () => {
        for (const { served, envId } of runs) if (!waiting.has(served.name) && (await queued(envId)) >= 1) waiting.add(served.name);
        return waiting.size === runs.length;
      },
      90_000,
      'a queued group of every environment',
    );
    // Queued first-in first-out, one group a batch: the next batches hold one group of each environment.
    const batches: Batch[][] = [];
    await waitFor(
      async () => {
        const { batch } = (await http.get('/batch')).json;
        if (batch) batches.push(batch);
        return batches.length === runs.length;
      },
      60_000,
      'a batch for each environment',
    );
    const groups = batches.flat();
    expect(groups.map((g) => g.env_id).sort()).toEqual(runs.map((r) => r.envId).sort());
    for (const { served, envId } of runs) {
      const group = groups.find((g) => g.env_id === envId)!;
      expect(group.tokens, served.name).toHaveLength(2);
      for (const score of group.scores) expect(typeof score === 'number' && Number.isFinite(score), served.name).toBe(true);
      expect(group.messages, served.name).toHaveLength(2);
      for (const messages of group.messages!) {
        const prompt = served.prompt(messages);
        expect(served.known(prompt), `${served.name}: ${prompt.slice(0, 80)}`).toBe(true);
        // The model answered at least once (a game's last message may be its verdict on the answer).
        expect(
          messages.some((m) => m.role === 'assistant'),
          served.name,
        ).toBe(true);
      }
      if (served.name === 'multimodal') {
        // The group carries its image, and so did the request the model got.
        expect(userParts(group.messages![0]!).some((p) => p.type === 'image_url')).toBe(true);
        expect(group.images).toHaveLength(2);
      }
    }
    const withImages = model.requests
      .filter((r) => r.path === '/v1/chat/completions')
      .filter((r) =>
        (r.body as { messages: Message[] }).messages.some((m) => Array.isArray(m.content) && (m.content as unknown[]).some(isImageUrlPart)),
      );
    expect(withImages.length).toBeGreaterThanOrEqual(1);
    for (const { body } of withImages) {
      const parts = (body as { messages: Message[] }).messages.find((m) => m.role === 'user')!.content as Part[];
      expect(parts.find((p) => p.type === 'image_url')!.image_url!.url).toMatch(/^data:image\/png;base64,/);
      expect(shapeQuestions.has(parts.find((p) => p.type === 'text')!.text!)).toBe(true);
    }
    // The rlaif judge was asked, on the same server.
    const judged = model.requests.filter(
      (r) => r.path === '/v1/chat/completions' && (r.body as { messages: Message[] }).messages.some((m) => text(m).includes(JUDGE_MARK)),
    );
    expect(judged.length).toBeGreaterThanOrEqual(1);

    // The trainer took its last step: every serve finishes what is in flight and exits 0.
    for (const { served, run } of runs) {
      expect(await run.exited, `${served.name}: ${run.stderr()}`).toBe(0);
      expect(run.stderr(), served.name).toBe('');
      expect(run.stdout(), served.name).toMatch(/delivered \d+ groups; failed 0/);
    }
  }, 240_000); // seven CLI processes start at once: a minute or more when the two cores are busy
});
