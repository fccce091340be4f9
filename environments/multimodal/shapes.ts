/**
 * Seeded scenes of flat-coloured shapes and questions about them (counting, colours, positions) whose answers are
 * known by construction. Pure: the same seed and index give the same scene, question and PNG bytes on every worker.
 */
import { encodePng, seededRandom, type RgbaImage, type SeededRandom } from 'clotho';

export const SHAPE_KINDS = ['circle', 'square', 'triangle'] as const;
export type ShapeKind = (typeof SHAPE_KINDS)[number];

/** Colours far apart in RGB, drawn without anti-aliasing so that every pixel of a shape is exactly its colour. */
export const COLOURS = { red: [220, 40, 40], green: [30, 160, 60], blue: [40, 80, 220], yellow: [235, 195, 20] } as const;
export type Colour = keyof typeof COLOURS;
const COLOUR_NAMES = Object.keys(COLOURS) as Colour[];

export const TASKS = ['count', 'color', 'position'] as const;
export type ShapeTask = (typeof TASKS)[number];

/** The scene is a 3×3 grid; each shape sits inside its own cell, so shapes never touch. */
export const GRID = 3;

export interface Shape {
  kind: ShapeKind;
  colour: Colour;
  /** Grid cell: column and row, 0 … GRID-1 from the top left. */
  column: number;
  row: number;
}

/** A generated question: the scene, the question and its answer, and the image as PNG bytes. */
export interface ShapeQuestion {
  id: string;
  task: ShapeTask;
  question: string;
  answer: string;
  shapes: Shape[];
  png: Buffer;
}

export interface ShapeOptions {
  seed: number;
  index: number;
  /** Tasks taken in turn: item i asks a `tasks[i % tasks.length]` question. */
  tasks: readonly ShapeTask[];
  /** Width and height in pixels (a multiple of 3 keeps the cells equal). */
  imageSize: number;
  /** At most this many shapes (1 … 9). */
  maxShapes: number;
}

/** The SDK's seeded generator over a seed mixed with the index: item i is independent of every other item. */
function rng(seed: number, index: number): SeededRandom {
  return seededRandom(Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(index + 1, 0xc2b2ae35));
}

/** Shapes with distinct (colour, kind) pairs in distinct cells, so that "the red circle" names one shape. */
function scene(random: SeededRandom, count: number): Shape[] {
  const cells = random.shuffle(Array.from({ length: GRID * GRID }, (_, i) => i)).slice(0, count);
  const looks = random.shuffle(COLOUR_NAMES.flatMap((colour) => SHAPE_KINDS.map((kind) => ({ colour, kind })))).slice(0, count);
  return cells.map((cell, i) => ({ ...looks[i]!, column: cell % GRID, row: Math.floor(cell / GRID) }));
}

const plural = (kind: ShapeKind) => `${kind}s`;
const name = (s: Shape) => `${s.colour} ${s.kind}`;

/** A question of the task about the scene, or null when the scene cannot ask it unambiguously (then another is drawn). */
function ask(random: SeededRandom, task: ShapeTask, shapes: Shape[]): { question: string; answer: string } | null {
  if (task === 'count') {
    const variant = random.pick(['all', 'colour', 'kind'] as const);
    if (variant === 'all') return { question: 'How many shapes are in the image?', answer: String(shapes.length) };
    if (variant === 'colour') {
      const colour = random.pick(COLOUR_NAMES);
      return { question: `How many ${colour} shapes are in the image?`, answer: String(shapes.filter((s) => s.colour === colour).length) };
    }
    const kind = random.pick(SHAPE_KINDS);
    return { question: `How many ${plural(kind)} are in the image?`, answer: String(shapes.filter((s) => s.kind === kind).length) };
  }
  if (task === 'color') {
    const unique = SHAPE_KINDS.filter((kind) => shapes.filter((s) => s.kind === kind).length === 1);
    if (unique.length === 0) return null;
    const kind = random.pick(unique);
    return { question: `What colour is the ${kind}?`, answer: shapes.find((s) => s.kind === kind)!.colour };
  }
  const horizontal = random.next() < 0.5;
  const pairs = shapes.flatMap((a) =>
    shapes.filter((b) => (horizontal ? a.column !== b.column : a.row !== b.row)).map((b) => [a, b] as const),
  );
  if (pairs.length === 0) return null;
  const [a, b] = random.pick(pairs);
  return horizontal
    ? {
        question: `Is the ${name(a)} to the left or to the right of the ${name(b)}? Answer left or right.`,
        answer: a.column < b.column ? 'left' : 'right',
      }
    : { question: `Is the ${name(a)} above or below the ${name(b)}? Answer above or below.`, answer: a.row < b.row ? 'above' : 'below' };
}

/** The `index`-th question of a seeded set. */
export function shapeQuestion(options: ShapeOptions): ShapeQuestion {
  const random = rng(options.seed, options.index);
  const task = options.tasks[options.index % options.tasks.length]!;
  // Draws until the scene can ask the task's question: most scenes can, so this ends after a draw or two.
  for (;;) {
    const count = 1 + Math.floor(random.next() * options.maxShapes);
    const shapes = scene(random, Math.max(count, task === 'position' ? 2 : 1));
    const asked = ask(random, task, shapes);
    if (asked) {
      const png = encodePng(drawScene(shapes, options.imageSize, random.next));
      return { id: `shapes-${options.seed}-${options.index}`, task, ...asked, shapes, png };
    }
  }
}

/** Draws the shapes on white, each filling 55–80% of its cell with a little jitter inside it. */
export function drawScene(shapes: readonly Shape[], size: number, random: () => number = () => 0.5): RgbaImage {
  const data = new Uint8Array(size * size * 4).fill(255);
  const cell = size / GRID;
  for (const shape of shapes) {
    const extent = Math.floor(cell * (0.55 + 0.25 * random()));
    const slack = Math.floor(cell) - extent - 2;
    const left = Math.floor(shape.column * cell) + 1 + Math.floor(random() * Math.max(0, slack));
    const top = Math.floor(shape.row * cell) + 1 + Math.floor(random() * Math.max(0, slack));
    const [r, g, b] = COLOURS[shape.colour];
    for (let y = top; y < top + extent; y++) {
      for (let x = left; x < left + extent; x++) {
        if (!inside(shape.kind, (x + 0.5 - left) / extent, (y + 0.5 - top) / extent)) continue;
        data.set([r, g, b, 255], (y * size + x) * 4);
      }
    }
  }
  return { width: size, height: size, data };
}

/** Whether a point of the unit box (u right, v down) is inside the shape drawn in that box. */
function inside(kind: ShapeKind, u: number, v: number): boolean {
  if (kind === 'square') return true;
  if (kind === 'circle') return (u - 0.5) ** 2 + (v - 0.5) ** 2 <= 0.25;
  // An upright triangle: apex at the top middle, base along the bottom.
  return Math.abs(u - 0.5) <= v / 2;
}
