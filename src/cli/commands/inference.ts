import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import { parseArgs } from 'node:util';
import { resolveModelFile } from 'node-llama-cpp';
import { z } from 'zod';
import { LocalEngine } from '../../inference/local/engine.js';
import { ensureGeneratedModel, generatedSpecFor, modelCacheDir } from '../../inference/local/generate-model.js';
import { serveInference } from '../../inference/local/server.js';

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
    modelPath, modelName, slots: o.slots, contextSize: o.contextSize, threads: o.threads,
  });
  try {
    const server = await serveInference(engine, o.port, o.host);
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

const FlagsSchema = z.strictObject({
  model: z.string({ message: '--model is required' }).min(1),
  port: z.coerce.number().int().min(0).max(65535).default(8080),
  host: z.string().default('127.0.0.1'),
  slots: z.coerce.number().int().positive().default(4),
  ctx: z.coerce.number().int().positive().default(4096),
  threads: z.coerce.number().int().positive().optional(),
});

const USAGE = 'usage: clotho inference --model <file.gguf | generate:tiny | generate:0.5b | owner/repo[:quant]> '
  + '[--port 8080] [--host 127.0.0.1] [--slots 4] [--ctx 4096] [--threads N]';

/** `clotho inference`: serves a local model until SIGINT or SIGTERM. Returns the exit code. */
export async function inferenceCommand(args: string[]): Promise<number> {
  let flags: z.infer<typeof FlagsSchema>;
  try {
    const { values } = parseArgs({
      args,
      options: Object.fromEntries(['model', 'port', 'host', 'slots', 'ctx', 'threads'].map((k) => [k, { type: 'string' }])),
      strict: true,
    });
    const parsed = FlagsSchema.safeParse(values);
    if (!parsed.success) {
      console.error(parsed.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`).join('\n'));
      console.error(USAGE);
      return 2;
    }
    flags = parsed.data;
  } catch (err) {
    console.error(err instanceof Error ? err.message : String(err));
    console.error(USAGE);
    return 2;
  }
  let running: RunningLocalEngine;
  try {
    running = await startLocalEngine({
      model: flags.model, port: flags.port, host: flags.host, slots: flags.slots, contextSize: flags.ctx, threads: flags.threads,
    });
  } catch (err) {
    console.error(err instanceof Error ? err.message : String(err));
    return 1;
  }
  console.log(`serving ${running.modelName} at ${running.baseUrl} (${flags.slots} slots); Ctrl-C to stop`);
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await running.close();
  return 0;
}
