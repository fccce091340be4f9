import { crc32 } from 'node:zlib';

/**
 * W&B's run transaction log (`run-<id>.wandb`): protobuf records framed as a LevelDB log (32 KiB blocks, each
 * chunk a 7-byte header of CRC-32, length and FULL/FIRST/MIDDLE/LAST type), after a 7-byte file header of ":W&B",
 * magic 0xBEE1 and version 0. This is what the Python SDK writes in every run directory and `wandb sync` uploads;
 * framing as in wandb/sdk/internal/datastore.py.
 */
const HEADER_LEN = 7;
const BLOCK_LEN = 32768;
const FULL = 1;
const FIRST = 2;
const MIDDLE = 3;
const LAST = 4;
const IDENT = ':W&B';
const MAGIC = 0xbee1;
const VERSION = 0;

/** The checksum of a chunk: CRC-32 of its type byte, continued over its data (zlib's crc32, as the Python SDK). */
const checksum = (type: number, data: Uint8Array) => crc32(data, crc32(Uint8Array.of(type)));

/** The 7 bytes every transaction log starts with. */
export function transactionLogHeader(): Buffer {
  const header = Buffer.alloc(HEADER_LEN);
  header.write(IDENT, 0, 'latin1');
  header.writeUInt16LE(MAGIC, 4);
  header.writeUInt8(VERSION, 6);
  return header;
}

function chunk(type: number, data: Uint8Array): Buffer {
  const head = Buffer.alloc(HEADER_LEN);
  head.writeUInt32LE(checksum(type, data), 0);
  head.writeUInt16LE(data.length, 4);
  head.writeUInt8(type, 6);
  return Buffer.concat([head, data]);
}

/**
 * Frames one record to append at byte `offset` of the file: zero padding when the block has no room for a chunk
 * header, then one FULL chunk or FIRST, MIDDLE…, LAST chunks that never cross a block boundary.
 */
export function frameRecord(record: Uint8Array, offset: number): Buffer {
  const parts: Buffer[] = [];
  let left = BLOCK_LEN - (offset % BLOCK_LEN);
  if (left < HEADER_LEN) {
    parts.push(Buffer.alloc(left));
    left = BLOCK_LEN;
  }
  if (record.length + HEADER_LEN <= left) return Buffer.concat([...parts, chunk(FULL, record)]);
  let used = left - HEADER_LEN;
  parts.push(chunk(FIRST, record.subarray(0, used)));
  while (record.length - used > BLOCK_LEN - HEADER_LEN) {
    parts.push(chunk(MIDDLE, record.subarray(used, used + BLOCK_LEN - HEADER_LEN)));
    used += BLOCK_LEN - HEADER_LEN;
  }
  parts.push(chunk(LAST, record.subarray(used)));
  return Buffer.concat(parts);
}

/** Reads a whole transaction log back into its records, checking the header, every checksum and the padding. */
export function readTransactionLog(file: Buffer): Buffer[] {
  if (file.length < HEADER_LEN || !file.subarray(0, HEADER_LEN).equals(transactionLogHeader())) {
    throw new Error('not a W&B transaction log (bad header)');
  }
  const records: Buffer[] = [];
  let offset = HEADER_LEN;
  let pending: Buffer[] | null = null;
  while (offset < file.length) {
    const left = BLOCK_LEN - (offset % BLOCK_LEN);
    if (left < HEADER_LEN) {
      if (file.subarray(offset, offset + left).some((b) => b !== 0)) throw new Error(`bad block padding at byte ${offset}`);
      offset += left;
      continue;
    }
    if (offset + HEADER_LEN > file.length) throw new Error(`torn chunk header at byte ${offset}`);
    const length = file.readUInt16LE(offset + 4);
    const type = file.readUInt8(offset + 6);
    const data = file.subarray(offset + HEADER_LEN, offset + HEADER_LEN + length);
    if (data.length !== length) throw new Error(`torn chunk at byte ${offset}`);
    if (file.readUInt32LE(offset) !== checksum(type, data)) throw new Error(`bad checksum at byte ${offset}`);
    offset += HEADER_LEN + length;
    if (type === FULL && pending === null) records.push(data);
    else if (type === FIRST && pending === null) pending = [data];
    else if (type === MIDDLE && pending !== null) pending.push(data);
    else if (type === LAST && pending !== null) {
      records.push(Buffer.concat([...pending, data]));
      pending = null;
    } else throw new Error(`unexpected chunk type ${type} at byte ${offset - HEADER_LEN - length}`);
  }
  if (pending !== null) throw new Error('the log ends inside a record');
  return records;
}
