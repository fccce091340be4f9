import { stat } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { decideListening, INFERENCE_FACE, LISTENING_OPTIONS, listeningHelp, ListeningFlagsShape } from '../../config/listening.js';
import { startLocalEngine, type RunningLocalEngine } from '../../inference/local/start.js';
import { untilInterrupted } from '../interrupt.js';

const FlagsSchema = z.strictObject({
  ...ListeningFlagsShape,
  model: z.string({ message: '--model is required' }).min(1),
  port: z.coerce.number().int().min(0).max(65535).default(8080),
  slots: z.coerce.number().int().positive().default(4),
  ctx: z.coerce.number().int().positive().default(4096),
  threads: z.coerce.number().int().positive().optional(),
  'weights-version': z.coerce.number().int().nonnegative().default(0),
  'weights-dir': z.string().min(1).optional(),
});

export const INFERENCE_USAGE = `Usage: clotho inference --model <file.gguf | generate:tiny | generate:0.5b | owner/repo[:quant]> [--port 8080] [--host 127.0.0.1] [--token <secret>] [--trusted-network] [--slots 4] [--ctx 4096] [--threads N] [--weights-version 0] [--weights-dir <folder>]
  --model <m>              a GGUF file, a generated model (generate:tiny, generate:0.5b) or a Hugging Face repo id
  --port <n>               port (default 8080; 0 picks a free one)
${listeningHelp(INFERENCE_FACE)}
  --slots <n>              samples generated at once (default 4)
  --ctx <n>                tokens per slot, prompt and completion (default 4096)
  --threads <n>            CPU threads (default: cores - 1)
  --weights-version <n>    version of the weights loaded at start (default 0): GET /v1/weights and every generation
                           (header x-clotho-weights-version) report it until POST /v1/weights swaps newer ones in
  --weights-dir <folder>   the folder POST /v1/weights takes new weights from (the trainer's, e.g. <save-path>/weights);
                           a path outside it, or through a link out of it, is refused. Without it no swap is taken`;

const STRING_FLAGS = ['model', 'port', 'slots', 'ctx', 'threads', 'weights-version', 'weights-dir'];

/** `clotho inference`: serves a local model until SIGINT or SIGTERM. Returns the exit code. */
export async function inferenceCommand(args: string[], env: Record<string, string | undefined> = process.env): Promise<number> {
  let flags: z.infer<typeof FlagsSchema>;
  try {
    const { values } = parseArgs({
      args,
      options: { ...LISTENING_OPTIONS, ...Object.fromEntries(STRING_FLAGS.map((k) => [k, { type: 'string' as const }])) },
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
  const weightsDir = flags['weights-dir'];
  if (weightsDir !== undefined && !(await stat(weightsDir).catch(() => undefined))?.isDirectory()) {
    console.error(`clotho inference: --weights-dir ${weightsDir} is not a folder`);
    return 2;
  }
  const listening = decideListening(
    INFERENCE_FACE,
    { host: flags.host, port: flags.port, token: flags.token, trustedNetwork: flags['trusted-network'] },
    env,
  );
  if (!listening.ok) {
    console.error(listening.error);
    return 2;
  }
  if (listening.warning) console.error(listening.warning);
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
      ...(listening.token === undefined ? {} : { token: listening.token }),
      ...(weightsDir === undefined ? {} : { weightsDir }),
    });
  } catch (err) {
    console.error(err instanceof Error ? err.message : String(err));
    return 1;
  }
  const weights = `weights version ${flags['weights-version']}${weightsDir === undefined ? '' : `, new weights from ${weightsDir}`}`;
  const guarded = listening.token === undefined ? '' : '; bearer token required';
  console.log(`serving ${running.modelName} at ${running.baseUrl} (${flags.slots} slots, ${weights}${guarded}); Ctrl-C to stop`);
  await untilInterrupted();
  await running.close();
  return 0;
}
