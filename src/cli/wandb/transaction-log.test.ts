import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { frameRecord, readTransactionLog, transactionLogHeader } from './transaction-log.js';

/** Appends records one after another, as a run writes its log. */
function logOf(records: Buffer[]): Buffer {
  let file = transactionLogHeader();
  for (const record of records) file = Buffer.concat([file, frameRecord(record, file.length)]);
  return file;
}

const bytes = (n: number, seed: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + seed) % 256));

describe('W&B transaction log framing', () => {
  it('starts with ":W&B", magic 0xBEE1 and version 0, and frames a small record as one FULL chunk', () => {
    const file = logOf([Buffer.from('abc')]);
    expect([...file.subarray(0, 7)]).toEqual([0x3a, 0x57, 0x26, 0x42, 0xe1, 0xbe, 0x00]);
    // checksum (CRC-32 of the type byte then the data), length 3, type FULL (1), data.
    expect(file.readUInt32LE(7)).toBe(crc32(Buffer.from([1, 0x61, 0x62, 0x63])));
    expect(file.readUInt16LE(11)).toBe(3);
    expect(file.readUInt8(13)).toBe(1);
    expect(file.subarray(14).toString()).toBe('abc');
    expect(readTransactionLog(file)).toEqual([Buffer.from('abc')]);
  });

  it('splits a record over blocks as FIRST, MIDDLE and LAST chunks that never cross a 32 KiB boundary', () => {
    const big = bytes(80_000, 7);
    const file = logOf([Buffer.from('x'), big, Buffer.from('y')]);
    const types: number[] = [];
    for (let offset = 7 + 7 + 1; offset < file.length;) {
      const length = file.readUInt16LE(offset + 4);
      types.push(file.readUInt8(offset + 6));
      expect(Math.floor(offset / 32768)).toBe(Math.floor((offset + 7 + length - 1) / 32768));
      offset += 7 + length;
    }
    expect(types).toEqual([2, 3, 4, 1]);
    expect(readTransactionLog(file)).toEqual([Buffer.from('x'), big, Buffer.from('y')]);
  });

  it('pads the end of a block with zeros when a chunk header no longer fits', () => {
    // Header 7 + chunk header 7 + 32750 bytes leaves 4 bytes in the first block: too few for a header.
    const first = bytes(32768 - 7 - 7 - 4, 1);
    const file = logOf([first, Buffer.from('next')]);
    expect([...file.subarray(32764, 32768)]).toEqual([0, 0, 0, 0]);
    expect(file.readUInt8(32768 + 6)).toBe(1);
    expect(readTransactionLog(file)).toEqual([first, Buffer.from('next')]);
  });

  it('refuses a file with a wrong header, a corrupt chunk or a torn end', () => {
    const file = logOf([Buffer.from('hello'), Buffer.from('world')]);
    expect(() => readTransactionLog(Buffer.from('not a log'))).toThrow(/bad header/);
    const corrupt = Buffer.from(file);
    corrupt.writeUInt8(corrupt.readUInt8(15) ^ 0xff, 15);
    expect(() => readTransactionLog(corrupt)).toThrow(/bad checksum/);
    expect(() => readTransactionLog(file.subarray(0, file.length - 2))).toThrow(/torn chunk/);
  });
});
