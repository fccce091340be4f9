import type { Message, StoredGroup } from '../schema/scored-data.js';
import type { TrajectoryStore } from '../store/trajectory-store.js';
import { storeLabel } from '../store/open-store.js';

const PREVIEW = 80;

const text = (message: Message | undefined): string => {
  const content = message?.content;
  const flat = (typeof content === 'string' ? content : JSON.stringify(content ?? '')).replace(/\s+/g, ' ').trim();
  return flat.length <= PREVIEW ? flat : `${flat.slice(0, PREVIEW - 1)}…`;
};

/**
 * Each sample of an assembled group as the store holds it, one line each: its score, assistant turns and their
 * rewards, tool results, and the last reply.
 */
export async function sampleLines(store: TrajectoryStore, key: string): Promise<string[]> {
  const group = await store.tryGet<StoredGroup>(key);
  if (!group) return [`group ${key}: not in the trajectory store ${storeLabel(store)} (set --store)`];
  const lines = [`group ${key} (${group.scores.length} sequences${'messages_only' in group ? ', messages only' : ''}):`];
  group.scores.forEach((score, i) => {
    const messages = group.messages?.[i] ?? [];
    const assistant = messages.filter((m) => m.role === 'assistant');
    const tools = messages.filter((m) => m.role === 'tool');
    const rewards = assistant.flatMap((m) => (typeof m.reward === 'number' ? [m.reward] : []));
    const parts = [
      `score ${score}`,
      `${assistant.length} assistant turns`,
      ...(tools.length > 0 ? [`${tools.length} tool results`] : []),
      ...(rewards.length > 0 ? [`turn rewards ${rewards.join(', ')}`] : []),
      ...(group.overrides?.[i]?.set_advantage_to_zero ? ['truncated'] : []),
    ];
    lines.push(`  sample ${i}: ${parts.join(' · ')} · last reply ${JSON.stringify(text(assistant.at(-1)))}`);
  });
  return lines;
}
