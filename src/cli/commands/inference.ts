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
});

export const INFERENCE_USAGE =
  'Usage: clotho inference --model <file.gguf | generate:tiny | generate:0.5b | owner/repo[:quant]> ' +
  '[--port 8080] [--host 127.0.0.1] [--slots 4] [--ctx 4096] [--threads N]';

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
    });
  } catch (err) {
    console.error(err instanceof Error ? err.message : String(err));
    return 1;
  }
  console.log(`serving ${running.modelName} at ${running.baseUrl} (${flags.slots} slots); Ctrl-C to stop`);
  await untilInterrupted();
  await running.close();
  return 0;
}
