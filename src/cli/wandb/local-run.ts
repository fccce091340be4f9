import { createHash } from 'node:crypto';
import { mkdir, open, writeFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { encodeRecord, FILE_POLICY, jsonItems, type WandbRecord } from './records.js';
import { frameRecord, transactionLogHeader } from './transaction-log.js';

/** A W&B table (`wandb.Table`): named columns and rows of values. */
export interface WandbTable {
  kind: 'table';
  columns: string[];
  data: unknown[][];
}

/** What one `log` call carries: numbers by metric name, and tables. */
export type WandbMetrics = Record<string, number | WandbTable>;

/** Who the run is, as W&B names it. */
export interface WandbRunInfo {
  /** W&B's run id: 8 characters of [a-z0-9]. */
  id: string;
  /** Display name. */
  name: string;
  project: string;
  entity?: string;
  group?: string;
  config: Record<string, unknown>;
}

/** A run directory as the Python SDK lays it out, written by Clotho. */
export interface LocalRun {
  dir: string;
  /** The transaction log, `run-<id>.wandb`. */
  file: string;
  log(metrics: WandbMetrics, step: number): Promise<void>;
  finish(exitCode: number): Promise<void>;
}

const isTable = (value: unknown): value is WandbTable => (value as WandbTable | undefined)?.kind === 'table';

/** `20261121_121500`: the stamp W&B puts in run directory names. */
function stamp(date: Date): string {
  return date.toISOString().replace(/[-:]/g, '').replace('T', '_').slice(0, 15);
}

/**
 * Opens `<root>/wandb/[offline-]run-<stamp>-<id>/` with the transaction log `wandb sync` uploads: a header, the
 * run (name, project, group, config), one history record per `log`, a files record for each table written under
 * `files/media/table/`, and at the end the summary, the exit code and the final record.
 */
export async function openLocalRun(info: WandbRunInfo, options: { root: string; offline: boolean; now?: Date }): Promise<LocalRun> {
  const started = options.now ?? new Date();
  const dir = join(options.root, 'wandb', `${options.offline ? 'offline-run' : 'run'}-${stamp(started)}-${info.id}`);
  const file = join(dir, `run-${info.id}.wandb`);
  await mkdir(join(dir, 'files'), { recursive: true });
  const handle: FileHandle = await open(file, 'wx');
  let offset = 0;
  let num = 0;
  const summary: Record<string, unknown> = {};
  // One write at a time, in call order: the framing depends on the offset the previous record left.
  let queue: Promise<void> = Promise.resolve();
  const append = (bytes: Buffer) => {
    offset += bytes.length;
    return handle.write(bytes).then(() => undefined);
  };
  const write = (record: WandbRecord) => append(frameRecord(encodeRecord({ num: ++num, ...record }), offset));
  const serial = (task: () => Promise<void>) => (queue = queue.then(task));

  await append(transactionLogHeader());
  await write({ header: {} });
  await write({
    run: {
      run_id: info.id,
      project: info.project,
      display_name: info.name,
      config: { update: jsonItems(info.config) },
      start_time: { seconds: Math.floor(started.getTime() / 1000), nanos: (started.getTime() % 1000) * 1e6 },
      ...(info.entity ? { entity: info.entity } : {}),
      ...(info.group ? { run_group: info.group } : {}),
    },
  });

  /** Writes a table as the Python SDK does (`media/table/<key>_<step>_<hash>.table.json`) and returns its reference. */
  const writeTable = async (key: string, step: number, table: WandbTable) => {
    const text = JSON.stringify({ columns: table.columns, data: table.data });
    const sha256 = createHash('sha256').update(text).digest('hex');
    const path = `media/table/${key}_${step}_${sha256.slice(0, 20)}.table.json`;
    await mkdir(join(dir, 'files', path, '..'), { recursive: true });
    await writeFile(join(dir, 'files', path), text);
    await write({ files: { files: [{ path, policy: FILE_POLICY.now }] } });
    return { _type: 'table-file', sha256, size: Buffer.byteLength(text), path, ncols: table.columns.length, nrows: table.data.length };
  };

  return {
    dir,
    file,
    log: (metrics, step) =>
      serial(async () => {
        const values: Record<string, unknown> = {};
        for (const [key, value] of Object.entries(metrics)) values[key] = isTable(value) ? await writeTable(key, step, value) : value;
        const now = Date.now();
        Object.assign(values, { _step: step, _runtime: (now - started.getTime()) / 1000, _timestamp: now / 1000 });
        Object.assign(summary, values);
        await write({ history: { item: jsonItems(values), step: { num: step } } });
      }),
    finish: (exitCode) =>
      serial(async () => {
        await write({ summary: { update: jsonItems(summary) } });
        await writeFile(join(dir, 'files', 'wandb-summary.json'), JSON.stringify(summary));
        await write({ exit: { exit_code: exitCode, runtime: Math.round((Date.now() - started.getTime()) / 1000) } });
        await write({ final: {} });
        await handle.sync();
        await handle.close();
      }),
  };
}
