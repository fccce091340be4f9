/**
 * Seeded generator of multi-hop tool-use tasks over a fictional world: towns and provinces described in a small text
 * corpus, and shop ledgers or report codes preloaded in a key-value store. Pure: the same seed, index and hops give
 * the same task on every worker.
 */
import { seededRandom, type SeededRandom } from 'clotho';

/** Kinds of task; each needs about `hops` tool calls in sequence before the final arithmetic. */
export const TASK_KINDS = ['province_sum', 'founding_chain', 'ledger', 'codes'] as const;
export type TaskKind = (typeof TASK_KINDS)[number];

/** One document of the corpus that `search` and `lookup` read. */
export interface Passage {
  title: string;
  text: string;
}

/** A task: the question, its gold answer, the corpus it is asked over and the key-value store it starts with. */
export interface ToolUseTask {
  id: string;
  kind: TaskKind;
  hops: number;
  question: string;
  /** A number (compared within 1e-6) or a name (compared after normalization). */
  answer: number | string;
  documents: Passage[];
  kv: Record<string, number | string>;
}

export interface GenerateOptions {
  seed: number;
  /** How many tasks, from index `start` (default 0). */
  count: number;
  start?: number;
  /** Difficulty: towns to add up, founding links to follow, months or codes to read (1 … 8). @default 3 */
  hops?: number;
  /** Kinds to draw from, in turn (item i is `kinds[i % kinds.length]`). @default all */
  kinds?: readonly TaskKind[];
}

// Mixes seed and index so that neighbouring items do not get correlated streams.
function mix(seed: number, index: number): number {
  let h = Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(index + 0x632be5ab, 0xc2b2ae35);
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d);
  return (h ^ (h >>> 15)) >>> 0;
}

/** Draws of one task, from the SDK's seeded generator: inclusive integer ranges, as the generators below ask. */
class Random {
  private readonly random: SeededRandom;
  constructor(seed: number) {
    this.random = seededRandom(seed);
  }
  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + this.random.int(max - min + 1);
  }
  pick<T>(items: readonly T[]): T {
    return this.random.pick(items);
  }
  chance(p: number): boolean {
    return this.random.next() < p;
  }
  /** A shuffled copy. */
  shuffle<T>(items: readonly T[]): T[] {
    return this.random.shuffle(items);
  }
}

const ONSETS = ['br', 'k', 'v', 't', 'm', 'dr', 'sk', 'h', 'l', 'gr', 's', 'th', 'f', 'n', 'r', 'p', 'z', 'w', 'st', 'c'];
const VOWELS = ['a', 'e', 'i', 'o', 'u', 'ae', 'ei', 'ou', 'y'];
const CODAS = ['rn', 'sk', 'lt', 'nd', 'm', 'r', 'th', 'st', 'v', 'x', 'll', 'n'];
const ENDINGS = ['holt', 'mere', 'by', 'ford', 'wick', 'stead', 'gard', 'ton', 'vik', 'dal', 'moor', ''];
const GOODS = ['wool', 'amber', 'salt', 'barley', 'copper', 'cider', 'slate', 'linen', 'honey', 'timber'];
const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];

const capital = (s: string): string => s[0]!.toUpperCase() + s.slice(1);
/** 12400 → "12,400", as the corpus writes numbers (the calculator reads both). */
export const withCommas = (n: number): string => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
const listing = (names: string[]): string => (names.length === 1 ? names[0]! : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`);

function uniqueNames(count: number, make: () => string, taken: Set<string>): string[] {
  const names: string[] = [];
  while (names.length < count) {
    const name = make();
    if (!taken.has(name)) {
      taken.add(name);
      names.push(name);
    }
  }
  return names;
}

interface Town {
  name: string;
  province: string;
  population: number;
  elevation: number;
  founded: number;
  origin: string | null;
}

/** A world of four provinces and their towns; `sized` gives one province exactly that many towns. */
function world(rng: Random, hops: number, sized: boolean) {
  const taken = new Set<string>();
  const provinces = uniqueNames(4, () => capital(rng.pick(VOWELS) + rng.pick(CODAS) + rng.pick(VOWELS) + rng.pick(CODAS)), taken);
  const count = Math.max(12, hops + 4);
  const names = uniqueNames(count, () => capital(rng.pick(ONSETS) + rng.pick(VOWELS) + rng.pick(CODAS) + rng.pick(ENDINGS)), taken);
  // Every province gets a town; with `sized`, the first gets exactly `hops`, the others share the rest.
  const assignment = sized
    ? [...Array<number>(hops).fill(0), 1, 2, 3, ...Array.from({ length: count - hops - 3 }, () => rng.int(1, 3))]
    : [0, 1, 2, 3, ...Array.from({ length: count - 4 }, () => rng.int(0, 3))];
  const towns: Town[] = names.map((name, i) => ({
    name,
    province: provinces[assignment[i]!]!,
    population: rng.int(10, 980) * 100,
    elevation: rng.int(5, 2400),
    founded: rng.int(1100, 1899),
    origin: null,
  }));
  // Founding links point to a town earlier in a random order, so following them never loops.
  const order = rng.shuffle(towns);
  order.forEach((town, i) => {
    if (i > 0 && rng.chance(0.6)) town.origin = order[rng.int(0, i - 1)]!.name;
  });
  return { provinces, towns };
}

function documents(rng: Random, provinces: string[], towns: Town[]): Passage[] {
  const passages = provinces.map((p) => {
    const members = towns.filter((t) => t.province === p).map((t) => t.name);
    const count = members.length === 1 ? 'one town' : `${members.length} towns`;
    return {
      title: `Province of ${p}`,
      text: `The province of ${p} has ${count}: ${listing(members)}. Its capital is ${members[0]}. It is known for its ${rng.pick(GOODS)}.`,
    };
  });
  for (const t of towns) {
    const founding = t.origin ? `It was founded in ${t.founded} by settlers from ${t.origin}.` : `It was founded in ${t.founded}.`;
    passages.push({
      title: t.name,
      text:
        `${t.name} is a town in the province of ${t.province}. ${founding} ` +
        `It has a population of ${withCommas(t.population)} and lies at an elevation of ${withCommas(t.elevation)} metres.`,
    });
  }
  return rng.shuffle(passages);
}

type Made = Pick<ToolUseTask, 'question' | 'answer' | 'kv'>;

function provinceSum(rng: Random, towns: Town[], provinces: string[]): Made {
  const target = provinces[0]!;
  const factor = rng.int(2, 9);
  const total = towns.filter((t) => t.province === target).reduce((sum, t) => sum + t.population, 0);
  return {
    question: `What is the total population of all the towns in the province of ${target}, multiplied by ${factor}?`,
    answer: total * factor,
    kv: {},
  };
}

function foundingChain(rng: Random, hops: number, towns: Town[]): Made {
  // Rewire a path of hops links through distinct towns, ending at a town with no origin. Still no loops: chain towns
  // lead only along the chain, and the other towns' links point earlier in the world's order or into the chain.
  const chain = rng.shuffle(towns).slice(0, hops + 1);
  chain.forEach((town, i) => {
    town.origin = chain[i + 1]?.name ?? null;
  });
  const steps =
    hops === 1 ? 'one step' : `${hops} steps (to the town its settlers came from, then to the town those settlers came from, and so on)`;
  return {
    question: `The town of ${chain[0]!.name} was founded by settlers from another town. Follow this line of founding back ${steps}. In which province is the town you reach?`,
    answer: chain.at(-1)!.province,
    kv: {},
  };
}

function ledger(rng: Random, hops: number): Made {
  const shops = uniqueNames(3, () => rng.pick(ONSETS) + rng.pick(VOWELS) + rng.pick(CODAS), new Set());
  const kv: Record<string, number> = {};
  for (const shop of shops) for (const month of MONTHS) kv[`sales/${shop}/${month.slice(0, 3)}`] = rng.int(100, 9999);
  const shop = rng.pick(shops);
  const first = rng.int(0, 12 - hops);
  const months = MONTHS.slice(first, first + hops);
  const rent = rng.int(1, 40) * 50;
  const total = months.reduce((sum, m) => sum + kv[`sales/${shop}/${m.slice(0, 3)}`]!, 0);
  const span = hops === 1 ? `in ${capital(months[0]!)}` : `from ${capital(months[0]!)} to ${capital(months.at(-1)!)}`;
  return {
    question:
      `The key-value store holds the monthly sales of several shops under keys of the form sales/<shop>/<month> (months written jan, feb, …). ` +
      `What were the total sales of the shop ${shop} ${span}, minus its rent of ${rent}?`,
    answer: total - rent,
    kv,
  };
}

function codes(rng: Random, hops: number, towns: Town[]): Made {
  const filed = rng.shuffle(towns).slice(0, hops + 3);
  const labels = uniqueNames(filed.length, () => `R-${rng.int(10, 99)}`, new Set());
  const kv = Object.fromEntries(filed.map((t, i) => [`code/${labels[i]}`, t.name]));
  const asked = labels.slice(0, hops);
  const total = filed.slice(0, hops).reduce((sum, t) => sum + t.elevation, 0);
  return {
    question:
      `The key-value store maps report codes to town names, under keys of the form code/<code>. ` +
      `What is the sum of the elevations, in metres, of the towns filed under the code${hops === 1 ? '' : 's'} ${listing(asked)}?`,
    answer: total,
    kv,
  };
}

/** Task `index` of the data set named by `seed` (its kind is `kinds[index % kinds.length]`). */
export function generateTask({
  seed,
  index,
  hops = 3,
  kinds = TASK_KINDS,
}: {
  seed: number;
  index: number;
  hops?: number;
  kinds?: readonly TaskKind[];
}): ToolUseTask {
  if (!Number.isInteger(hops) || hops < 1 || hops > 8) throw new Error(`hops must be an integer from 1 to 8, got ${hops}`);
  if (kinds.length === 0) throw new Error('kinds must not be empty');
  const kind = kinds[((index % kinds.length) + kinds.length) % kinds.length]!;
  const rng = new Random(mix(seed, index));
  const { provinces, towns } = world(rng, hops, kind === 'province_sum');
  const made =
    kind === 'province_sum'
      ? provinceSum(rng, towns, provinces)
      : kind === 'founding_chain'
        ? foundingChain(rng, hops, towns)
        : kind === 'ledger'
          ? ledger(rng, hops)
          : codes(rng, hops, towns);
  // Documents last: the chain task rewires founding links before the corpus is written.
  return { id: `${seed}-${index}`, kind, hops, ...made, documents: documents(rng, provinces, towns) };
}

/** `count` tasks from index `start`: a data set of any size and difficulty, the same for the same options. */
export function generateTasks({ seed, count, start = 0, hops, kinds }: GenerateOptions): ToolUseTask[] {
  return Array.from({ length: count }, (_, i) => generateTask({ seed, index: start + i, hops, kinds }));
}
