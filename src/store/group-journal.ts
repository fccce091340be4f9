import { crc32 } from 'node:zlib';

/**
 * A rollout group's records in one append-only file (issue 25): a turn's state record and its tool calls' records are
 * appended to `<run>/<env>/item-<i>.journal` instead of each being a file of its own. A file per record (a temporary
 * one renamed into place, in a directory per turn) cost 0.37–0.88 ms of CPU per turn of a tool-using episode on this
 * machine, most of it in the kernel; appending costs 0.05–0.12 ms (`npm run bench:store`).
 *
 * A frame is `\n<key>\t<bytes>:<crc>\t<JSON>\n`, or `\n<key>\t-:<crc>\t\n` for a deleted key, where `<crc>` is the CRC-32 of
 * the key, a tab and the JSON, in 8 hex digits (frames written before checksums have `<bytes>` and `-` alone, and are
 * read as they are); the newest frame of a key wins. JSON text holds no raw line feed, so a frame is a line. A frame is
 * appended with one write on a file opened for appending, so writers in several processes of one host never
 * interleave on a local file system. Over a network file system they can (appends from several hosts are not atomic
 * there): a directory store is for local disk only, s3:// across hosts (`network-fs.ts` warns at open).
 *
 * A kill in the middle of an append leaves a prefix of its frame on a line of its own (the next frame begins with a line
 * feed): a line that is the start of a frame, shorter than its header says, is skipped quietly as never written, at the
 * end of the journal or anywhere in it, since the group goes on after a restart. Anything else is damage no kill makes
 * (a line that is no frame's start, a frame longer than its header says, a checksum that does not match): it is
 * reported with its offset ({@link JournalDamagedError}), never skipped, since the lost frame may have been a key's
 * newest value.
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
/** A frame header's length field: a length or `-`, and the checksum (absent in frames from before checksums). */
const LENGTH_FIELD = /^(\d+|-)(?::([0-9a-f]{8}))?$/;
/** What a length field cut short by a kill can look like. */
const LENGTH_FIELD_START = /^(\d*|-)(:[0-9a-f]{0,8})?$/;
/** Bytes of a key, or of its start: `storeKey`'s characters. */
const KEY_CHARS = /^[A-Za-z0-9._/-]*$/;

/** The checksum of a frame: CRC-32 of its key, a tab and its value, as 8 hex digits. */
function checksum(key: string, value: Uint8Array): string {
  return crc32(value, crc32(`${key}\t`))
    .toString(16)
    .padStart(8, '0');
}

/** The frame that records `json` (JSON text, or its UTF-8 bytes) under `key`. */
export function journalFrame(key: string, json: string | Uint8Array): Buffer {
  const value = typeof json === 'string' ? Buffer.from(json) : Buffer.from(json.buffer, json.byteOffset, json.byteLength);
  // Bytes kept as posted may be pretty-printed: outside strings a line feed is whitespace, so a space means the same.
  const flat = value.includes(LF) ? Buffer.from(value).map((b) => (b === LF || b === 0x0d ? 0x20 : b)) : value;
  return Buffer.concat([Buffer.from(`\n${key}\t${flat.length}:${checksum(key, flat)}\t`), flat, Buffer.from('\n')]);
}

/** The frame that records `key` as deleted. */
export const deletedFrame = (key: string): Buffer => Buffer.from(`\n${key}\t${DELETED}:${checksum(key, EMPTY)}\t\n`);

const EMPTY = new Uint8Array(0);

/** A line of a journal that is no frame a writer or a kill could have left, at `offset` in the bytes read. */
export interface JournalDamage {
  offset: number;
  reason: string;
}

/** A journal with damage no kill makes: its group's records cannot be trusted. */
export class JournalDamagedError extends Error {
  constructor(
    readonly journal: string,
    readonly damage: JournalDamage,
  ) {
    super(
      `trajectory store journal ${journal}: damaged frame at byte ${damage.offset} (${damage.reason}); the group's records ` +
        'cannot be trusted, so none are read. Was it written from several hosts? A directory store is for local disk only; ' +
        's3:// across hosts.',
    );
    this.name = 'JournalDamagedError';
  }
}

/**
 * The newest value of each key in a journal's bytes (null for a deleted key), as JSON bytes, put in `entries` over
 * what they held; how many bytes that read, up to the last whole line; and the damaged lines, by their offsets in
 * `bytes`. A last line without its line feed (a write in progress in another process) is left for the next read, and
 * frames a kill cut short are skipped.
 */
export function readJournal(
  bytes: Buffer,
  entries = new Map<string, Buffer | null>(),
): { entries: Map<string, Buffer | null>; read: number; damaged: JournalDamage[] } {
  const damaged: JournalDamage[] = [];
  let start = 0;
  while (start < bytes.length) {
    const end = bytes.indexOf(LF, start);
    if (end < 0) break;
    if (end > start) {
      const frame = readFrame(bytes, start, end);
      if (typeof frame === 'string') damaged.push({ offset: start, reason: frame });
      else if (frame) entries.set(frame.key, frame.value);
    }
    start = end + 1;
  }
  return { entries, read: start, damaged };
}

/** The frame on the line `[start, end)`: its key and value, null when a kill cut it short, or why it is damaged. */
function readFrame(bytes: Buffer, start: number, end: number): { key: string; value: Buffer | null } | null | string {
  const keyEnd = bytes.indexOf(TAB, start);
  if (keyEnd < 0 || keyEnd >= end) return KEY_CHARS.test(bytes.toString('latin1', start, end)) ? null : 'not a frame';
  const key = bytes.toString('latin1', start, keyEnd);
  if (key === '' || !KEY_CHARS.test(key)) return 'not a frame';
  const lengthEnd = bytes.indexOf(TAB, keyEnd + 1);
  if (lengthEnd < 0 || lengthEnd >= end) return LENGTH_FIELD_START.test(bytes.toString('latin1', keyEnd + 1, end)) ? null : 'not a frame';
  const field = LENGTH_FIELD.exec(bytes.toString('latin1', keyEnd + 1, lengthEnd));
  if (!field) return 'not a frame';
  const value = bytes.subarray(lengthEnd + 1, end);
  const [, length, crc] = field as unknown as [string, string, string | undefined];
  if (length === DELETED) {
    if (value.length > 0) return 'a deletion with a value';
  } else if (value.length !== Number(length)) {
    return value.length < Number(length) ? null : `${value.length} bytes where its header says ${length}`;
  }
  if (crc !== undefined && crc !== checksum(key, value)) return `checksum ${checksum(key, value)} where its header says ${crc}`;
  return { key, value: length === DELETED ? null : value };
}
