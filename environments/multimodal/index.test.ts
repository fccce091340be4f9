import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, imageDataUrl, parseDataUrl, playEpisode, resolveEnvConfig, type Message } from 'clotho';
import multimodal, { SYSTEM_PROMPT, type MultimodalItem } from './index.js';
import { shapeQuestion, TASKS } from './shapes.js';
import { humanAnswers, writeVqaParquet } from './testing.js';

const configFor = (argv: string[] = []) => resolveEnvConfig(multimodal, argv);
const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

describe('multimodal config', () => {
  it('generates shapes by default, with Atropos-like group size and budget', () => {
    expect(configFor()).toMatchObject({
      data_path: null,
      tasks: [...TASKS],
      seed: 0,
      size: 10_000,
      image_size: 96,
      max_shapes: 5,
      wrong_score: -1,
      group_size: 8,
      max_token_length: 512,
    });
    expect(configFor(['--env.tasks', '["count"]', '--env.max_shapes', '9']).tasks).toEqual(['count']);
  });

  it('rejects unknown tasks and impossible scenes', () => {
    expect(() => configFor(['--env.tasks', '["shading"]'])).toThrow(ConfigError);
    expect(() => configFor(['--env.max_shapes', '10'])).toThrow(ConfigError);
  });
});

describe('multimodal items and prompt', () => {
  it('sends the generated PNG as an image_url part, byte for byte, beside the question', async () => {
    const config = configFor(['--env.seed', '3', '--env.size', '50']);
    const source = await multimodal.load(config);
    const item = source.get(3);
    const drawn = shapeQuestion({ seed: 3, index: 3, tasks: TASKS, imageSize: 96, maxShapes: 5 });
    expect(item).toEqual({
      id: 'shapes-3-3',
      task: drawn.task,
      question: drawn.question,
      answer: drawn.answer,
      answers: [],
      image: imageDataUrl(drawn.png),
    });
    const [system, user] = multimodal.prompt(item, config) as [Message, Message];
    expect(system).toEqual({ role: 'system', content: SYSTEM_PROMPT });
    const [image, text] = user.content as [{ type: string; image_url: { url: string } }, { type: string; text: string }];
    expect(image.type).toBe('image_url');
    expect(parseDataUrl(image.image_url.url)).toEqual({ mediaType: 'image/png', bytes: drawn.png });
    expect(text).toEqual({ type: 'text', text: drawn.question });
  });

  it('loads VQAv2 questions when given a path', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clotho-multimodal-'));
    dirs.push(dir);
    const png = shapeQuestion({ seed: 0, index: 0, tasks: TASKS, imageSize: 48, maxShapes: 2 }).png;
    const path = join(dir, 'validation.parquet');
    await writeVqaParquet(path, [
      {
        question_id: 1,
        image_id: 1,
        question: 'What shape?',
        question_type: 'what',
        answer_type: 'other',
        multiple_choice_answer: 'circle',
        answers: humanAnswers({ circle: 8, ball: 2 }),
        image: { bytes: png, path: null },
      },
    ]);
    const source = await multimodal.load(configFor(['--env.data_path', path]));
    expect(source.get(0)).toMatchObject({ id: 'vqa-1', task: 'vqa', answer: 'circle', image: imageDataUrl(png) });
  });
});

describe('multimodal reward', () => {
  const item: MultimodalItem = {
    id: 'x',
    task: 'count',
    question: 'How many shapes are in the image?',
    answer: '3',
    answers: [],
    image: 'data:image/png;base64,',
  };
  const play = (reply: string, target = item, argv: string[] = []) => playEpisode(multimodal, { item: target, replies: [reply], argv });

  it('scores the exact answer +1 and anything else --env.wrong_score', async () => {
    expect(await play('I count them. <answer>three</answer>')).toMatchObject({
      score: 1,
      metrics: { correct: 1, answered: 1, correct_count: 1 },
    });
    expect(await play('<answer>4</answer>')).toMatchObject({ score: -1, metrics: { correct: 0, answered: 1, correct_count: 0 } });
    expect(await play('3')).toMatchObject({ score: -1, metrics: { correct: 0, answered: 0 } });
    expect(await play('<answer>4</answer>', item, ['--env.wrong_score', '0'])).toMatchObject({ score: 0 });
  });

  it("reports VQAv2's accuracy beside the exact score for VQA items", async () => {
    const vqa: MultimodalItem = { ...item, task: 'vqa', answer: 'red', answers: humanAnswers({ red: 7, orange: 3 }).map((a) => a.answer) };
    const right = await play('<answer>Red</answer>', vqa);
    expect(right).toMatchObject({ score: 1, metrics: { correct_vqa: 1, vqa_accuracy: 1 } });
    const minority = await play('<answer>orange</answer>', vqa);
    expect(minority.score).toBe(-1);
    expect(minority.metrics.vqa_accuracy).toBeCloseTo(0.9, 12);
  });
});
