import { GROUP_STATUSES, type GroupStatus, type GroupSummary, type RolloutSummary } from './model.js';

/** What the page's filters ask for; an absent field does not filter. */
export interface GroupFilter {
  environment?: string;
  /** Rollouts scoring at least this (inclusive); unscored rollouts never match a bound. */
  min?: number;
  /** Rollouts scoring at most this (inclusive). */
  max?: number;
  statuses?: GroupStatus[];
  /** Case-insensitive text in a rollout's messages, tool calls or parsed answer, or in the group's label or note. */
  text?: string;
}

/** A filter from the page's query string (`env`, `min`, `max`, `status=scored,dropped`, `q`); bad values are ignored. */
export function parseFilter(query: Record<string, string | undefined>): GroupFilter {
  const number = (value: string | undefined) =>
    value === undefined || value.trim() === '' || !Number.isFinite(Number(value)) ? undefined : Number(value);
  const statuses = query.status?.split(',').filter((s): s is GroupStatus => (GROUP_STATUSES as readonly string[]).includes(s));
  const filter: GroupFilter = {};
  if (query.env) filter.environment = query.env;
  const min = number(query.min);
  const max = number(query.max);
  if (min !== undefined) filter.min = min;
  if (max !== undefined) filter.max = max;
  if (statuses?.length) filter.statuses = statuses;
  if (query.q?.trim()) filter.text = query.q.trim().toLowerCase();
  return filter;
}

/** A group that passes a filter, with those of its rollouts that do. */
export interface FilteredGroup {
  group: GroupSummary;
  rollouts: RolloutSummary[];
}

/**
 * The groups a filter lets through. Environment and status select groups; score range and text select rollouts, and
 * a group shows when any of its rollouts does (a group whose label or failure note holds the text shows whole).
 */
export function applyFilter(groups: GroupSummary[], filter: GroupFilter): FilteredGroup[] {
  const scoreBound = filter.min !== undefined || filter.max !== undefined;
  const inRange = (r: RolloutSummary) =>
    !scoreBound ||
    (r.score !== null && (filter.min === undefined || r.score >= filter.min) && (filter.max === undefined || r.score <= filter.max));
  const shown: FilteredGroup[] = [];
  for (const group of groups) {
    if (filter.environment !== undefined && group.address?.environment !== filter.environment) continue;
    if (filter.statuses && !filter.statuses.includes(group.status)) continue;
    const text = filter.text;
    const groupHasText = text !== undefined && `${group.label}\n${group.note ?? ''}`.toLowerCase().includes(text);
    const rollouts = group.rollouts.filter((r) => inRange(r) && (text === undefined || groupHasText || r.text.includes(text)));
    const empty = group.rollouts.length === 0 && !scoreBound && (text === undefined || groupHasText);
    if (rollouts.length > 0 || empty) shown.push({ group, rollouts });
  }
  return shown;
}
