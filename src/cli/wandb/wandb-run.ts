import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { openLocalRun, type LocalRun, type WandbMetrics, type WandbRunInfo } from './local-run.js';
import { startSdkRun, type SdkRun } from './sdk-run.js';

/** A W&B run as Clotho logs to it: `log` and `finish` never throw, problems are reported once each. */
export interface WandbRun {
  /** The local run directory (`wandb sync <dir>` uploads it), or null when W&B is disabled. */
  dir: string | null;
  mode: WandbMode;
  log(metrics: WandbMetrics, step: number): void;
  finish(exitCode: number): Promise<void>;
}

export type WandbMode = 'online' | 'offline' | 'disabled';

/** W&B's own switches: WANDB_MODE (online, offline, dryrun = offline, disabled) and WANDB_DISABLED. */
export function wandbMode(env: NodeJS.ProcessEnv = process.env): WandbMode {
  if (env.WANDB_DISABLED === 'true') return 'disabled';
  const mode = env.WANDB_MODE?.toLowerCase();
  if (mode === 'offline' || mode === 'dryrun') return 'offline';
  return mode === 'disabled' ? 'disabled' : 'online';
}

/** Atropos's run name: `<wandb_name or environment>-<YYYY-MM-DD>-<6 random letters>`. */
export function wandbRunName(base: string, now = new Date()): string {
  const letters = [...randomBytes(6)].map((b) => String.fromCharCode(97 + (b % 26))).join('');
  return `${base}-${now.toISOString().slice(0, 10)}-${letters}`;
}

/** A W&B run id: 8 characters of [a-z0-9], as W&B makes them. */
export function wandbRunId(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  return [...randomBytes(8)].map((b) => alphabet[b % alphabet.length]).join('');
}

/**
 * Opens a W&B run the way the Python SDK keeps one: always a local run directory under `$WANDB_DIR/wandb/` (the
 * working directory by default) with the transaction log `wandb sync` uploads, and when online, the same metrics
 * streamed by W&B's JavaScript SDK. If the SDK cannot reach W&B (no API key, no network, a refused request), the
 * run goes on locally and `notice` says how to upload it later.
 */
export async function openWandbRun(
  info: Omit<WandbRunInfo, 'id'> & { id?: string },
  notice: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): Promise<WandbRun> {
  const mode = wandbMode(env);
  if (mode === 'disabled') return { dir: null, mode, log: () => undefined, finish: async () => undefined };
  const full: WandbRunInfo = { ...info, id: info.id ?? wandbRunId() };
  const local: LocalRun = await openLocalRun(full, { root: env.WANDB_DIR || process.cwd(), offline: mode === 'offline' });
  const upload = `upload it with \`wandb sync ${local.dir}\``;
  let sdk: SdkRun | undefined;
  if (mode === 'online')
    sdk = startSdkRun(full, (reason) => notice(`W&B: streaming stopped: ${reason}; the run is kept in ${local.dir}: ${upload}`), env);
  else notice(`W&B offline: logging to ${local.dir}; ${upload}`);
  let tablesNoted = false;
  let localFailed = false;
  const localProblem = (error: unknown) => {
    if (!localFailed) notice(`W&B: cannot write ${local.file}: ${(error as Error).message}`);
    localFailed = true;
  };
  return {
    dir: local.dir,
    mode,
    log(metrics, step) {
      local.log(metrics, step).catch(localProblem);
      if (!sdk) return;
      const scalars = Object.fromEntries(Object.entries(metrics).filter((e): e is [string, number] => typeof e[1] === 'number'));
      if (!tablesNoted && Object.keys(scalars).length < Object.keys(metrics).length) {
        tablesNoted = true;
        notice(`W&B: the JavaScript SDK cannot upload tables; they are kept in ${join(local.dir, 'files', 'media', 'table')}`);
      }
      sdk.log(scalars, step);
    },
    async finish(exitCode) {
      await Promise.all([local.finish(exitCode).catch(localProblem), sdk?.finish(exitCode)]);
    },
  };
}
