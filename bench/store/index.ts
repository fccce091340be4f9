/**
 * What a rollout group's records cost the trajectory store on this machine's file system: `--groups` episodes at once,
 * each writing `--turns` turns of two records (the turn's state record and its tool call's), as a tool-using episode
 * does, through `FileSystemStore` (a group's records appended to its journal) against one file per record, written
 * as FileSystemStore wrote them before (a directory per turn and per sample, a temporary file renamed into place).
 *
 * Prints CPU per turn (user and system: the kernel's share is most of a file's cost) and the ratio, in one process,
 * alternating the two `--rounds` times; the ratios are what to read.
 *
 * Run: npm run bench:store [-- --groups 64 --turns 20 --rounds 3]
 */
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { FileSystemStore } from '../../src/store/trajectory-store.js';

const { values } = parseArgs({
  options: {
    groups: { type: 'string', default: '64' },
    turns: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '3' },
  },
});
const [GROUPS, TURNS, ROUNDS] = [values.groups, values.turns, values.rounds].map(Number) as [number, number, number];

/** A turn's state record as a tool-using episode writes it (a delta: the new message, tokens, masks, logprobs). */
const ids = Array.from({ length: 60 }, (_, i) => 1000 + i);
const generated = (turn: number) => ({
  format: 2,
  prev: `run/env/item-0/turn-${turn - 1}/generated`,
  trajectories: {
    0: {
      messages: [{ role: 'assistant', content: `<tool_call>{"name": "add", "arguments": {"x": ${turn}}}</tool_call>` }],
      tokens: ids,
      masks: ids,
      logprobs: ids.map(() => -0.25),
    },
  },
});
const call = (turn: number) => ({ name: 'add', arguments: `{"x":${turn}}`, outcome: 'ok', content: String(turn + 1) });

/** One file per record, as FileSystemStore wrote them before group journals: the baseline. */
function filePerRecord(root: string) {
  const made = new Set<string>();
  return async (key: string, value: unknown) => {
    const path = join(root, `${key}.json`);
    if (!made.has(dirname(path))) {
      await mkdir(dirname(path), { recursive: true });
      made.add(dirname(path));
    }
    const temporary = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    await writeFile(temporary, JSON.stringify(value));
    await rename(temporary, path);
  };
}

/** CPU per turn in ms (user, system) of writing every group's records with `put`. */
async function measure(put: (key: string, value: unknown) => Promise<unknown>): Promise<{ user: number; system: number }> {
  const before = process.cpuUsage();
  await Promise.all(
    Array.from({ length: GROUPS }, async (_, group) => {
      for (let turn = 0; turn < TURNS; turn++) {
        await put(`run/env/item-${group}/turn-${turn}/generated`, generated(turn));
        await put(`run/env/item-${group}/turn-${turn}/sample-0/call-0`, call(turn));
      }
    }),
  );
  const { user, system } = process.cpuUsage(before);
  const turns = GROUPS * TURNS;
  return { user: user / 1000 / turns, system: system / 1000 / turns };
}

const ms = (x: { user: number; system: number }) =>
  `${(x.user + x.system).toFixed(3)} ms (user ${x.user.toFixed(3)}, system ${x.system.toFixed(3)})`;

console.log(`${GROUPS} groups at once, ${TURNS} turns each, two records a turn`);
for (let round = 1; round <= ROUNDS; round++) {
  const files = await mkdtemp(join(tmpdir(), 'clotho-bench-files-'));
  const journals = await mkdtemp(join(tmpdir(), 'clotho-bench-journals-'));
  try {
    const before = await measure(filePerRecord(files));
    const store = new FileSystemStore(journals);
    const after = await measure((key, value) => store.put(key, value));
    console.log(
      `round ${round}: cpu per turn: journal ${ms(after)}, file per record ${ms(before)}, ratio ${((after.user + after.system) / (before.user + before.system)).toFixed(2)}`,
    );
  } finally {
    await rm(files, { recursive: true, force: true });
    await rm(journals, { recursive: true, force: true });
  }
}
