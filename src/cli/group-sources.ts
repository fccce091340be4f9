import { createReadStream, existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import {
  isMessagesOnly,
  MessagesOnlyGroupSchema,
  WrittenGroupSchema,
  type MessagesOnlyGroup,
  type ScoredDataGroup,
  type ToolDefinition,
} from '../schema/scored-data.js';
import { storeLabel } from '../store/open-store.js';
import { storeKey, type TrajectoryStore } from '../store/trajectory-store.js';
import { listStoredItems, readAssembled } from './view/store-layout.js';

/**
 * Where `clotho sft-gen` and `clotho dpo-gen` read scored groups: a trainer's batches from the trajectory API, a
 * finished run's JSONL, or a run's groups in the trajectory store. Each yields groups in batches; a batch taken from
 * the API under a lease carries `ack`, to be called once its records are safely written.
 */
export interface GroupBatch {
  /**
   * Atropos's groups, with the tools their model was offered where the source keeps them (a JSONL or the store that
   * `clotho process` wrote); a trainer's batch from the API carries Atropos's 14 fields only. A run of `clotho process
   * --env.messages_only` wrote messages-only groups, without tokens.
   */
  groups: ((ScoredDataGroup & { tools?: ToolDefinition[] | null }) | MessagesOnlyGroup)[];
  ack?: () => Promise<void>;
}

export type GroupSource = AsyncIterable<GroupBatch>;

/** The lines of a JSONL file of Atropos `ScoredDataGroup`s (`clotho process`'s and Atropos's `process` output). */
export async function* jsonlGroups(path: string): GroupSource {
  if (!existsSync(path)) throw new Error(`--from ${path}: no such file`);
  const lines = createInterface({ input: createReadStream(path, 'utf8'), crlfDelay: Infinity });
  let number = 0;
  for await (const line of lines) {
    number++;
    if (line.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new Error(`${path}:${number}: not JSON (${(error as Error).message})`);
    }
    const group = isMessagesOnly(value) ? MessagesOnlyGroupSchema.safeParse(value) : WrittenGroupSchema.safeParse(value);
    if (!group.success) throw new Error(`${path}:${number}: not a scored group: ${z.prettifyError(group.error).replaceAll('\n', ' ')}`);
    yield { groups: [group.data] };
  }
}

/**
 * The groups a run assembled, from the trajectory store it used, a directory or a bucket
 * (`<run>/<environment>/item-<i>/group`, or an Atropos run's `group-<k>`), environment by environment in name order, items in index order. Every group
 * the run assembled is there, also one a batcher then dropped (too long, stale); groups dropped before assembly (all
 * scores equal) never are.
 */
export async function* storeGroups(store: TrajectoryStore, runId: string): GroupSource {
  const items = await listStoredItems(store, storeKey(runId));
  if (items.length === 0) throw new Error(`--run ${runId}: no such run in the trajectory store ${storeLabel(store)} (set --store)`);
  for (const item of items) {
    if (!item.assembled) continue;
    for (const group of await readAssembled(store, item))
      yield { groups: [isMessagesOnly(group) ? MessagesOnlyGroupSchema.parse(group) : WrittenGroupSchema.parse(group)] };
  }
}
