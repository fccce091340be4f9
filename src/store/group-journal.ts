/**
 * A rollout group's records in one append-only file (issue 25): a turn's state record and its tool calls' records are
 * appended to `<run>/<env>/item-<i>.journal` instead of each being a file of its own. A file per record (a temporary
 * one renamed into place, in a directory per turn) cost 0.37–0.88 ms of CPU per turn of a tool-using episode on this
 * machine, most of it in the kernel; appending costs 0.05–0.12 ms (`npm run bench:store`).
 *
 * A frame is `\n<key>\t<bytes>\t<JSON>\n`, or `\n<key>\t-\t\n` for a deleted key; the newest frame of a key wins. JSON
 * text holds no raw line feed, so a frame is a line. A frame is appended with one write on a file opened for appending,
 * so writers in several processes never interleave; one cut short by a kill starts and ends a line of its own (the
 * next frame begins with a line feed) whose length does not match, and is skipped as never written.
 */

const ITEM = /^item-\d+$/;

/** Where a group's journal is, beside the directory of its older per-key files: `<group>.journal`. */
export const JOURNAL_SUFFIX = '.journal';

/**
 * The rollout group a key belongs to when it lies inside one (`<run>/<env>/item-<i>/<part>`): the key up to its item.
 * The environment is one segment and the run id may have several, so the item is the first `item-<n>` after two.
 * Null for the group's own key and for keys of no group (the API's posted groups, the batcher's state).
 */
export function groupOfRecord(key: string): string | null {
  const parts = key.split('/');
  const item = parts.findIndex((p, i) => i >= 2 && ITEM.test(p));
  return item >= 0 && item < parts.length - 1 ? parts.slice(0, item + 1).join('/') : null;
}

const LF = 0x0a;
const TAB = 0x09;
const DELETED = '-';

/** The frame that records `json` (JSON text, or its UTF-8 bytes) under `key`. */
export function journalFrame(key: string, json: string | Uint8Array): Buffer {
  const value = typeof json === 'string' ? Buffer.from(json) : Buffer.from(json.buffer, json.byteOffset, json.byteLength);
  // Bytes kept as posted may be pretty-printed: outside strings a line feed is whitespace, so a space means the same.
  const flat = value.includes(LF) ? Buffer.from(value).map((b) => (b === LF || b === 0x0d ? 0x20 : b)) : value;
  return Buffer.concat([Buffer.from(`\n${key}\t${flat.length}\t`), flat, Buffer.from('\n')]);
}

/** The frame that records `key` as deleted. */
export const deletedFrame = (key: string): Buffer => Buffer.from(`\n${key}\t${DELETED}\t\n`);

/**
 * The newest value of each key in a journal's bytes (null for a deleted key), as JSON bytes, put in `entries` over
 * what they held; and how many bytes that read, up to the last whole line. A last line without its line feed (a write
 * in progress in another process) is left for the next read, and frames cut short are skipped.
 */
export function readJournal(
  bytes: Buffer,
  entries = new Map<string, Buffer | null>(),
): { entries: Map<string, Buffer | null>; read: number } {
  let start = 0;
  while (start < bytes.length) {
    const end = bytes.indexOf(LF, start);
    if (end < 0) break;
    if (end > start) {
      const keyEnd = bytes.indexOf(TAB, start);
      const lengthEnd = keyEnd >= 0 && keyEnd < end ? bytes.indexOf(TAB, keyEnd + 1) : -1;
      if (lengthEnd >= 0 && lengthEnd < end) {
        const key = bytes.toString('latin1', start, keyEnd);
        const length = bytes.toString('latin1', keyEnd + 1, lengthEnd);
        if (length === DELETED && end === lengthEnd + 1) entries.set(key, null);
        else if (/^\d+$/.test(length) && Number(length) === end - lengthEnd - 1) entries.set(key, bytes.subarray(lengthEnd + 1, end));
      }
    }
    start = end + 1;
  }
  return { entries, read: start };
}
