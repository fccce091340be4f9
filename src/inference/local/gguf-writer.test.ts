import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readGgufFileInfo } from 'node-llama-cpp';
import { afterAll, describe, expect, it } from 'vitest';
import { GGUF_ALIGNMENT, writeGguf, type GgufTensor } from './gguf-writer.js';
import { randomChunks, toHalf } from './random-weights.js';
import { TokenBytes } from './token-text.js';

const dir = await mkdtemp(join(tmpdir(), 'clotho-gguf-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

const bytesTensor = (name: string, dims: number[], type: 'F32' | 'F16', data: Uint8Array): GgufTensor => ({
  name,
  dims,
  type,
  chunks: () => [data],
});

describe('writeGguf', () => {
  it('writes metadata and tensors that an independent GGUF reader reads back', async () => {
    const path = join(dir, 'm.gguf');
    const f32 = new Float32Array([1, -2, 3.5]);
    const f16 = Uint16Array.from([1, 2, 3, 4, 5].map(toHalf));
    await writeGguf(
      path,
      [
        ['general.architecture', { type: 'string', value: 'qwen2' }],
        ['a.u32', { type: 'u32', value: 7 }],
        ['a.f32', { type: 'f32', value: 0.5 }],
        ['a.bool', { type: 'bool', value: true }],
        ['a.strings', { type: 'string[]', value: ['x', 'ünï'] }],
        ['a.ints', { type: 'i32[]', value: Int32Array.from([3, -1]) }],
      ],
      [bytesTensor('t.f32', [3], 'F32', new Uint8Array(f32.buffer)), bytesTensor('t.f16', [5, 1], 'F16', new Uint8Array(f16.buffer))],
    );
    const info = await readGgufFileInfo(path, { readTensorInfo: true, logWarnings: false });
    expect(info.version).toBe(3);
    const md = info.metadata as unknown as Record<string, Record<string, unknown>>;
    expect(md.a).toEqual({ u32: 7, f32: 0.5, bool: true, strings: ['x', 'ünï'], ints: [3, -1] });
    const tensors = info.fullTensorInfo!;
    expect(tensors.map((t) => [t.name, t.dimensions.map(Number), t.ggmlType, Number(t.offset)])).toEqual([
      ['t.f32', [3], 0, 0],
      ['t.f16', [5, 1], 1, GGUF_ALIGNMENT],
    ]);
    const file = await readFile(path);
    const dataStart = Number(tensors[0]!.fileOffset);
    expect(dataStart % GGUF_ALIGNMENT).toBe(0);
    expect(new Float32Array(file.buffer.slice(file.byteOffset + dataStart, file.byteOffset + dataStart + 12))).toEqual(f32);
  });

  it('refuses a tensor whose data does not match its dims', async () => {
    const bad = bytesTensor('t', [4], 'F32', new Uint8Array(12));
    await expect(writeGguf(join(dir, 'bad.gguf'), [], [bad])).rejects.toThrow(/expected 16/);
  });
});

describe('random weights', () => {
  it('converts floats to IEEE half precision', () => {
    expect([1, -2, 0.5, 65504, 0, 1e6].map(toHalf)).toEqual([0x3c00, 0xc000, 0x3800, 0x7bff, 0, 0x7c00]);
    expect(toHalf(2 ** -24)).toBe(1); // smallest subnormal
  });

  it('is deterministic per seed and has the requested spread', () => {
    const draw = (seed: number) => new Float32Array([...randomChunks(10_000, 'F32', { kind: 'uniform', std: 0.1 }, seed)][0]!.buffer);
    const a = draw(1);
    expect(draw(1)).toEqual(a);
    expect(draw(2)).not.toEqual(a);
    const std = Math.sqrt(a.reduce((s, x) => s + x * x, 0) / a.length);
    expect(std).toBeGreaterThan(0.095);
    expect(std).toBeLessThan(0.105);
  });
});

describe('TokenBytes', () => {
  it('decodes byte-level tokens to their bytes and literal tokens to UTF-8', () => {
    const tb = new TokenBytes(['Ġhi', 'ä½', '<|im_end|>'], [1, 1, 3]);
    expect([...tb.bytes(0)!]).toEqual([0x20, 0x68, 0x69]);
    expect([...tb.bytes(1)!]).toEqual([0xe4, 0xbd]);
    expect(new TextDecoder().decode(tb.bytes(2))).toBe('<|im_end|>');
    expect(tb.bytes(3)).toBeUndefined();
  });
});
