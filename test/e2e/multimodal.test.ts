import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { shapeQuestion, TASKS } from '../../environments/multimodal/shapes.js';
import { humanAnswers, writeVqaParquet } from '../../environments/multimodal/testing.js';
import { imageDataUrl } from '../../src/kits/images/images.js';
import { loadTokenizer } from '../../src/inference/tokenizer.js';
import { MASKED, type Message } from '../../src/schema/scored-data.js';
import { expectWellFormedGroup } from '../support/groups.js';
import { processEngineGroup, runEvaluate, runProcess, useScratch } from '../support/runs.js';
import { TOKEN } from '../support/scripted-openai.js';
import { startScriptedVision, type KnownImage } from '../support/scripted-vision.js';

const MULTIMODAL = fileURLToPath(new URL('../../environments/multimodal/index.ts', import.meta.url));

type Known = KnownImage & { index: number };
const SEED = 5;
/** The first generated questions of the seed the runs use, drawn here exactly as the environment draws them. */
const known: Known[] = Array.from({ length: 8 }, (_, index) => {
  const q = shapeQuestion({ seed: SEED, index, tasks: TASKS, imageSize: 96, maxShapes: 5 });
  return { index, image: q.png, question: q.question, answer: q.answer };
});
const right = (k: KnownImage) => `I looked closely. <answer>${k.answer}</answer>`;
const WRONG = '<answer>seventeen</answer>';

/** The user turn's text and image parts. */
const userParts = (messages: Message[]) =>
  messages.find((m) => m.role === 'user')!.content as { type: string; text?: string; image_url?: { url: string } }[];

const scratch = useScratch('clotho-multimodal-e2e-');
const vision = async (images: Known[], plan: (k: Known, choice: number) => string) =>
  scratch.closeAfter(await startScriptedVision(images, plan));

describe('multimodal', () => {
  it('process: the vision server gets each generated PNG byte for byte, and the group carries it in `images`', async () => {
    const server = await vision(known, (k, choice) => (choice === 0 ? right(k) : WRONG));
    const { groups } = await runProcess(
      [
        MULTIMODAL,
        '--env.seed',
        String(SEED),
        '--env.total_steps',
        '3',
        '--env.group_size',
        '2',
        '--openai.base_url',
        server.baseUrl,
        '--store',
        scratch.path('store'),
      ],
      scratch.path('shapes.jsonl'),
      3,
    );
    expect(server.refusals).toEqual([]);
    // One request per group (both samples at once), each with one of the first three images exactly as drawn.
    expect(server.images.map((b) => b.toString('base64')).sort()).toEqual(
      known
        .slice(0, 3)
        .map((k) => k.image.toString('base64'))
        .sort(),
    );

    for (const group of groups) {
      const parts = userParts(group.messages![0]!);
      const item = known.find((k) => k.question === parts.find((p) => p.type === 'text')!.text)!;
      expect(item).toBeDefined();
      expect(group.scores).toEqual([1, -1]);
      // Atropos's shape: one base64 string per sequence, without the data-URL prefix.
      expect(group.images).toEqual([item.image.toString('base64'), item.image.toString('base64')]);
      expect(parts.find((p) => p.type === 'image_url')!.image_url!.url).toBe(imageDataUrl(item.image));
      for (const [i, tokens] of group.tokens.entries()) {
        // The server rendered the image as one placeholder token of the prompt, never as its bytes.
        const first = group.masks[i]!.findIndex((m) => m !== MASKED);
        expect(tokens.slice(0, first).filter((t) => t === TOKEN.IMAGE)).toHaveLength(1);
        expect(tokens.filter((t) => t === TOKEN.IMAGE)).toHaveLength(1);
        expect(tokens.length).toBeLessThan(1000);
      }
    }
  });

  it('evaluate: one greedy answer per item, exact scores and per-task accuracy', async () => {
    // Items 2 and 5 (both position questions) are answered wrong; the other four right.
    const server = await vision(known, (k) => (k.index % 3 === 2 ? WRONG : right(k)));
    const { metrics, samples, stdout } = await runEvaluate(
      [MULTIMODAL, '--env.seed', String(SEED), '--items', '6', '--openai.base_url', server.baseUrl],
      scratch.path('evals'),
    );
    expect(server.refusals).toEqual([]);
    const expected = { items: 6, score: 2 / 6, correct: 4 / 6, answered: 1, correct_count: 1, correct_color: 1, correct_position: 0 };
    expect(metrics).toEqual(expected);
    for (const [name, value] of Object.entries(expected)) expect(stdout).toContain(`"${name}": ${value}`);
    expect(server.images).toHaveLength(6);
    expect(samples.map((s) => s.score)).toEqual([1, 1, -1, 1, 1, -1]);
  });

  it('process on VQAv2 Parquet: the image bytes of the file reach the server', async () => {
    const [a, b] = [known[6]!, known[7]!];
    const path = scratch.path('validation-00000-of-00001.parquet');
    await writeVqaParquet(
      path,
      [a, b].map((k, i) => ({
        question_id: 100 + i,
        image_id: i,
        question: k.question,
        question_type: 'how many',
        answer_type: 'other',
        multiple_choice_answer: k.answer,
        answers: humanAnswers({ [k.answer]: 10 }),
        image: { bytes: k.image, path: `COCO_${i}.jpg` },
      })),
    );
    const server = await vision([a, b], (k, choice) => (choice === 0 ? right(k) : WRONG));
    const { groups } = await runProcess(
      [
        MULTIMODAL,
        '--env.data_path',
        path,
        '--env.total_steps',
        '2',
        '--env.group_size',
        '2',
        '--openai.base_url',
        server.baseUrl,
        '--store',
        scratch.path('store'),
      ],
      scratch.path('vqa.jsonl'),
      2,
    );
    expect(server.refusals).toEqual([]);
    expect(groups.map((g) => g.scores)).toEqual([
      [1, -1],
      [1, -1],
    ]);
    expect(groups.map((g) => g.images).sort()).toEqual([a, b].map((k) => [k.image.toString('base64'), k.image.toString('base64')]).sort());
  });

  it('process on the embedded engine, which cannot see images: a well-formed group, each image a placeholder', async () => {
    const group = await processEngineGroup(
      [MULTIMODAL, '--env.seed', String(SEED), '--store', scratch.path('store')],
      scratch.path('engine.jsonl'),
      8,
    );
    const item = known[0]!;
    expect(group.images).toEqual([item.image.toString('base64'), item.image.toString('base64')]);
    // The prompt the engine got is the chat template's rendering, Qwen-VL's placeholder standing for the image.
    const qwen = await loadTokenizer('qwen3');
    const prompt = group.messages![0]!.filter((m) => m.role !== 'assistant');
    const vision = ['<|vision_start|>', '<|image_pad|>', '<|vision_end|>'].map((t) => qwen.tokenToId(t)!);
    expectWellFormedGroup(group, { maxTrained: 8 });
    for (const [i, tokens] of group.tokens.entries()) {
      const first = group.masks[i]!.findIndex((m) => m !== MASKED);
      expect(tokens.slice(0, first)).toEqual(qwen.encodeChat(prompt, { addGenerationPrompt: true }));
      const at = tokens.indexOf(vision[0]!);
      expect(at).toBeGreaterThan(0);
      expect(at).toBeLessThan(first);
      expect(tokens.slice(at, at + 3)).toEqual(vision);
      expect(qwen.decode(tokens.slice(0, first))).toContain(`<|vision_start|><|image_pad|><|vision_end|>\n${item.question}`);
      expect(tokens.length - first).toBeLessThanOrEqual(8);
    }
  });
});
