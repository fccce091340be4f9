import type { z } from 'zod';
import type { Message } from '../schema/scored-data.js';
import { resolveConfig } from '../config/resolve.js';
import type { EnvConfig, EnvironmentDefinition, ModelClient } from './define.js';
import { runEpisode, type AssistantTurn, type Episode } from './episode.js';

/**
 * An environment's config as `clotho` would resolve it from these flags (`['--env.split', 'test']`): defaults,
 * the environment's own defaults, then the flags. Throws `ConfigError` naming every bad flag.
 */
export function resolveEnvConfig<Extra extends z.ZodRawShape>(
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any item and parse types: only the config shape matters here
  definition: EnvironmentDefinition<any, any, Extra>,
  argv: string[] = [],
): EnvConfig<Extra> {
  return resolveConfig({ argv, environment: definition }).env as EnvConfig<Extra>;
}

/** One episode for {@link playEpisode}: the item, the model's scripted replies, and the flags. */
export interface PlayOptions<Item> {
  item: Item;
  /** The assistant's turns, in order (text or whole messages with `tool_calls`), or a function that answers each turn. */
  replies: (string | Message)[] | AssistantTurn;
  /** Flags the config is resolved from. @default [] */
  argv?: string[];
  /** @default the config's max_turns for multi-turn environments, else 1 */
  maxTurns?: number;
  judge?: ModelClient;
}

/**
 * Plays one episode of an environment against scripted assistant replies, in this process: prompt, tools executed,
 * steps, parse and score exactly as a rollout runs them, without Temporal or a model. For environments' unit tests.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the parse type and config shape are the environment's own; the episode reads neither by type
export async function playEpisode<Item>(definition: EnvironmentDefinition<Item, any, any>, options: PlayOptions<Item>): Promise<Episode> {
  const config = resolveEnvConfig(definition, options.argv ?? []);
  const replies = options.replies;
  let turn = 0;
  const turnOf: AssistantTurn =
    typeof replies === 'function'
      ? replies
      : async () => {
          const reply = replies[Math.min(turn++, replies.length - 1)] ?? '';
          return typeof reply === 'string' ? { role: 'assistant', content: reply } : reply;
        };
  const multiTurn = Boolean(definition.step || definition.tools);
  const judge = options.judge ?? { complete: () => Promise.reject(new Error('playEpisode: no judge given')) };
  const environment = { definition, config, items: { size: 1, get: () => options.item } };
  return runEpisode(environment, turnOf, { itemIndex: 0, maxTurns: options.maxTurns ?? (multiTurn ? config.max_turns : 1), judge });
}
