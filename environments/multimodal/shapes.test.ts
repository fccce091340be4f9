import { describe, expect, it } from 'vitest';
import { decodePng, type RgbaImage } from 'clotho';
import { COLOURS, shapeQuestion, TASKS, type Colour, type ShapeKind, type ShapeOptions } from './shapes.js';

interface Blob {
  colour: Colour;
  kind: ShapeKind;
  x: number;
  y: number;
}

/** The shapes an image shows, read from its pixels alone: connected regions of one colour, classified by how full their box is. */
function blobsOf(image: RgbaImage): Blob[] {
  const { width, height, data } = image;
  const colourAt = (i: number): Colour | 'white' => {
    const rgb = [data[i * 4], data[i * 4 + 1], data[i * 4 + 2]];
    if (rgb.every((v) => v === 255)) return 'white';
    const found = (Object.keys(COLOURS) as Colour[]).find((c) => COLOURS[c].every((v, k) => v === rgb[k]));
    if (!found) throw new Error(`pixel ${i} has a colour no shape has: ${rgb.join(',')}`);
    return found;
  };
  const seen = new Uint8Array(width * height);
  const blobs: Blob[] = [];
  for (let start = 0; start < width * height; start++) {
    const colour = colourAt(start);
    if (seen[start] || colour === 'white') continue;
    const stack = [start];
    seen[start] = 1;
    let count = 0;
    let minX = width;
    let maxX = 0;
    let minY = height;
    let maxY = 0;
    while (stack.length > 0) {
      const p = stack.pop()!;
      const x = p % width;
      const y = Math.floor(p / width);
      count++;
      minX = Math.min(minX, x);
      maxX = Math.max(maxX, x);
      minY = Math.min(minY, y);
      maxY = Math.max(maxY, y);
      for (const [nx, ny] of [
        [x + 1, y],
        [x - 1, y],
        [x, y + 1],
        [x, y - 1],
      ] as const) {
        const q = ny * width + nx;
        if (nx < 0 || ny < 0 || nx >= width || ny >= height || seen[q] || colourAt(q) !== colour) continue;
        seen[q] = 1;
        stack.push(q);
      }
    }
    const fill = count / ((maxX - minX + 1) * (maxY - minY + 1));
    const kind: ShapeKind = fill > 0.97 ? 'square' : fill > 0.68 ? 'circle' : 'triangle';
    blobs.push({ colour, kind, x: (minX + maxX) / 2, y: (minY + maxY) / 2 });
  }
  return blobs;
}

/** The answer to a generated question, worked out from the blobs the image shows. */
function answerFromPixels(question: string, blobs: Blob[]): string {
  let m = /^How many (?:(\w+) )?shapes are in the image\?$/.exec(question);
  if (m) return String(blobs.filter((b) => !m![1] || b.colour === m![1]).length);
  m = /^How many (\w+)s are in the image\?$/.exec(question);
  if (m) return String(blobs.filter((b) => b.kind === m![1]).length);
  m = /^What colour is the (\w+)\?$/.exec(question);
  if (m) {
    const matching = blobs.filter((b) => b.kind === m![1]);
    expect(matching, question).toHaveLength(1);
    return matching[0]!.colour;
  }
  m = /^Is the (\w+) (\w+) (to the left or to the right of|above or below) the (\w+) (\w+)\?/.exec(question);
  if (!m) throw new Error(`unexpected question: ${question}`);
  const find = (colour: string, kind: string) => {
    const found = blobs.filter((b) => b.colour === colour && b.kind === kind);
    expect(found, `${colour} ${kind} in "${question}"`).toHaveLength(1);
    return found[0]!;
  };
  const [a, b] = [find(m[1]!, m[2]!), find(m[4]!, m[5]!)];
  return m[3] === 'above or below' ? (a.y < b.y ? 'above' : 'below') : a.x < b.x ? 'left' : 'right';
}

const options = (index: number, overrides: Partial<ShapeOptions> = {}): ShapeOptions => ({
  seed: 0,
  index,
  tasks: TASKS,
  imageSize: 96,
  maxShapes: 5,
  ...overrides,
});

describe('generated shape questions', () => {
  it('answer what the pixels show: counts, colours and positions read back from the decoded PNG', () => {
    for (const [seed, imageSize, maxShapes] of [
      [0, 96, 5],
      [7, 60, 9],
      [123, 120, 3],
    ] as const) {
      for (let index = 0; index < 90; index++) {
        const q = shapeQuestion(options(index, { seed, imageSize, maxShapes }));
        const image = decodePng(q.png);
        expect([image.width, image.height]).toEqual([imageSize, imageSize]);
        const blobs = blobsOf(image);
        expect(blobs).toHaveLength(q.shapes.length);
        expect(blobs.length).toBeLessThanOrEqual(maxShapes);
        expect(answerFromPixels(q.question, blobs), `seed ${seed} item ${index}: ${q.question}`).toBe(q.answer);
      }
    }
  });

  it('takes the tasks in turn and asks each kind of question', () => {
    const asked = Array.from({ length: 60 }, (_, i) => shapeQuestion(options(i)));
    expect(asked.map((q) => q.task).slice(0, 6)).toEqual(['count', 'color', 'position', 'count', 'color', 'position']);
    for (const answer of ['left', 'right', 'above', 'below', 'red', 'blue']) expect(asked.map((q) => q.answer)).toContain(answer);
    expect(shapeQuestion(options(4, { tasks: ['position'] })).task).toBe('position');
  });

  it('is reproducible from its seed, byte for byte, and differs between seeds', () => {
    const a = shapeQuestion(options(11));
    const b = shapeQuestion(options(11));
    expect(b.png.equals(a.png)).toBe(true);
    expect(b).toEqual(a);
    expect(a.id).toBe('shapes-0-11');
    const other = Array.from({ length: 5 }, (_, i) => shapeQuestion(options(i, { seed: 1 })).png);
    const same = Array.from({ length: 5 }, (_, i) => shapeQuestion(options(i)).png);
    expect(other.some((png, i) => !png.equals(same[i]!))).toBe(true);
  });
});
