import { existsSync } from 'node:fs';
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { loadTokenizer, type Tokenizer } from '../inference/tokenizer.js';
import { MESSAGES_ONLY_NOT_TRAINING, type ScoredDataGroup } from '../schema/scored-data.js';
import { jsonlGroups, storeGroups, type GroupBatch, type GroupSource } from './group-sources.js';
import { InterruptedError, interruption } from './interrupt.js';
import type { CommandIo } from './io.js';
import { messagesView, textView, type GroupView } from './training-data.js';
import { parseTrainingDataFlags, type TrainingDataFlags, type TrainingDataSpec } from './training-data-flags.js';
import { trainerClient } from './trainer-client.js';

/** A command that writes training records selected from scored groups (`clotho sft-gen`, `clotho dpo-gen`). */
export interface TrainingDataCommand extends TrainingDataSpec {
  /** What one record is, for messages: `sequences`, `pairs`. */
  noun: string;
  /** Sequences per batch it registers with the API. */
  batchSize(flags: TrainingDataFlags, groupSize: number): number;
  /** Makes the run's selection: a group's records, as JSON-safe objects. */
  selector(flags: TrainingDataFlags): (group: Pick<ScoredDataGroup, 'scores'>, view: GroupView) => object[];
}

/** A batch taken under a lease is served again to another trainer if not acked within this time. */
const LEASE_SECONDS = 300;
/** Atropos's trainers poll an empty queue once a second. */
const POLL_MS = 1_000;

/** Runs a training-data command to its end; returns the exit code. */
export async function runTrainingDataCommand(command: TrainingDataCommand, argv: string[], io: CommandIo): Promise<number> {
  const flags = parseTrainingDataFlags(command, argv);
  const name = `clotho ${command.command}`;
  const path = resolve(flags.filepath);
  if (existsSync(path) && !flags.appendToPrevious) throw new Error(`${path} already exists: pass --append-to-previous to add to it`);
  const tokenizer = flags.tokenizer === undefined ? undefined : await loadTokenizer(flags.tokenizer);
  if (tokenizer) io.out(`tokenizer ${tokenizer.name} loaded (vocabulary of ${tokenizer.vocabSize})`);
  const stop = interruption();
  let written = 0;
  let groups = 0;
  try {
    const source = await openSource(command, flags, stop.promise, io);
    if (flags.dryRun) {
      io.out(`dry run: ready to write ${flags.saveMessages || !tokenizer ? 'messages' : 'text'} records to ${path}`);
      return 0;
    }
    await mkdir(dirname(path), { recursive: true });
    // Opened once the first batch is seen through (a group that cannot be written fails before the file exists).
    let opened: FileHandle | undefined;
    const output = async () => (opened ??= await open(path, flags.appendToPrevious ? 'a' : 'wx'));
    try {
      const limit = flags.numSeqsToSave;
      // From the API a taken batch is written whole (as Atropos does), so none of its groups is lost.
      const exact = flags.source.kind !== 'api';
      const select = command.selector(flags);
      for await (const batch of source) {
        const views = batch.groups.map((group) => viewOf(group, tokenizer, flags.saveMessages));
        const file = await output();
        for (const [i, group] of batch.groups.entries()) {
          groups++;
          let records = select(group, views[i]!);
          if (exact && limit !== null) records = records.slice(0, limit - written);
          if (records.length > 0) await file.write(records.map((r) => `${JSON.stringify(r)}\n`).join(''));
          written += records.length;
          if (exact && limit !== null && written >= limit) break;
        }
        await file.sync();
        await batch.ack?.();
        io.status?.(`${written} ${command.noun} from ${plural(groups, 'group')}`);
        if (limit !== null && written >= limit) break;
      }
      await output();
    } finally {
      await opened?.close();
      io.status?.('');
    }
  } catch (error) {
    if (!(error instanceof InterruptedError)) throw error;
    io.err(`${name}: interrupted; wrote ${written} ${command.noun} from ${plural(groups, 'group')} to ${path}`);
    return 130;
  } finally {
    stop.dispose();
  }
  io.out(`wrote ${written} ${command.noun} from ${plural(groups, 'group')} to ${path}`);
  return 0;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** Text when a tokenizer is given (unless --save-messages), the group's messages otherwise. */
function viewOf(group: GroupBatch['groups'][number], tokenizer: Tokenizer | undefined, saveMessages: boolean): GroupView {
  if (!tokenizer || saveMessages) return messagesView(group);
  if ('messages_only' in group) {
    throw new Error(
      `--tokenizer writes each sequence's decoded tokens, and ${MESSAGES_ONLY_NOT_TRAINING}: leave out --tokenizer (or pass --save-messages) to write its messages`,
    );
  }
  return textView(group.tokens.map((tokens) => tokenizer.decode(tokens)));
}

/** Opens the source the flags name; from the API, registers first. A dry run only checks that it is there. */
async function openSource(
  command: TrainingDataCommand,
  flags: TrainingDataFlags,
  stop: Promise<never>,
  io: CommandIo,
): Promise<GroupSource> {
  const source = flags.source;
  if (source.kind === 'jsonl') {
    if (!existsSync(source.path)) throw new Error(`--from ${source.path}: no such file`);
    return jsonlGroups(source.path);
  }
  if (source.kind === 'store') {
    const groups = storeGroups(source.store, source.runId);
    // The generator checks the run exists on its first step; a dry run takes that step.
    if (flags.dryRun) await groups[Symbol.asyncIterator]().next();
    return groups;
  }
  const client = trainerClient({
    apiUrl: source.apiUrl,
    leaseSeconds: LEASE_SECONDS,
    pollMs: POLL_MS,
    stop,
    ...(source.token === undefined ? {} : { token: source.token }),
  });
  if (flags.dryRun) {
    await client.reach();
    io.out(`reached the trajectory API at ${source.apiUrl}`);
    return client.batches();
  }
  const batchSize = command.batchSize(flags, source.groupSize);
  const registered = await client.register({
    wandb_group: command.command,
    wandb_project: 'clotho',
    batch_size: batchSize,
    max_token_len: source.maxTokenLen,
    checkpoint_dir: 'checkpoints',
    save_checkpoint_interval: 10,
    starting_step: 0,
    // Atropos asks for twice the steps it needs, as a margin.
    num_steps: (flags.numSeqsToSave ?? 0) * 2,
  });
  const note = registered.batchSize === batchSize ? '' : ` (set by the trainer that registered first; this one asked for ${batchSize})`;
  io.out(`registered with ${source.apiUrl} as its trainer: batches of ${registered.batchSize} sequences${note}`);
  return client.batches();
}
