import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { clothoHome } from '../../store/paths.js';
import { z } from 'zod';
import { writeGguf, type GgufTensor, type GgufTensorType, type GgufValue } from './gguf-writer.js';
import { qwenTokenizerMetadata, qwenVocabSize } from './qwen-tokenizer.js';
import { randomChunks, streamSeed, type Init } from './random-weights.js';

/** Shape and initialisation of a generated Qwen2 model. */
export const ModelSpecSchema = z.strictObject({
  name: z.string().regex(/^[a-z0-9.-]+$/),
  layers: z.number().int().positive(),
  hidden: z.number().int().positive(),
  heads: z.number().int().positive(),
  kvHeads: z.number().int().positive(),
  ffn: z.number().int().positive(),
  context: z.number().int().positive(),
  /** Element type of the matrices; norms and biases are always F32. */
  dtype: z.enum(['F32', 'F16']),
  seed: z.number().int().nonnegative(),
});
export type ModelSpec = z.infer<typeof ModelSpecSchema>;

/** Built-in specs, selected on the command line as `generate:<name>`. */
export const MODEL_SPECS = {
  // Small enough to load and generate in well under a second on two CPU cores.
  tiny: { name: 'tiny', layers: 2, hidden: 64, heads: 4, kvHeads: 2, ffn: 128, context: 4096, dtype: 'F32', seed: 1 },
  // Qwen2.5-0.5B's shapes, so speed and memory are those of the real model.
  '0.5b': { name: '0.5b', layers: 24, hidden: 896, heads: 14, kvHeads: 2, ffn: 4864, context: 32768, dtype: 'F16', seed: 1 },
} as const satisfies Record<string, ModelSpec>;

/** Bumped whenever the bytes written for a given spec change, so stale cache files are not reused. */
const FORMAT_VERSION = 1;

/** `$CLOTHO_HOME/models`, or `<repo>/.clotho/models` when CLOTHO_HOME is unset. */
export function modelCacheDir(): string {
  return join(clothoHome(), 'models');
}

function modelTensors(spec: ModelSpec, vocab: number): GgufTensor[] {
  const { hidden: d, ffn, heads, kvHeads } = spec;
  const kv = (d / heads) * kvHeads;
  const tensor = (name: string, dims: number[], init: Init, type: GgufTensorType = spec.dtype): GgufTensor => ({
    name,
    dims,
    type,
    chunks: () =>
      randomChunks(
        dims.reduce((a, b) => a * b, 1),
        type,
        init,
        streamSeed(spec.seed, name),
      ),
  });
  const linear = (name: string, inDim: number, outDim: number) =>
    tensor(name, [inDim, outDim], { kind: 'uniform', std: 1 / Math.sqrt(inDim) });
  const ones = (name: string) => tensor(name, [d], { kind: 'constant', value: 1 }, 'F32');
  const bias = (name: string, n: number) => tensor(name, [n], { kind: 'uniform', std: 0.02 }, 'F32');

  // Embedding std 3/√d gives tied-output logits of std ≈ 3: peaked enough that sampling is not uniform noise.
  const out: GgufTensor[] = [tensor('token_embd.weight', [d, vocab], { kind: 'uniform', std: 3 / Math.sqrt(d) })];
  for (let i = 0; i < spec.layers; i++) {
    const b = `blk.${i}`;
    out.push(
      ones(`${b}.attn_norm.weight`),
      linear(`${b}.attn_q.weight`, d, d),
      bias(`${b}.attn_q.bias`, d),
      linear(`${b}.attn_k.weight`, d, kv),
      bias(`${b}.attn_k.bias`, kv),
      linear(`${b}.attn_v.weight`, d, kv),
      bias(`${b}.attn_v.bias`, kv),
      linear(`${b}.attn_output.weight`, d, d),
      ones(`${b}.ffn_norm.weight`),
      linear(`${b}.ffn_gate.weight`, d, ffn),
      linear(`${b}.ffn_up.weight`, d, ffn),
      linear(`${b}.ffn_down.weight`, ffn, d),
    );
  }
  // No `output.weight`: llama.cpp ties the output to token_embd, as Qwen2.5-0.5B does.
  out.push(ones('output_norm.weight'));
  return out;
}

function modelMetadata(spec: ModelSpec, tokenizer: Array<[string, GgufValue]>): Array<[string, GgufValue]> {
  const u32 = (value: number): GgufValue => ({ type: 'u32', value });
  return [
    ['general.architecture', { type: 'string', value: 'qwen2' }],
    ['general.name', { type: 'string', value: `clotho-qwen2-${spec.name}` }],
    ['general.file_type', u32(spec.dtype === 'F32' ? 0 : 1)],
    ['qwen2.context_length', u32(spec.context)],
    ['qwen2.embedding_length', u32(spec.hidden)],
    ['qwen2.block_count', u32(spec.layers)],
    ['qwen2.feed_forward_length', u32(spec.ffn)],
    ['qwen2.attention.head_count', u32(spec.heads)],
    ['qwen2.attention.head_count_kv', u32(spec.kvHeads)],
    ['qwen2.rope.freq_base', { type: 'f32', value: 1_000_000 }],
    ['qwen2.attention.layer_norm_rms_epsilon', { type: 'f32', value: 1e-6 }],
    ...tokenizer,
  ];
}

/** Cache file path of a spec: keyed by a hash of the spec and {@link FORMAT_VERSION}. */
export function modelPath(spec: ModelSpec, dir = modelCacheDir()): string {
  const key = createHash('sha256').update(JSON.stringify({ spec, FORMAT_VERSION })).digest('hex').slice(0, 12);
  return join(dir, `clotho-qwen2-${spec.name}-${key}.gguf`);
}

/**
 * Returns the path of a GGUF file with a real Qwen2 architecture, seeded random weights and the real
 * Qwen tokenizer, writing it first if the cache does not have it. Written to a temporary name and
 * renamed, so concurrent callers never see a partial file.
 */
export async function ensureGeneratedModel(spec: ModelSpec, dir = modelCacheDir()): Promise<string> {
  const valid = ModelSpecSchema.parse(spec);
  if (valid.hidden % valid.heads !== 0 || valid.heads % valid.kvHeads !== 0) {
    throw new Error(`model spec ${valid.name}: heads must divide hidden and kvHeads must divide heads`);
  }
  const path = modelPath(valid, dir);
  if (existsSync(path)) return path;
  await mkdir(dir, { recursive: true });
  const tmp = `${path}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeGeneratedModel(tmp, valid);
    await rename(tmp, path);
  } finally {
    await rm(tmp, { force: true });
  }
  return path;
}

/**
 * Writes a generated model to `path` as it is (no cache, no rename), with `tokenizer` as its `tokenizer.*` metadata:
 * the real Qwen tokenizer by default; tests give another to make a model with another vocabulary.
 */
export async function writeGeneratedModel(
  path: string,
  spec: ModelSpec,
  tokenizer: Array<[string, GgufValue]> = qwenTokenizerMetadata(),
): Promise<void> {
  await writeGguf(path, modelMetadata(spec, tokenizer), modelTensors(spec, qwenVocabSize(tokenizer)));
}

/** Resolves `generate:<name>` to a built-in spec, or undefined when `model` is not of that form. */
export function generatedSpecFor(model: string): ModelSpec | undefined {
  if (!model.startsWith('generate:')) return undefined;
  const name = model.slice('generate:'.length);
  const spec = (MODEL_SPECS as Record<string, ModelSpec>)[name];
  if (!spec) throw new Error(`unknown generated model "${name}"; known: ${Object.keys(MODEL_SPECS).join(', ')}`);
  return spec;
}
