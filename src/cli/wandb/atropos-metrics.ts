import { MASKED, type MessagesOnlyGroup, type ScoredDataGroup } from '../../schema/scored-data.js';
import type { WandbMetrics, WandbTable } from './local-run.js';

/** A rollout group as it finished, with what W&B's metrics need of it. */
export interface FinishedGroup {
  itemIndex: number;
  status: 'scored' | 'dropped' | 'failed';
  /** Each trajectory's score (none for a failed group). */
  scores: number[];
  /** The environment's metrics, averaged over the group's trajectories. */
  metrics?: Record<string, number>;
  /** Seconds from the group's start to its end. */
  seconds?: number;
  /** The group as delivered (scored groups): a scored group, or a messages-only one (`--env.messages_only`). */
  group?:
    | Pick<ScoredDataGroup, 'masks' | 'scores' | 'messages'>
    | Pick<MessagesOnlyGroup, 'messages_only' | 'completion_tokens' | 'scores' | 'messages'>;
}

/** Atropos's logging settings (BaseEnvConfig), and what Clotho knows that Atropos asked the trainer for. */
export interface AtroposLogSettings {
  groupSize: number;
  /** The trainer's max_token_len (the environment's max_token_length without one): the `_p95` threshold. */
  maxTokenLength: number;
  numRolloutsToKeep: number;
  /** -1: every trajectory of a group. */
  numRolloutsPerGroupForLogging: number;
  /** Serve mode: the name the trainer registered the environment under, prefixed to every key but `server/`. */
  prefix?: string | null;
}

/** Readings of the process's generation steps (`server/server_0_*`) and its token count, at flush time. */
export interface ServerReadings {
  seconds: number[];
  attempts: number[];
  completionTokens: number;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const std = (xs: number[]) => {
  const m = mean(xs);
  return Math.sqrt(mean(xs.map((x) => (x - m) ** 2)));
};
/** numpy's default percentile: linear between the two nearest ranks. */
function percentile(xs: number[], p: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const rank = (p / 100) * (sorted.length - 1);
  const low = Math.floor(rank);
  const high = Math.min(low + 1, sorted.length - 1);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (rank - low);
}
/** Atropos's get_std_min_max_avg: `<name>_mean`, `_std`, `_max`, `_min`. */
function stats(into: WandbMetrics, name: string, xs: number[]): void {
  Object.assign(into, {
    [`${name}_mean`]: mean(xs),
    [`${name}_std`]: std(xs),
    [`${name}_max`]: Math.max(...xs),
    [`${name}_min`]: Math.min(...xs),
  });
}

/** A trajectory's conversation as text for the rollouts table (Atropos decodes the tokens; Clotho has the messages). */
function conversationText(messages: ScoredDataGroup['messages'], i: number): string {
  const conversation = messages?.[i] ?? [];
  return conversation.map((m) => `${m.role}: ${typeof m.content === 'string' ? m.content : JSON.stringify(m.content)}`).join('\n\n');
}

/**
 * Atropos's environment metrics for W&B, gathered from finished groups and emptied at each `flush`, as
 * atroposlib's BaseEnv.wandb_log does: completion lengths, the rollouts table, task durations, the percent
 * correct (as Atropos's math environments compute it) and the inference server's request times.
 */
export class AtroposMetrics {
  private correct: number[] = [];
  private lengths: number[] = [];
  private rollouts: [string, number][][] = [];
  private durations = { all: [] as number[], succeeded: [] as number[], failed: [] as number[] };
  private envMetrics = new Map<string, number[]>();
  private groupsSince = 0;
  private last: { at: number; tokens: number } | undefined;

  constructor(private readonly settings: AtroposLogSettings) {}

  add(finished: FinishedGroup): void {
    this.groupsSince++;
    // Atropos's gsm8k counts max(score, 0) per trajectory: 1 for a right answer, 0 for a wrong one.
    for (const score of finished.scores) this.correct.push(Math.max(score, 0));
    for (const [name, value] of Object.entries(finished.metrics ?? {})) {
      this.envMetrics.set(name, [...(this.envMetrics.get(name) ?? []), value]);
    }
    if (finished.seconds !== undefined) {
      this.durations.all.push(finished.seconds);
      this.durations[finished.group ? 'succeeded' : 'failed'].push(finished.seconds);
    }
    const group = finished.group;
    if (!group) return;
    // A messages-only group has no masks: its lengths are the completion tokens the server counted, if it did.
    if ('messages_only' in group) this.lengths.push(...(group.completion_tokens ?? []));
    else for (const mask of group.masks) this.lengths.push(mask.filter((t) => t !== MASKED).length);
    const keep = this.settings.numRolloutsPerGroupForLogging === -1 ? this.settings.groupSize : this.settings.numRolloutsPerGroupForLogging;
    const count = Math.min(keep, group.scores.length);
    this.rollouts.push(Array.from({ length: count }, (_, i) => [conversationText(group.messages, i), group.scores[i]!]));
    if (this.rollouts.length > this.settings.numRolloutsToKeep) this.rollouts.shift();
  }

  /** The metrics since the last flush, under Atropos's names (prefixed in serve mode), and empties the buffers. */
  flush(now: number, server?: ServerReadings): WandbMetrics {
    const out: WandbMetrics = {};
    if (this.correct.length > 0) out['train/percent_correct'] = mean(this.correct);
    for (const [name, values] of this.envMetrics) out[`train/${name}`] = mean(values);
    if (this.lengths.length > 0) {
      const threshold = 0.95 * this.settings.maxTokenLength;
      Object.assign(out, {
        'train/completion_lengths': mean(this.lengths),
        'train/completion_lengths_std': std(this.lengths),
        'train/completion_lengths_max': Math.max(...this.lengths),
        'train/completion_lengths_min': Math.min(...this.lengths),
        'train/completion_lengths_p95': mean(this.lengths.map((n) => (n > threshold ? 1 : 0))),
      });
    }
    if (this.rollouts.length > 0) {
      const table: WandbTable = { kind: 'table', columns: ['text', 'score'], data: this.rollouts.flat() };
      out['train/rollouts'] = table;
    }
    // Atropos reports each duration list only when it holds more than one task.
    const { all, succeeded, failed } = this.durations;
    if (all.length > 1) stats(out, 'train_perf/task_duration', all);
    if (succeeded.length > 1) {
      stats(out, 'train_perf/succeeded_task_duration', succeeded);
      out['train/items_sent_to_api'] = succeeded.length;
    }
    if (failed.length > 1) {
      stats(out, 'train_perf/failed_task_duration', failed);
      out['train/items_rejected'] = failed.length;
    }
    // Clotho's additions: throughput since the last flush.
    if (this.last && now > this.last.at) {
      const seconds = (now - this.last.at) / 1000;
      out['train_perf/groups_per_second'] = this.groupsSince / seconds;
      if (server) out['train_perf/tokens_per_second'] = (server.completionTokens - this.last.tokens) / seconds;
    }
    this.last = { at: now, tokens: server?.completionTokens ?? 0 };
    this.correct = [];
    this.lengths = [];
    this.rollouts = [];
    this.durations = { all: [], succeeded: [], failed: [] };
    this.envMetrics.clear();
    this.groupsSince = 0;

    const prefix = this.settings.prefix;
    const keyed: WandbMetrics = prefix ? Object.fromEntries(Object.entries(out).map(([k, v]) => [`${prefix}_${k}`, v])) : out;
    // Server metrics go unprefixed, so every environment's land in one chart (Atropos's rule); they are rolling.
    if (server && server.seconds.length > 0) {
      keyed['server/server_0_request_time_avg'] = mean(server.seconds);
      keyed['server/server_0_request_time_std'] = std(server.seconds);
      keyed['server/server_0_request_time_99p'] = percentile(server.seconds, 99);
    }
    if (server && server.attempts.length > 0) keyed['server/server_0_average_num_attempts'] = mean(server.attempts);
    return keyed;
  }
}
