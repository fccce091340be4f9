import { describe, expect, it } from 'vitest';
import { decodePng, encodePng } from './png.js';

/** A 3×2 image whose every pixel differs, alpha included. */
const pixels = () => ({ width: 3, height: 2, data: Uint8Array.from({ length: 3 * 2 * 4 }, (_, i) => (i * 37 + 11) % 256) });

describe('PNG', () => {
  it('round-trips RGBA pixels exactly', () => {
    const png = encodePng(pixels());
    expect([...png.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    expect(decodePng(png)).toEqual(pixels());
  });

  it('gives the same bytes for the same pixels, so generated data sets are reproducible', () => {
    expect(encodePng(pixels()).equals(encodePng(pixels()))).toBe(true);
    const other = pixels();
    other.data[5] = other.data[5]! ^ 1;
    expect(encodePng(other).equals(encodePng(pixels()))).toBe(false);
  });

  it('rejects pixels of the wrong size and bytes that are not a PNG', () => {
    expect(() => encodePng({ width: 2, height: 2, data: new Uint8Array(15) })).toThrow('2×2 RGBA needs 16 bytes, got 15');
    expect(() => decodePng(Buffer.from('not a png'))).toThrow();
  });
});
