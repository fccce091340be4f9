import { storeLabel } from '../../store/open-store.js';
import type { TrajectoryStore } from '../../store/trajectory-store.js';
import { emptyGroup, fromScored, fromState, joinGroups, withDecodedReplies } from './groups.js';
import { runTokenizer, type RunTokenizer } from '../decoded-tokens.js';
import { summariseGroup, type GroupAddress, type GroupStatus, type GroupSummary, type RawGroup } from './model.js';
import type { LoadedRun, RunSource } from './source.js';
import { readHarnessState, withHarness } from './harness.js';
import { listStoredItems, readAssembled, readNewestState, readParsed } from './store-layout.js';
import type { RunWorkflows, WorkflowFacts } from './temporal.js';

/**
 * A run in the trajectory store, by run id. Assembled groups (`group.json`) were scored; the others were dropped,
 * failed or are still going, which only Temporal can tell: with `workflows`, its visibility lists every rollout group
 * of the run by status, also those that failed before writing anything to the store.
 */
export function storeSource(store: TrajectoryStore, runId: string, options: { id: string; workflows?: RunWorkflows }): RunSource {
  let facts = new Map<string, WorkflowFacts>();
  const tokenizers = new Map<string, () => Promise<RunTokenizer>>();
  const tokenizerOf = (environment: string) => {
    if (!tokenizers.has(environment)) tokenizers.set(environment, runTokenizer(store, runId, environment));
    return tokenizers.get(environment)!;
  };

  /** A group from the store and what Temporal says of it; undefined when neither knows it. */
  const read = async (address: GroupAddress): Promise<{ group: RawGroup; status: GroupStatus; note: string | null } | undefined> => {
    const fact = facts.get(`${address.environment}/item-${address.itemIndex}`);
    const parsed = await readParsed(store, address);
    const assembled = await readAssembled(store, address);
    if (assembled.length > 0) {
      const joined = assembled.length > 1 ? `${assembled.length} groups from one collect_trajectories, shown as one` : null;
      const shown = await withDecodedReplies(joinGroups(assembled.map((g) => fromScored(g, parsed))), tokenizerOf(address.environment));
      const decoded = shown.decodedWith ? `no replies in its messages: decoded from its tokens with ${shown.decodedWith}` : null;
      const undecoded = shown.problem ? `no replies in its messages, and its tokens not decoded: ${shown.problem}` : null;
      const note = [joined, decoded, undecoded].filter(Boolean).join('; ') || null;
      return { group: shown.group, status: 'scored', note };
    }
    // A harness group's rollouts write no turn records: its state is gathered from them, or read from each.
    const state = (await readNewestState(store, address)) ?? (await readHarnessState(store, address));
    if (!state && !fact) return undefined;
    // Visibility saying "scored" of a group the store lacks means the store was cleaned since: unknown.
    const status: GroupStatus = !fact || fact.status === 'scored' ? 'unknown' : fact.status;
    const note = fact?.note ?? (fact ? null : 'not assembled; Temporal was not reachable to say whether it was dropped or failed');
    const scores = status === 'dropped' ? fact!.meanScore : null;
    return { group: state ? fromState(state, scores, parsed) : emptyGroup(), status, note };
  };

  return {
    id: options.id,
    kind: 'store',
    origin: `${storeLabel(store)} · run ${runId}`,
    async load(): Promise<LoadedRun> {
      const notices: string[] = [];
      if (options.workflows) {
        facts = await options.workflows.list(runId).catch((error: unknown) => {
          notices.push(`Temporal visibility: ${(error as Error).message}`);
          return new Map<string, WorkflowFacts>();
        });
      }
      const stored = await listStoredItems(store, runId);
      const inStore = new Set(stored.map((s) => `${s.environment}/item-${s.itemIndex}`));
      const onlyInTemporal = [...facts.entries()].filter(([id]) => !inStore.has(id)).map(([, f]) => ({ runId, ...f, assembled: false }));
      const all = [...stored, ...onlyInTemporal].sort((a, b) => a.environment.localeCompare(b.environment) || a.itemIndex - b.itemIndex);
      if (all.length === 0)
        notices.push(`run ${runId} has no groups in ${storeLabel(store)}${options.workflows ? ' nor in Temporal' : ''}`);
      const groups: GroupSummary[] = [];
      for (const item of all) {
        const address = { runId, environment: item.environment, itemIndex: item.itemIndex };
        try {
          const found = await read(address);
          if (!found) continue;
          const { group, status, note } = found;
          const id = `${item.environment}/item-${item.itemIndex}`;
          groups.push(summariseGroup(group, { id, label: `${item.environment} · item ${item.itemIndex}`, address, status, note }));
        } catch (error) {
          notices.push(`${item.environment} item ${item.itemIndex}: ${(error as Error).message}`);
        }
      }
      return { groups, notices };
    },
    async group(id) {
      const match = /^(.+)\/item-(\d+)$/.exec(id);
      if (!match) return undefined;
      const address = { runId, environment: match[1]!, itemIndex: Number(match[2]) };
      const found = await read(address);
      return found && withHarness(store, address, found.group);
    },
  };
}
