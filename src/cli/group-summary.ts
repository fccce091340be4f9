import { MASKED, type Message, type StoredGroup } from '../schema/scored-data.js';
import type { TrajectoryStore } from '../store/trajectory-store.js';
import { storeLabel } from '../store/open-store.js';
import { decodeSequence, lacksReply, type RunTokenizer } from './decoded-tokens.js';

const PREVIEW = 80;

const flat = (text: string) => text.replace(/\s+/g, ' ').trim();
const head = (text: string) => (flat(text).length <= PREVIEW ? flat(text) : `${flat(text).slice(0, PREVIEW - 1)}…`);
/** The end of a text (a prompt's end is its question). */
const tail = (text: string) => (flat(text).length <= PREVIEW ? flat(text) : `…${flat(text).slice(-(PREVIEW - 1))}`);
const contentOf = (message: Message | undefined): string => {
  const content = message?.content;
  return typeof content === 'string' ? content : JSON.stringify(content ?? '');
};

/**
 * Each sample of an assembled group as the store holds it, one line each: its score, assistant turns and their
 * rewards, tool results, and the last reply. A sample whose messages hold no reply (an Atropos group of tokens only,
 * or with the one user message Atropos makes of them) shows its tokens decoded with the run's tokenizer instead,
 * and the group its prompt so decoded.
 */
export async function sampleLines(store: TrajectoryStore, key: string, tokenizerOf?: () => Promise<RunTokenizer>): Promise<string[]> {
  const group = await store.tryGet<StoredGroup>(key);
  if (!group) return [`group ${key}: not in the trajectory store ${storeLabel(store)} (set --store)`];
  const lines = [`group ${key} (${group.scores.length} sequences${'messages_only' in group ? ', messages only' : ''}):`];
  const tokens = 'tokens' in group ? group : undefined;
  const decoding = tokens && tokenizerOf && group.scores.some((_, i) => lacksReply(group.messages?.[i]));
  const decoder = decoding ? await tokenizerOf() : undefined;
  const decoded = (i: number) =>
    decoder && 'tokenizer' in decoder ? decodeSequence(decoder.tokenizer, tokens!.tokens[i] ?? [], tokens!.masks[i] ?? []) : undefined;
  const prompt = decoded(0)?.prompt;
  if (prompt !== undefined) lines.push(`  prompt (decoded from its tokens): ${JSON.stringify(tail(prompt))}`);
  group.scores.forEach((score, i) => {
    const messages = group.messages?.[i] ?? [];
    if (tokens && lacksReply(messages)) {
      const ids = tokens.tokens[i] ?? [];
      const sequence = `score ${score} · ${ids.length} tokens, ${(tokens.masks[i] ?? []).filter((m) => m !== MASKED).length} trained`;
      const reply = decoded(i)?.reply;
      if (reply !== undefined)
        return lines.push(`  sample ${i}: ${sequence} · reply (decoded from its tokens) ${JSON.stringify(head(reply))}`);
      const text = messages.length > 0 ? ` · text ${JSON.stringify(tail(messages.map(contentOf).join(' ')))}` : '';
      const why = decoder && 'problem' in decoder ? ` (not decoded: ${decoder.problem})` : '';
      return lines.push(`  sample ${i}: ${sequence}${text}${why}`);
    }
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
    const last = assistant.at(-1);
    return lines.push(`  sample ${i}: ${parts.join(' · ')} · last reply ${JSON.stringify(last ? head(contentOf(last)) : '')}`);
  });
  return lines;
}
