/**
 * Atropos's batch packing rules (ATROPOS-API.md §1.4–§1.5), over group references only: the packer
 * sees a group's size (sequences) and environment, never its tokens. Pure and deterministic, so it
 * runs inside the batcher workflow; no function here touches the batcher state.
 */

/** What the packer needs of a queued group. */
export interface Packable {
  /** Sequences in the group (Atropos's `len(tokens)`). */
  readonly size: number;
  readonly envId: number | null;
}

/** What the packer needs of a registered environment (fields of Atropos's env record). */
export interface PackEnv {
  readonly registered_id: number;
  readonly connected: boolean;
  readonly min_batch_allocation: number | null;
}

/** Batches formed from a queue, each a list of groups in Atropos's order, and what is left in queue order. */
export interface PackResult<T> {
  batches: T[][];
  rest: T[];
}

/**
 * Indices of buffered groups whose sizes add up to exactly `target`, ascending, or `[]` when none do.
 * Greedy first-in-first-out first; when that misses, an exact subset sum whose backtracking takes the
 * latest usable group first, as Atropos's `find_groups_summing_to_target` does.
 */
export function findGroupsSummingToTarget(sizes: readonly number[], target: number): number[] {
  const greedy: number[] = [];
  let sum = 0;
  for (const [i, size] of sizes.entries()) {
    if (sum + size > target) continue;
    greedy.push(i);
    sum += size;
    if (sum === target) return greedy;
  }
  if (sizes.length === 0 || target < 0) return [];
  // reachable[i][j]: some subset of the first i groups sums to j.
  const reachable: boolean[][] = [Array.from({ length: target + 1 }, (_, j) => j === 0)];
  for (const [i, size] of sizes.entries()) {
    const before = reachable[i] as boolean[];
    reachable.push(before.map((ok, j) => ok || (j >= size && (before[j - size] as boolean))));
  }
  if (!reachable[sizes.length]?.[target]) return [];
  const picked: number[] = [];
  let left = target;
  for (let i = sizes.length; i > 0; i--) {
    const size = sizes[i - 1] as number;
    if (left >= size && reachable[i - 1]?.[left - size]) {
      picked.push(i - 1);
      left -= size;
    }
  }
  return picked.reverse();
}

function maxSize(items: readonly Packable[]): number {
  let max = 0;
  for (const item of items) if (item.size > max) max = item.size;
  return max;
}

/**
 * Indices of `items` in "pack" completion order, lazily: groups of one size `s` become usable only
 * `maxGroupSize / s` at a time, once together they fill one pack of the largest size.
 */
function* packOrder(items: readonly Packable[], maxGroupSize: number): Generator<number> {
  const open = new Map<number, number[]>();
  for (const [i, { size }] of items.entries()) {
    const bucket = open.get(size) ?? [];
    bucket.push(i);
    if (bucket.length * size === maxGroupSize) {
      yield* bucket;
      open.delete(size);
    } else {
      open.set(size, bucket);
    }
  }
}

/** `items` without the given positions; the part after the last one is copied whole. */
function without<T>(items: readonly T[], indices: readonly number[]): T[] {
  const taken = new Set(indices);
  const end = indices.reduce((last, i) => Math.max(last, i + 1), 0);
  return items
    .slice(0, end)
    .filter((_, i) => !taken.has(i))
    .concat(items.slice(end));
}

/**
 * One batch by Atropos's `grab_exact_from_heterogeneous_queue`: walk packs in completion order until
 * exactly `batchSize` sequences; an overshoot or a shortfall forms nothing. Returns batch indices.
 * Scans the queue only as far as the batch reaches.
 */
export function grabExact(items: readonly Packable[], batchSize: number): number[] | null {
  const max = maxSize(items);
  if (batchSize <= 0 || max === 0) return null;
  const batch: number[] = [];
  let sum = 0;
  for (const i of packOrder(items, max)) {
    batch.push(i);
    sum += (items[i] as Packable).size;
    if (sum === batchSize) return batch;
    if (sum > batchSize) return null;
  }
  return null;
}

/**
 * Every batch that repeated `grabExact` calls would form, in the same order and with the same groups,
 * in O(n) per distinct largest group size instead of O(n) per batch. While `batchSize` is a multiple of
 * the largest size, batches are whole packs and removing them leaves the other packs as they were, so
 * one walk cuts them all; the walk restarts when the last group of the largest size is taken.
 */
export function formExactBatches<T extends Packable>(queue: readonly T[], batchSize: number): PackResult<T> {
  const batches: T[][] = [];
  let rest = queue.slice();
  for (;;) {
    const max = maxSize(rest);
    if (batchSize <= 0 || max === 0) break;
    if (batchSize % max !== 0) {
      // Batches may cut packs, which regroups the rest: only the literal rule is exact here.
      const one = grabExact(rest, batchSize);
      if (!one) break;
      batches.push(one.map((i) => rest[i] as T));
      rest = without(rest, one);
      continue;
    }
    const order = [...packOrder(rest, max)];
    let largestLeft = rest.filter((item) => item.size === max).length;
    const taken: number[] = [];
    let next = 0;
    while (largestLeft > 0) {
      let sum = 0;
      let end = next;
      while (end < order.length && sum < batchSize) sum += (rest[order[end++] as number] as T).size;
      if (sum !== batchSize) break;
      const indices = order.slice(next, end);
      for (const i of indices) taken.push(i);
      batches.push(indices.map((i) => rest[i] as T));
      largestLeft -= indices.filter((i) => (rest[i] as T).size === max).length;
      next = end;
    }
    if (taken.length === 0) break;
    rest = without(rest, taken);
    if (largestLeft > 0) break;
  }
  return { batches, rest };
}

/** Groups of one environment and one size, in queue order; packing only ever takes from the front. */
interface Bucket {
  size: number;
  /** Queue positions. */
  items: number[];
  head: number;
}

/** A bucket being walked during one grab: its usable items are `items[next…end)`. */
interface Stream {
  bucket: Bucket;
  chunk: number;
  next: number;
  end: number;
}

/**
 * Repeated grabs of Atropos's `grab_batch_with_minimum_allocations` over a queue that does not change
 * in between. Connected envs with a minimum share get it first (pass 1, each env's groups in pack
 * completion order), then free slots are filled in queue order (pass 2); only groups that complete a
 * per-environment pack of the largest group size count, so groups without an env are never used.
 * A grab blocks (null) while an env with a minimum has nothing packable.
 *
 * Why it is fast: a pass never takes a group while an earlier one of the same env and size stays, so
 * every grab takes a prefix of each (env, size) bucket, packs stay aligned to bucket fronts, and a
 * grab costs the groups it takes times the number of buckets instead of the queue's length.
 */
function minimumAllocationPacker(queue: readonly Packable[], batchSize: number, envs: readonly PackEnv[]) {
  const withMin = envs.filter((env) => env.connected && env.min_batch_allocation !== null);
  const sizeCounts = new Map<number, number>();
  const buckets = new Map<number, Map<number, Bucket>>();
  for (const [i, { size, envId }] of queue.entries()) {
    sizeCounts.set(size, (sizeCounts.get(size) ?? 0) + 1);
    if (envId === null) continue;
    const ofEnv = buckets.get(envId) ?? new Map<number, Bucket>();
    buckets.set(envId, ofEnv);
    const bucket = ofEnv.get(size) ?? { size, items: [], head: 0 };
    ofEnv.set(size, bucket);
    bucket.items.push(i);
  }

  /** The part of a bucket that completes packs of `max` sequences, walked from `from`. */
  const stream = (bucket: Bucket, max: number, from: number): Stream => {
    if (max % bucket.size !== 0) return { bucket, chunk: 1, next: from, end: from };
    const chunk = max / bucket.size;
    const usable = Math.floor((bucket.items.length - bucket.head) / chunk) * chunk;
    return { bucket, chunk, next: from, end: bucket.head + usable };
  };
  /** The stream whose next group (or, in pass 1, next pack) comes first, among those that still fit. */
  const first = (streams: Stream[], room: number, byPack: boolean): Stream | undefined => {
    let best: Stream | undefined;
    let bestAt = Infinity;
    for (const s of streams) {
      if (s.next >= s.end || s.bucket.size > room) continue;
      const at = s.bucket.items[byPack ? s.next + s.chunk - 1 : s.next] as number;
      if (at < bestAt) [best, bestAt] = [s, at];
    }
    return best;
  };

  function grab(): number[] | null {
    let max = 0;
    for (const [size, count] of sizeCounts) if (count > 0 && size > max) max = size;
    if (max === 0 || batchSize <= 0) return null;

    const wanted: { streams: Stream[]; min: number }[] = [];
    let wantedTotal = 0;
    for (const env of withMin) {
      const min = Math.trunc(batchSize * (env.min_batch_allocation as number));
      if (min <= 0) continue;
      const streams = [...(buckets.get(env.registered_id)?.values() ?? [])]
        .map((b) => stream(b, max, b.head))
        .filter((s) => s.end > s.next);
      if (streams.length === 0) return null;
      wanted.push({ streams, min });
      wantedTotal += min;
    }
    if (wantedTotal > batchSize) {
      const scale = batchSize / wantedTotal;
      for (const w of wanted) {
        w.min = Math.max(Math.min(...w.streams.map((s) => s.bucket.size)), Math.trunc(w.min * scale));
      }
    }

    const batch: number[] = [];
    const used = new Map<Bucket, number>();
    let total = 0;
    const take = (s: Stream) => {
      batch.push(s.bucket.items[s.next++] as number);
      total += s.bucket.size;
      used.set(s.bucket, s.next - s.bucket.head);
    };
    for (const { streams, min } of wanted) {
      let mine = 0;
      for (let s = first(streams, batchSize - total, true); s && mine < min; s = first(streams, batchSize - total, true)) {
        const packEnd = s.next + s.chunk;
        while (s.next < packEnd && mine < min && total + s.bucket.size <= batchSize) {
          mine += s.bucket.size;
          take(s);
        }
        // A group that did not fit: no later group of that size fits either.
        if (s.next < packEnd && mine < min) s.end = s.next;
      }
    }
    const all = [...buckets.values()].flatMap((ofEnv) => [...ofEnv.values()]);
    const rest = all.map((b) => stream(b, max, b.head + (used.get(b) ?? 0)));
    for (let s = first(rest, batchSize - total, false); s && total < batchSize; s = first(rest, batchSize - total, false)) {
      take(s);
    }
    if (total !== batchSize) return null;
    for (const [bucket, count] of used) {
      bucket.head += count;
      sizeCounts.set(bucket.size, (sizeCounts.get(bucket.size) as number) - count);
    }
    return batch;
  }
  return grab;
}

/**
 * One batch by Atropos's `grab_batch_with_minimum_allocations`, as batch indices into `items`, or
 * null; without a connected minimum it is `grabExact`. Group sizes must be positive.
 */
export function grabWithMinimumAllocations(items: readonly Packable[], batchSize: number, envs: readonly PackEnv[]): number[] | null {
  if (!envs.some((env) => env.connected && env.min_batch_allocation !== null)) return grabExact(items, batchSize);
  return minimumAllocationPacker(items, batchSize, envs)();
}

/**
 * Every batch a `GET /batch` forms at once (ATROPOS-API.md §1.5), exactly as Atropos's repeated grabs
 * would: the minimum-allocation rule while a connected environment declares a minimum, else the
 * exact heterogeneous rule (Atropos's fallback). Group sizes must be positive.
 */
export function formBatches<T extends Packable>(queue: readonly T[], batchSize: number, envs: readonly PackEnv[]): PackResult<T> {
  if (!envs.some((env) => env.connected && env.min_batch_allocation !== null)) {
    return formExactBatches(queue, batchSize);
  }
  const grab = minimumAllocationPacker(queue, batchSize, envs);
  const batches: T[][] = [];
  const taken: number[] = [];
  for (let one = grab(); one; one = grab()) {
    for (const i of one) taken.push(i);
    batches.push(one.map((i) => queue[i] as T));
  }
  return { batches, rest: without(queue, taken) };
}
