import { defineEnvironment, imageDataUrl, imagePart, textPart, z, type ItemSource } from 'clotho';
import { answersMatch, extractAnswer, vqaAccuracy } from './answer.js';
import { shapeQuestion, TASKS } from './shapes.js';
import { loadVqa, type MultimodalItem } from './vqa.js';

export type { MultimodalItem } from './vqa.js';

export const SYSTEM_PROMPT =
  'You answer questions about an image. Look at the image, then give your final answer as a single word or number ' +
  'inside <answer></answer> tags, for example <answer>3</answer> or <answer>red</answer>.';

/**
 * Questions about images, sent as OpenAI `image_url` parts (base64 `data:` URLs): generated scenes of shapes
 * (counting, colours, positions) or VQAv2. +1 for the exact answer, --env.wrong_score otherwise.
 */
export default defineEnvironment({
  name: 'multimodal',
  description:
    'Questions about images (generated shapes: counting, colours, positions; or VQAv2 by path); +1 for the exact answer in <answer></answer>',
  config: {
    data_path: z
      .string()
      .nullable()
      .default(null)
      .describe('VQAv2 questions (.parquet with an image column, or an ImageFolder metadata.jsonl); unset: generated shapes'),
    tasks: z
      .array(z.enum(TASKS))
      .min(1)
      .default([...TASKS])
      .describe('generated question kinds, taken in turn'),
    seed: z.number().int().default(0).describe('names the generated set: the same seed draws the same images'),
    size: z.number().int().positive().default(10_000).describe('generated questions per epoch; item i is question i mod size'),
    image_size: z.number().int().min(24).max(1024).default(96).describe('width and height of generated images, in pixels'),
    max_shapes: z.number().int().min(1).max(9).default(5).describe('most shapes in a generated scene'),
    wrong_score: z.number().default(-1).describe('score of a wrong or missing answer'),
  },
  defaults: { group_size: 8, max_token_length: 512 },

  async load(config): Promise<ItemSource<MultimodalItem>> {
    if (config.data_path !== null) return loadVqa(config.data_path);
    const options = { seed: config.seed, tasks: config.tasks, imageSize: config.image_size, maxShapes: config.max_shapes };
    // Scenes are drawn on demand: item i is the same on every worker and costs nothing until asked for.
    return {
      size: config.size,
      get(index) {
        const { id, task, question, answer, png } = shapeQuestion({ ...options, index });
        return { id, task, question, answer, answers: [], image: imageDataUrl(png, 'image/png') };
      },
    };
  },

  prompt: (item) => [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: [imagePart(item.image), textPart(item.question)] },
  ],

  parse: (completion) => extractAnswer(completion),

  score({ item, parsed, config }) {
    const correct = answersMatch(parsed, item.answer);
    const metrics: Record<string, number> = {
      correct: correct ? 1 : 0,
      answered: parsed === null ? 0 : 1,
      [`correct_${item.task}`]: correct ? 1 : 0,
    };
    if (item.answers.length > 0) metrics.vqa_accuracy = vqaAccuracy(parsed, item.answers);
    return { score: correct ? 1 : config.wrong_score, metrics };
  },
});
