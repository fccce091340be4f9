/**
 * Turn-level advantages for multi-turn episodes, in the manner of Atropos's process-supervision GRPO: each turn is
 * credited with the discounted return from that turn on (its own shaping reward, the later ones, and the final score
 * at the last turn), measured against the group's baseline.
 */

/**
 * Advantages `[sample][turn]`: `A[i][t] = (G[i][t] − mean_j G[j][0]) / std_j G[j][0]`, where
 * `G[i][t] = Σ_{k ≥ t} γ^(k−t) r[i][k]` and the last turn's reward includes the final score.
 *
 * The baseline is the group's mean episode return, as GRPO's is the mean score, so with no shaping rewards and γ = 1
 * every turn of a trajectory gets exactly GRPO's normalized score. A group whose returns are all equal is not scaled
 * (std taken as 1), so equal episodes get 0 rather than noise blown up by a tiny std.
 *
 * @param scores the final score of each trajectory
 * @param turnRewards each trajectory's per-turn rewards (from `step`); an empty list counts as one turn
 * @param gamma discount per turn, 0 … 1 @default 1
 */
export function turnAdvantages(scores: readonly number[], turnRewards: readonly (readonly number[])[], gamma = 1): number[][] {
  const returns = scores.map((score, i) => {
    const rewards = turnRewards[i]?.length ? [...turnRewards[i]!] : [0];
    rewards[rewards.length - 1]! += score;
    const g = new Array<number>(rewards.length);
    let running = 0;
    for (let t = rewards.length - 1; t >= 0; t--) g[t] = running = rewards[t]! + gamma * running;
    return g;
  });
  const starts = returns.map((g) => g[0]!);
  const mean = starts.reduce((a, b) => a + b, 0) / Math.max(1, starts.length);
  const std = Math.sqrt(starts.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(1, starts.length));
  const scale = std > 1e-6 ? std : 1;
  return returns.map((g) => g.map((x) => (x - mean) / scale));
}
