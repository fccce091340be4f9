import { parseArgs } from 'node:util';
import { z } from 'zod';
import { startLocalEngine, type RunningLocalEngine } from '../../inference/local/start.js';
import { untilInterrupted } from '../interrupt.js';

const FlagsSchema = z.strictObject({
  model: z.string({ message: '--model is required' }).min(1),
  port: z.coerce.number().int().min(0).max(65535).default(8080),
  host: z.string().default('127.0.0.1'),
  slots: z.coerce.number().int().positive().default(4),
  ctx: z.coerce.number().int().positive().default(4096),
  threads: z.coerce.number().int().positive().optional(),
  'weights-version': z.coerce.number().int().nonnegative().default(0),
});

export const INFERENCE_USAGE = `Usage: clotho inference --model <file.gguf | generate:tiny | generate:0.5b | owner/repo[:quant]> [--port 8080] [--host 127.0.0.1] [--slots 4] [--ctx 4096] [--threads N] [--weights-version 0]
  --model <m>              a GGUF file, a generated model (generate:tiny, generate:0.5b) or a Hugging Face repo id
  --port <n>               port (default 8080; 0 picks a free one)
  --host <host>            interface to listen on (default 127.0.0.1)
  --slots <n>              samples generated at once (default 4)
  --ctx <n>                tokens per slot, prompt and completion (default 4096)
  --threads <n>            CPU threads (default: cores - 1)
  --weights-version <n>    version of the weights loaded at start (default 0): GET /v1/weights and every generation
                           (header x-clotho-weights-version) report it until POST /v1/weights swaps newer ones in`;

/** `clotho inference`: serves a local model until SIGINT or SIGTERM. Returns the exit code. */
export async function inferenceCommand(args: string[]): Promise<number> {
  let flags: z.infer<typeof FlagsSchema>;
  try {
    const { values } = parseArgs({
      args,
      options: Object.fromEntries(
        ['model', 'port', 'host', 'slots', 'ctx', 'threads', 'weights-version'].map((k) => [k, { type: 'string' }]),
      ),
      strict: true,
    });
    const parsed = FlagsSchema.safeParse(values);
    if (!parsed.success) {
      console.error(parsed.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`).join('\n'));
      console.error(INFERENCE_USAGE);
      return 2;
    }
    flags = parsed.data;
  } catch (err) {
    console.error(err instanceof Error ? err.message : String(err));
    console.error(INFERENCE_USAGE);
    return 2;
  }
  let running: RunningLocalEngine;
  try {
    running = await startLocalEngine({
      model: flags.model,
      port: flags.port,
      host: flags.host,
      slots: flags.slots,
      contextSize: flags.ctx,
      threads: flags.threads,
      weightsVersion: flags['weights-version'],
    });
  } catch (err) {
    console.error(err instanceof Error ? err.message : String(err));
    return 1;
  }
  const weights = `weights version ${flags['weights-version']}`;
  console.log(`serving ${running.modelName} at ${running.baseUrl} (${flags.slots} slots, ${weights}); Ctrl-C to stop`);
  await untilInterrupted();
  await running.close();
  return 0;
}
