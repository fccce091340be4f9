import type { GgufTensorType } from './gguf-writer.js';

/** FNV-1a of a string mixed with a seed: gives each tensor its own independent, reproducible stream. */
export function streamSeed(seed: number, name: string): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/** mulberry32: tiny, fast and deterministic across platforms (only 32-bit integer ops). */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** IEEE half from a float (round half up; enough for weights that are random anyway). */
export function toHalf(value: number): number {
  f32[0] = value;
  const x = u32[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = ((x >>> 23) & 0xff) - 127 + 15;
  const mantissa = x & 0x7fffff;
  if (exp >= 31) return sign | 0x7c00;
  if (exp <= 0) {
    if (exp < -10) return sign;
    const m = (mantissa | 0x800000) >> (1 - exp);
    return sign | ((m + 0x1000) >> 13);
  }
  // `+` (not `|`) lets a mantissa rounding carry into the exponent.
  return sign | ((exp << 10) + ((mantissa + 0x1000) >> 13));
}

const CHUNK_ELEMENTS = 1 << 20;

/** How a tensor's elements are drawn. */
export type Init = { kind: 'uniform'; std: number } | { kind: 'constant'; value: number };

/**
 * Yields `count` elements in `type` as byte chunks. Uniform draws have the requested standard
 * deviation (bound = std·√3), from a stream seeded by `seed`.
 */
export function* randomChunks(count: number, type: GgufTensorType, init: Init, seed: number): Generator<Uint8Array> {
  const next = mulberry32(seed);
  const bound = init.kind === 'uniform' ? init.std * Math.sqrt(3) : 0;
  const draw = init.kind === 'uniform' ? () => (next() * 2 - 1) * bound : () => init.value;
  for (let start = 0; start < count; start += CHUNK_ELEMENTS) {
    const n = Math.min(CHUNK_ELEMENTS, count - start);
    if (type === 'F32') {
      const out = new Float32Array(n);
      for (let i = 0; i < n; i++) out[i] = draw();
      yield new Uint8Array(out.buffer);
    } else {
      const out = new Uint16Array(n);
      for (let i = 0; i < n; i++) out[i] = toHalf(draw());
      yield new Uint8Array(out.buffer);
    }
  }
}
