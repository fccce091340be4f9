import type { GroupSummary, RawGroup } from './model.js';

/** A run's groups as a source read them: summaries for the list, and what went wrong reading (shown on the page). */
export interface LoadedRun {
  groups: GroupSummary[];
  notices: string[];
}

/**
 * One run the viewer browses: a JSONL file of scored groups, a run in the trajectory store, or the groups waiting for
 * the trainer in a running `clotho api`.
 */
export interface RunSource {
  /** Unique among the viewer's runs; used in its URLs. */
  readonly id: string;
  readonly kind: 'jsonl' | 'store' | 'api';
  /** The file, store (directory or s3:// URL) or API it reads. */
  readonly origin: string;
  /** Reads the run's groups (again: a run still going grows). */
  load(): Promise<LoadedRun>;
  /** One group in full, by its summary's id; undefined when there is none. */
  group(id: string): Promise<RawGroup | undefined>;
}
