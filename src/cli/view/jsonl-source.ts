import { open } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { fromScored } from './groups.js';
import { summariseGroup, type GroupAddress, type GroupSummary } from './model.js';
import type { LoadedRun, RunSource } from './source.js';
import { storeLabel } from '../../store/open-store.js';
import type { TrajectoryStore } from '../../store/trajectory-store.js';
import { withHarness } from './harness.js';
import { findGroupsInStore, readParsed } from './store-layout.js';

interface Line {
  offset: number;
  length: number;
}

/** Calls `each` with every non-empty line of a file and its byte span, reading it in chunks. */
async function forEachLine(path: string, each: (text: string, span: Line) => void): Promise<void> {
  const file = await open(path, 'r');
  try {
    const chunk = Buffer.alloc(1 << 20);
    let pending: Buffer[] = [];
    let start = 0;
    let offset = 0;
    const flush = (end: number, tail: Buffer) => {
      const bytes = Buffer.concat([...pending, tail]);
      pending = [];
      const text = bytes.toString('utf8').replace(/\r$/, '');
      if (text.trim()) each(text, { offset: start, length: end - start });
    };
    for (;;) {
      const { bytesRead } = await file.read(chunk, 0, chunk.length, offset);
      if (bytesRead === 0) break;
      let from = 0;
      for (let i = 0; i < bytesRead; i++) {
        if (chunk[i] !== 0x0a) continue;
        flush(offset + i, chunk.subarray(from, i));
        from = i + 1;
        start = offset + i + 1;
      }
      pending.push(Buffer.from(chunk.subarray(from, bytesRead)));
      offset += bytesRead;
    }
    flush(offset, Buffer.alloc(0));
  } finally {
    await file.close();
  }
}

async function readSpan(path: string, span: Line): Promise<string> {
  const file = await open(path, 'r');
  try {
    const bytes = Buffer.alloc(span.length);
    await file.read(bytes, 0, span.length, span.offset);
    return bytes.toString('utf8').replace(/\r$/, '');
  } finally {
    await file.close();
  }
}

/**
 * A JSONL of scored groups (`clotho process`, Atropos's `process`). Each line that the trajectory store also holds
 * (the same bytes as a `group.json`: `clotho process` writes both) is placed in its run, so it links to its workflow
 * and shows the parsed answers beside it.
 */
export function jsonlSource(path: string, options: { id: string; store: TrajectoryStore | null }): RunSource {
  const file = resolve(path);
  let lines: Line[] = [];
  let placed = new Map<number, GroupAddress>();
  return {
    id: options.id,
    kind: 'jsonl',
    origin: file,
    async load(): Promise<LoadedRun> {
      const texts: string[] = [];
      const spans: Line[] = [];
      await forEachLine(file, (text, span) => {
        texts.push(text);
        spans.push(span);
      });
      lines = spans;
      placed = options.store ? await findGroupsInStore(options.store, texts) : new Map();
      const notices: string[] = [];
      const groups: GroupSummary[] = [];
      for (const [i, text] of texts.entries()) {
        try {
          const address = placed.get(i) ?? null;
          const parsed = address && options.store ? await readParsed(options.store, address) : null;
          const where = address ? `${address.runId} · ${address.environment} item ${address.itemIndex}` : null;
          groups.push(
            summariseGroup(fromScored(JSON.parse(text), parsed), {
              id: `line-${i + 1}`,
              label: `line ${i + 1}${where ? ` · ${where}` : ''}`,
              address,
              status: 'scored',
            }),
          );
        } catch (error) {
          notices.push(`${basename(file)} line ${i + 1}: ${(error as Error).message}`);
        }
      }
      if (options.store && texts.length > 0 && placed.size === 0) {
        notices.push(`none of these groups is in the store ${storeLabel(options.store)} (--store): no Temporal links or parsed answers`);
      }
      return { groups, notices };
    },
    async group(id) {
      const line = /^line-(\d+)$/.exec(id);
      const index = line ? Number(line[1]) - 1 : -1;
      const span = lines[index];
      if (!span) return undefined;
      const address = placed.get(index);
      if (!address || !options.store) return fromScored(JSON.parse(await readSpan(file, span)), null);
      const group = fromScored(JSON.parse(await readSpan(file, span)), await readParsed(options.store, address));
      return withHarness(options.store, address, group);
    },
  };
}
