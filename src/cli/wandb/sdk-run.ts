import { Worker } from 'node:worker_threads';
import type { WandbRunInfo } from './local-run.js';

/** A run streamed to W&B by its JavaScript SDK; it never throws: a failure is reported once through `onProblem`. */
export interface SdkRun {
  /** Scalars only: the JavaScript SDK cannot upload tables or other media. */
  log(metrics: Record<string, number>, step: number): void;
  /** Finishes the run, waiting at most `timeoutMs` for the SDK to flush; resolves to whether W&B took it all. */
  finish(exitCode: number, timeoutMs?: number): Promise<boolean>;
}

/** The run config as W&B's API takes it, each value under `value` (the JavaScript SDK passes it on as given). */
const wandbConfig = (config: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(config).map(([key, value]) => [key, { desc: null, value }]));

/**
 * Starts streaming a run to W&B with `@wandb/sdk` (reading WANDB_API_KEY, WANDB_BASE_URL, ~/.netrc as the SDK
 * does) in a worker thread, so that nothing the SDK does can crash or block the run.
 */
export function startSdkRun(info: WandbRunInfo, onProblem: (reason: string) => void, env: NodeJS.ProcessEnv = process.env): SdkRun {
  const thread = new Worker(new URL('./sdk-thread.mjs', import.meta.url), {
    workerData: { id: info.id, name: info.name, project: info.project, entity: info.entity, config: wandbConfig(info.config) },
    env,
    stdout: true,
    stderr: true,
  });
  let failed = false;
  let finished = false;
  const lastWords: string[] = [];
  const fail = (reason: string) => {
    if (failed || finished) return;
    failed = true;
    onProblem(lastWords.length > 0 ? `${reason} (${lastWords.slice(-2).join('; ')})` : reason);
    void thread.terminate();
  };
  thread.on('message', (message: { type: string; text?: string }) => {
    if (message.type === 'console' && message.text) lastWords.push(message.text.split('\n')[0]!.slice(0, 200));
    if (message.type === 'finished') finished = true;
  });
  thread.stdout.resume();
  thread.stderr.resume();
  thread.on('error', (error) => fail(error.message));
  thread.on('exit', (code) => code !== 0 && fail(`the W&B SDK stopped (exit code ${code})`));
  const exited = new Promise<void>((resolve) => thread.once('exit', () => resolve()));
  return {
    log(metrics, step) {
      if (!failed) thread.postMessage({ type: 'log', data: { ...metrics }, step });
    },
    async finish(exitCode, timeoutMs = 30_000) {
      if (failed) return false;
      thread.postMessage({ type: 'finish', code: exitCode });
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
      await Promise.race([exited, late]);
      clearTimeout(timer);
      if (!finished) fail(`the W&B SDK did not finish within ${timeoutMs / 1000} s`);
      await exited;
      return finished;
    },
  };
}
