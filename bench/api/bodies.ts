/** What bench/api posts: groups as an Atropos environment sends them. */

/** One group's JSON body of `size` sequences of `tokens` tokens (tokens, masks, logprobs, scores), env 0. */
export function groupBody(tag: number, size: number, tokens: number): string {
  const rows = Array.from({ length: size }, (_, s) => Array.from({ length: tokens }, (_, t) => (tag * 7 + s * 13 + t) % 150_000));
  return JSON.stringify({
    tokens: rows,
    masks: rows.map((row) => row.map((id, t) => (t < 256 ? -100 : id))),
    inference_logprobs: rows.map((row) => row.map((_, t) => (t < 256 ? 1 : -((t % 50) + 1) / 10))),
    scores: rows.map((_, s) => (s % 2 === 0 ? 1 : -1)),
    env_id: 0,
  });
}

/** The `p`-th percentile of ascending `sorted` values (nearest rank). */
export const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
