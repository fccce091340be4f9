import { open } from 'node:fs/promises';

/** Metadata value types of GGUF v3 (`gguf_metadata_value_type`). */
const ValueType = { UINT8: 0, INT32: 5, UINT32: 4, FLOAT32: 6, BOOL: 7, STRING: 8, ARRAY: 9 } as const;

/** A typed metadata value; the type tag is explicit because JS numbers do not say whether they are u32 or f32. */
export type GgufValue =
  | { type: 'u32'; value: number }
  | { type: 'i32'; value: number }
  | { type: 'f32'; value: number }
  | { type: 'bool'; value: boolean }
  | { type: 'string'; value: string }
  | { type: 'string[]'; value: readonly string[] }
  | { type: 'i32[]'; value: ArrayLike<number> };

/** Tensor element types this writer emits (`ggml_type`). */
export type GgufTensorType = 'F32' | 'F16';
const ggmlType: Record<GgufTensorType, number> = { F32: 0, F16: 1 };
const elementSize: Record<GgufTensorType, number> = { F32: 4, F16: 2 };

/** One tensor: `dims` in GGML order (fastest-varying first); `fill` writes its elements in that order. */
export interface GgufTensor {
  name: string;
  dims: readonly number[];
  type: GgufTensorType;
  /** Yields the tensor's bytes in chunks, so a 1 GB model is never held in memory at once. */
  chunks(): Iterable<Uint8Array>;
}

/** @default 32, the alignment llama.cpp assumes when `general.alignment` is absent. */
export const GGUF_ALIGNMENT = 32;

/** Growable little-endian byte buffer for the header. */
class ByteSink {
  private buf = Buffer.alloc(1 << 20);
  length = 0;
  private reserve(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const next = Buffer.alloc(Math.max(this.buf.length * 2, this.length + n));
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }
  /** Reserves `size` bytes, writes them at the end and moves the end past them. */
  #put(size: number, write: (at: number) => void): void {
    this.reserve(size);
    write(this.length);
    this.length += size;
  }
  u32(v: number): void {
    this.#put(4, (at) => this.buf.writeUInt32LE(v, at));
  }
  i32(v: number): void {
    this.#put(4, (at) => this.buf.writeInt32LE(v, at));
  }
  f32(v: number): void {
    this.#put(4, (at) => this.buf.writeFloatLE(v, at));
  }
  u64(v: number): void {
    this.#put(8, (at) => this.buf.writeBigUInt64LE(BigInt(v), at));
  }
  u8(v: number): void {
    this.#put(1, (at) => this.buf.writeUInt8(v, at));
  }
  str(s: string): void {
    const bytes = Buffer.from(s, 'utf8');
    this.u64(bytes.length);
    this.#put(bytes.length, (at) => bytes.copy(this.buf, at));
  }
  pad(alignment: number): void {
    const padded = alignUp(this.length, alignment);
    this.#put(padded - this.length, (at) => this.buf.fill(0, at, padded));
  }
  bytes(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

function alignUp(n: number, alignment: number): number {
  return Math.ceil(n / alignment) * alignment;
}

function writeValue(sink: ByteSink, v: GgufValue): void {
  switch (v.type) {
    case 'u32':
      sink.u32(ValueType.UINT32);
      sink.u32(v.value);
      return;
    case 'i32':
      sink.u32(ValueType.INT32);
      sink.i32(v.value);
      return;
    case 'f32':
      sink.u32(ValueType.FLOAT32);
      sink.f32(v.value);
      return;
    case 'bool':
      sink.u32(ValueType.BOOL);
      sink.u8(v.value ? 1 : 0);
      return;
    case 'string':
      sink.u32(ValueType.STRING);
      sink.str(v.value);
      return;
    case 'string[]':
      sink.u32(ValueType.ARRAY);
      sink.u32(ValueType.STRING);
      sink.u64(v.value.length);
      for (const s of v.value) sink.str(s);
      return;
    case 'i32[]':
      sink.u32(ValueType.ARRAY);
      sink.u32(ValueType.INT32);
      sink.u64(v.value.length);
      for (let i = 0; i < v.value.length; i++) sink.i32(v.value[i]!);
      return;
  }
}

/** Byte size of a tensor's data. */
export function tensorByteSize(t: Pick<GgufTensor, 'dims' | 'type'>): number {
  return t.dims.reduce((a, b) => a * b, 1) * elementSize[t.type];
}

/**
 * Writes a GGUF v3 file: header, metadata, tensor infos, then each tensor's data at an offset
 * aligned to {@link GGUF_ALIGNMENT}. Fails if a tensor yields a different number of bytes than its dims say.
 */
export async function writeGguf(
  path: string,
  metadata: ReadonlyArray<readonly [string, GgufValue]>,
  tensors: readonly GgufTensor[],
): Promise<void> {
  const header = new ByteSink();
  header.u32(0x46554747); // "GGUF" read as a little-endian u32
  header.u32(3);
  header.u64(tensors.length);
  header.u64(metadata.length);
  for (const [key, value] of metadata) {
    header.str(key);
    writeValue(header, value);
  }
  let offset = 0;
  for (const t of tensors) {
    header.str(t.name);
    header.u32(t.dims.length);
    for (const d of t.dims) header.u64(d);
    header.u32(ggmlType[t.type]);
    header.u64(offset);
    offset = alignUp(offset + tensorByteSize(t), GGUF_ALIGNMENT);
  }
  header.pad(GGUF_ALIGNMENT);

  const file = await open(path, 'w');
  try {
    await file.write(header.bytes());
    const zeros = Buffer.alloc(GGUF_ALIGNMENT);
    for (const t of tensors) {
      const expected = tensorByteSize(t);
      let written = 0;
      for (const chunk of t.chunks()) {
        await file.write(chunk);
        written += chunk.length;
      }
      if (written !== expected) throw new Error(`tensor ${t.name}: wrote ${written} bytes, expected ${expected}`);
      const padding = alignUp(written, GGUF_ALIGNMENT) - written;
      if (padding > 0) await file.write(zeros.subarray(0, padding));
    }
  } finally {
    await file.close();
  }
}
