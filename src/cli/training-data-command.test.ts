import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTokenizer, type Tokenizer } from '../inference/tokenizer.js';
import { ScoredDataGroupSchema } from '../schema/scored-data.js';
import { FileSystemStore, storeKey } from '../store/trajectory-store.js';
import { main } from './main.js';

let dir: string;
let qwen: Tokenizer;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clotho-training-data-'));
  qwen = await loadTokenizer('qwen3');
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function run(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (l) => out.push(l), err: (l) => err.push(l) });
  return { code, out: out.join('\n'), err: err.join('\n') };
}
const linesOf = async (path: string) => (await readFile(path, 'utf8')).split('\n').filter(Boolean);

/** A group as `clotho process` writes it: every sequence's tokens and messages, the question shared. */
function group(question: string, answers: string[], scores: number[]) {
  const tokens = answers.map((a) => qwen.encode(`${question} A: ${a}`, { addSpecialTokens: false }));
  return ScoredDataGroupSchema.parse({
    tokens,
    masks: tokens.map((t) => t.map(() => -100)),
    scores,
    messages: answers.map((a) => [
      { role: 'user', content: question },
      { role: 'assistant', content: a },
    ]),
  });
}
const chat = (question: string, answer: string) => [
  { role: 'user', content: question },
  { role: 'assistant', content: answer },
];
const jsonl = (groups: unknown[]) => groups.map((g) => `${JSON.stringify(g)}\n`).join('');

describe('clotho sft-gen / dpo-gen from a finished run (offline)', () => {
  it('writes SFT records from a JSONL file: messages by default, every group unless capped', async () => {
    const from = join(dir, 'run.jsonl');
    await writeFile(
      from,
      jsonl([group('2+2?', ['4', '5', '3'], [1, -1, 0.5]), group('3+3?', ['6', '6'], [0, 0]), group('1+1?', ['2'], [1])]),
    );
    const path = join(dir, 'sft.jsonl');
    const result = await run('sft-gen', path, '--from', from);
    expect(result).toMatchObject({ code: 0, err: '' });
    expect(result.out).toContain(`wrote 3 sequences from 3 groups to ${path}`);
    expect(await linesOf(path)).toEqual([
      JSON.stringify({ messages: chat('2+2?', '4'), score: 1 }),
      JSON.stringify({ messages: chat('2+2?', '3'), score: 0.5 }),
      JSON.stringify({ messages: chat('1+1?', '2'), score: 1 }),
    ]);

    // --num-seqs-to-save stops at exactly n; --append-to-previous adds to the file; text with a tokenizer.
    const capped = await run(
      'sft-gen',
      path,
      '--from',
      from,
      '--num-seqs-to-save',
      '1',
      '--append-to-previous',
      '--tokenizer',
      'qwen3',
      '--allow-negative-scores',
    );
    expect(capped.code).toBe(0);
    expect((await linesOf(path)).slice(3)).toEqual(['{"prefix":"2+2? A: ","completion":"4","score":1}']);

    // An existing file is not overwritten.
    const refused = await run('sft-gen', path, '--from', from);
    expect(refused.code).toBe(1);
    expect(refused.err).toContain(`${path} already exists: pass --append-to-previous`);
  });

  it('writes DPO pairs from the trajectory store by run id, items in index order', async () => {
    const root = join(dir, 'store');
    const store = new FileSystemStore(root);
    await store.put(storeKey('run-a', 'math', 'item-10', 'group'), group('10+10?', ['20', '19'], [1, 0]));
    await store.put(storeKey('run-a', 'math', 'item-2', 'group'), group('2+2?', ['4', '5', '6'], [1, 0.8, -1]));
    // A group still running has records but no group: it is skipped.
    await store.put(storeKey('run-a', 'math', 'item-3', 'turn-0', 'prompt'), { key: 'x' });
    const path = join(dir, 'dpo.jsonl');
    const result = await run('dpo-gen', path, '--run', 'run-a', '--store', root, '--tokenizer', 'qwen3', '--save-n-pairs-per-group', '1');
    expect(result).toMatchObject({ code: 0, err: '' });
    expect(result.out).toContain(`wrote 2 pairs from 2 groups to ${path}`);
    // Item 2: chosen 4 (1), rejected from the lowest one only (-1); item 10: 20 (1) over 19 (0).
    expect(await linesOf(path)).toEqual([
      '{"prefix":"2+2? A: ","pos":"4","score":1,"neg":"6"}',
      '{"prefix":"10+10? A: ","pos":"20","score":1,"neg":"19"}',
    ]);

    const missing = await run('dpo-gen', join(dir, 'none.jsonl'), '--run', 'run-b', '--store', root);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain(`--run run-b: no such run in the trajectory store ${root}`);
  });

  it('asks for a tokenizer when a group has no messages', async () => {
    const from = join(dir, 'bare.jsonl');
    await writeFile(from, jsonl([{ ...group('2+2?', ['4', '5'], [1, 0]), messages: null }]));
    const result = await run('sft-gen', join(dir, 'bare-out.jsonl'), '--from', from);
    expect(result.code).toBe(1);
    expect(result.err).toContain('a group has no messages: pass --tokenizer');
  });

  it('names a bad line of the JSONL', async () => {
    const from = join(dir, 'bad.jsonl');
    await writeFile(from, `${JSON.stringify(group('2+2?', ['4'], [1]))}\n{"tokens": "x"}\n`);
    const result = await run('sft-gen', join(dir, 'bad-out.jsonl'), '--from', from);
    expect(result.code).toBe(1);
    expect(result.err).toMatch(new RegExp(`${from.replaceAll('/', '\\/')}:2: not a scored group: .*tokens`));
  });

  it('rejects flags that do not fit together, all at once', async () => {
    const result = await run('sft-gen', '--from', 'a.jsonl', '--run', 'r', '--api-url', 'http://x:1', '--save-top-n-per-group', 'many');
    expect(result.code).toBe(2);
    expect(result.err.split('\n')).toEqual([
      expect.stringMatching(/^clotho sft-gen: --save-top-n-per-group: .*got "many"$/),
      'clotho sft-gen: missing <filepath>, the JSONL file to write',
      'clotho sft-gen: --from and --run both name a source: give one',
      'clotho sft-gen: --api-url only applies when reading from the API, not with --from',
    ]);
    expect((await run('dpo-gen', 'x.jsonl', '--tasks-per-step', '2')).err).toContain("Unknown option '--tasks-per-step'");
  });

  it('checks a source without writing on --dry-run, and lists its flags on --help', async () => {
    const from = join(dir, 'run.jsonl');
    const path = join(dir, 'dry.jsonl');
    const dry = await run('dpo-gen', path, '--from', from, '--tokenizer', 'qwen3', '--dry-run');
    expect(dry.code).toBe(0);
    expect(dry.out).toContain(`dry run: ready to write text records to ${path}`);
    await expect(readFile(path)).rejects.toThrow(/ENOENT/);
    const help = await run('sft-gen', '--help');
    for (const flag of [
      '--save-top-n-per-group',
      '--tasks-per-step',
      '--minimum-score-diff-max-min',
      '--num-seqs-to-save',
      '--save-messages',
      '--append-to-previous',
      '--tokenizer',
      '--api-url',
      '--from',
      '--run',
    ]) {
      expect(help.out).toContain(flag);
    }
    expect((await run('dpo-gen', '--help')).out).toContain('--save-n-pairs-per-group');
  });
});
