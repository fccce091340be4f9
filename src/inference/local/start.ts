import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import { resolveModelFile } from 'node-llama-cpp';
import { z } from 'zod';
import { LocalEngine } from './engine.js';
import { ensureGeneratedModel, generatedSpecFor, modelCacheDir } from './generate-model.js';
import { serveInference } from './server.js';

/** Options of {@link startLocalEngine}; the CLI flags of `clotho inference` map onto them. */
export const LocalEngineOptionsSchema = z.strictObject({
  /** A `.gguf` path, `generate:tiny` / `generate:0.5b`, or a Hugging Face repo id (`owner/name[:quant]`). */
  model: z.string().min(1),
  /** @default 0 (a free port) */
  port: z.number().int().min(0).max(65535).default(0),
  /** @default "127.0.0.1" */
  host: z.string().min(1).default('127.0.0.1'),
  /** Samples generated at once. @default 4 */
  slots: z.number().int().positive().default(4),
  /** Tokens per slot. @default 4096 */
  contextSize: z.number().int().positive().default(4096),
  threads: z.number().int().positive().optional(),
  /** Version of the weights loaded at start. @default 0 */
  weightsVersion: z.number().int().nonnegative().default(0),
  /** Every request but `GET /health` needs `Authorization: Bearer <token>`. @default none */
  token: z.string().min(1).optional(),
  /** The folder `POST /v1/weights` takes new weights from. @default none: swaps are refused */
  weightsDir: z.string().min(1).optional(),
});
export type LocalEngineOptions = z.input<typeof LocalEngineOptionsSchema>;

/** A running engine: `baseUrl` ends in `/v1`, as OpenAI clients expect. */
export interface RunningLocalEngine {
  baseUrl: string;
  modelName: string;
  engine: LocalEngine;
  close(): Promise<void>;
}

const HF_REPO = /^(hf:)?[A-Za-z0-9][\w.-]*\/[\w.-]+(:[\w.-]+|\/[\w./-]+\.gguf)?$/;

/** Turns the `--model` argument into a local GGUF path, generating or downloading it when needed. */
export async function resolveModel(model: string): Promise<string> {
  const spec = generatedSpecFor(model);
  if (spec) return ensureGeneratedModel(spec);
  if (existsSync(model)) return model;
  if (!HF_REPO.test(model)) throw new Error(`model "${model}" is neither a file, generate:<name>, nor a Hugging Face repo id`);
  const uri = model.startsWith('hf:') ? model : `hf:${model}`;
  try {
    return await resolveModelFile(uri, { directory: modelCacheDir(), cli: false });
  } catch (err) {
    const cause = err instanceof Error ? err.message : String(err);
    throw new Error(`could not get ${model} from the Hugging Face hub (is the network reachable?): ${cause}`);
  }
}

/** Loads the model and serves it over HTTP in this process, for `clotho process` and tests. */
export async function startLocalEngine(options: LocalEngineOptions): Promise<RunningLocalEngine> {
  const o = LocalEngineOptionsSchema.parse(options);
  const modelPath = await resolveModel(o.model);
  const modelName = existsSync(o.model) ? basename(o.model).replace(/\.gguf$/i, '') : o.model;
  const engine = await LocalEngine.load({
    modelPath,
    modelName,
    slots: o.slots,
    contextSize: o.contextSize,
    threads: o.threads,
    weightsVersion: o.weightsVersion,
  });
  try {
    const server = await serveInference(engine, o.port, o.host, {
      ...(o.token === undefined ? {} : { token: o.token }),
      ...(o.weightsDir === undefined ? {} : { weightsDir: o.weightsDir }),
    });
    return {
      baseUrl: `${server.url}/v1`,
      modelName,
      engine,
      close: async () => {
        await server.close();
        await engine.close();
      },
    };
  } catch (err) {
    await engine.close();
    throw err;
  }
}
