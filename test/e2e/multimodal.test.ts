import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { shapeQuestion, TASKS } from '../../environments/multimodal/shapes.js';
import { humanAnswers, writeVqaParquet } from '../../environments/multimodal/testing.js';
import { imageDataUrl } from '../../src/env/images.js';
import { loadTokenizer } from '../../src/inference/tokenizer.js';
import { MASKED, type Message, type ScoredDataGroup } from '../../src/schema/scored-data.js';
import { runClotho } from '../support/cli.js';
import { TOKEN } from '../support/scripted-openai.js';
import { startScriptedVision, type KnownImage, type ScriptedVision } from '../support/scripted-vision.js';

const MULTIMODAL = fileURLToPath(new URL('../../environments/multimodal/index.ts', import.meta.url));
const env = () => ({ TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_NAMESPACE: inject('temporalNamespace') });
const readGroups = async (path: string) =>
  (await readFile(path, 'utf8')).split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as ScoredDataGroup);

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
const userParts = (messages: Message[]) => messages.find((m) => m.role === 'user')!.content as { type: string; text?: string; image_url?: { url: string } }[];

let dir: string;
const servers: ScriptedVision[] = [];
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clotho-multimodal-e2e-'));
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await rm(dir, { recursive: true, force: true });
});
const vision = async (images: Known[], plan: (k: Known, choice: number) => string) => {
  const server = await startScriptedVision(images, plan);
  servers.push(server);
  return server;
};

describe('multimodal', () => {
  it('process: the vision server gets each generated PNG byte for byte, and the group carries it in `images`', async () => {
    const server = await vision(known, (k, choice) => (choice === 0 ? right(k) : WRONG));
    const out = join(dir, 'shapes.jsonl');
    const { code, stdout, stderr } = await runClotho(
      ['process', MULTIMODAL, '--env.seed', String(SEED), '--env.total_steps', '3', '--env.group_size', '2',
        '--openai.base_url', server.baseUrl, '--env.data_path_to_save_groups', out, '--store', join(dir, 'store')],
      env(),
    );
    expect(server.refusals).toEqual([]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain('groups 3/3');
    // One request per group (both samples at once), each with one of the first three images exactly as drawn.
    expect(server.images.map((b) => b.toString('base64')).sort()).toEqual(known.slice(0, 3).map((k) => k.image.toString('base64')).sort());

    const groups = await readGroups(out);
    expect(groups).toHaveLength(3);
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
    const evals = join(dir, 'evals');
    const { code, stdout, stderr } = await runClotho(
      ['evaluate', MULTIMODAL, '--env.seed', String(SEED), '--items', '6', '--openai.base_url', server.baseUrl,
        '--env.data_dir_to_save_evals', evals],
      env(),
    );
    expect(server.refusals).toEqual([]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const expected = { items: 6, score: 2 / 6, correct: 4 / 6, answered: 1, correct_count: 1, correct_color: 1, correct_position: 0 };
    expect(JSON.parse(await readFile(join(evals, 'metrics.json'), 'utf8'))).toEqual(expected);
    for (const [name, value] of Object.entries(expected)) expect(stdout).toContain(`"${name}": ${value}`);
    expect(server.images).toHaveLength(6);
    const samples = (await readFile(join(evals, 'samples.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { score: number });
    expect(samples.map((s) => s.score)).toEqual([1, 1, -1, 1, 1, -1]);
  });

  it('process on VQAv2 Parquet: the image bytes of the file reach the server', async () => {
    const [a, b] = [known[6]!, known[7]!];
    const path = join(dir, 'validation-00000-of-00001.parquet');
    await writeVqaParquet(path, [a, b].map((k, i) => ({
      question_id: 100 + i, image_id: i, question: k.question, question_type: 'how many', answer_type: 'other',
      multiple_choice_answer: k.answer, answers: humanAnswers({ [k.answer]: 10 }), image: { bytes: k.image, path: `COCO_${i}.jpg` },
    })));
    const server = await vision([a, b], (k, choice) => (choice === 0 ? right(k) : WRONG));
    const out = join(dir, 'vqa.jsonl');
    const { code, stderr } = await runClotho(
      ['process', MULTIMODAL, '--env.data_path', path, '--env.total_steps', '2', '--env.group_size', '2',
        '--openai.base_url', server.baseUrl, '--env.data_path_to_save_groups', out, '--store', join(dir, 'store')],
      env(),
    );
    expect(server.refusals).toEqual([]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const groups = await readGroups(out);
    expect(groups.map((g) => g.scores)).toEqual([[1, -1], [1, -1]]);
    expect(groups.map((g) => g.images).sort()).toEqual([a, b].map((k) => [k.image.toString('base64'), k.image.toString('base64')]).sort());
  });

  it('process on the embedded engine, which cannot see images: a well-formed group, each image a placeholder', async () => {
    const out = join(dir, 'engine.jsonl');
    const { code, stdout, stderr } = await runClotho(
      ['process', MULTIMODAL, '--env.seed', String(SEED), '--env.total_steps', '1', '--env.group_size', '2', '--env.max_token_length', '8',
        '--env.ensure_scores_are_not_same', 'false', '--env.data_path_to_save_groups', out, '--store', join(dir, 'store')],
      env(),
    );
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain('groups 1/1');
    const [group, ...rest] = await readGroups(out);
    expect(rest).toHaveLength(0);
    const item = known[0]!;
    expect(group!.images).toEqual([item.image.toString('base64'), item.image.toString('base64')]);
    // The prompt the engine got is the chat template's rendering, Qwen-VL's placeholder standing for the image.
    const qwen = await loadTokenizer('qwen3');
    const prompt = group!.messages![0]!.filter((m) => m.role !== 'assistant');
    const vision = ['<|vision_start|>', '<|image_pad|>', '<|vision_end|>'].map((t) => qwen.tokenToId(t)!);
    for (const [i, tokens] of group!.tokens.entries()) {
      const first = group!.masks[i]!.findIndex((m) => m !== MASKED);
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
