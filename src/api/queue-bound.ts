import { QueueFullError } from './service.js';

/**
 * Groups waiting for the trainer past which posts are refused. A group is about 200 bytes of batcher state, which
 * goes through continue-as-new as one payload: 5,000 keep it near 1 MB, below Temporal's 2 MiB payload limit.
 */
export const DEFAULT_MAX_QUEUE_GROUPS = 5000;

/** How long a figure of the batcher's depth is trusted before a refusal reads it again; also the `Retry-After`. */
export const DEPTH_REFRESH_MS = 1000;

/** Posts and groups an API process refused because the queue was full. */
export interface Refusals {
  posts: number;
  groups: number;
}

/**
 * Bounds what waits for the trainer: the groups waiting in the batcher plus those this API process holds on
 * their way there. The batcher's figure comes with every ingest answer, so accepting a post costs no query; only
 * a post that would be refused reads it again (at most once per {@link DEPTH_REFRESH_MS}), since the trainer may
 * have taken batches meanwhile. A post is taken while the depth is below `maxGroups`, so the queue passes the
 * bound by at most the posts in flight, and a post larger than the bound still goes through an empty queue.
 */
export class QueueBound {
  readonly refused: Refusals = { posts: 0, groups: 0 };
  private waiting = 0;
  private pending = 0;
  private readAt = Number.NEGATIVE_INFINITY;
  private reading: Promise<void> | undefined;

  constructor(
    readonly maxGroups: number,
    private readonly readWaiting: () => Promise<number>,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Admits `groups` groups or throws {@link QueueFullError}, counted. The caller must call the release it gets
   * once the batcher has answered for them (and has {@link report}ed its depth).
   */
  async admit(groups: number): Promise<() => void> {
    if (this.full()) await this.refresh();
    if (this.full()) {
      this.refused.posts++;
      this.refused.groups += groups;
      throw new QueueFullError(this.waiting + this.pending, this.maxGroups, DEPTH_REFRESH_MS / 1000);
    }
    this.pending += groups;
    let released = false;
    return () => {
      if (!released) this.pending -= groups;
      released = true;
    };
  }

  /** The batcher's depth, as an ingest answer or a reading reports it. */
  report(waiting: number): void {
    this.waiting = waiting;
    this.readAt = this.now();
  }

  private full(): boolean {
    return this.waiting + this.pending >= this.maxGroups;
  }

  private async refresh(): Promise<void> {
    if (this.now() - this.readAt < DEPTH_REFRESH_MS) return;
    this.reading ??= this.readWaiting()
      .then((waiting) => this.report(waiting))
      .finally(() => (this.reading = undefined));
    await this.reading;
  }
}
