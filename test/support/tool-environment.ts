import { z } from 'zod';
import { defineEnvironment } from '../../src/env/define.js';
import { ToolCallSchema } from '../../src/inference/types.js';
import type { Message } from '../../src/schema/scored-data.js';

/** Temperatures (°C) the weather tool knows; item i asks about the i-th city. */
export const WEATHER: Record<string, number> = { Paris: 18, Lyon: 21, Nice: 24 };

const cities = Object.keys(WEATHER);
const ArgumentsSchema = z.looseObject({ city: z.string() });

/** Hermes-style tool instructions, as Qwen's template would write them for a `get_weather` tool. */
const SYSTEM =
  'You can call get_weather({"city": string}) by writing ' +
  '<tool_call>\n{"name": "get_weather", "arguments": {"city": "..."}}\n</tool_call>. ' +
  'Answer with the temperature in degrees Celsius.';

/** What the tool answers for a city. */
export function weatherReport(city: string): string {
  const temperature = WEATHER[city];
  return temperature === undefined ? `unknown city: ${city}` : `${city}: ${temperature} °C, cloudy`;
}

function weatherOf(args: string): string {
  try {
    return weatherReport(ArgumentsSchema.parse(JSON.parse(args)).city);
  } catch {
    return `invalid arguments: ${args}`;
  }
}

/**
 * A tool-calling environment for multi-turn tests: the assistant asks a weather tool, the step
 * answers each OpenAI tool call with a `tool` message, and a turn without calls ends the episode.
 * With `any_turn_is_call`, every assistant turn counts as a call for the item's city, so a model
 * that never writes real calls (random weights) still takes tool turns.
 */
export const weatherTools = defineEnvironment({
  name: 'weather-tools',
  description: 'answer a temperature question with a get_weather tool',
  config: { any_turn_is_call: z.boolean().default(false) },
  async load() {
    return { size: cities.length, get: (i: number) => ({ city: cities[i]! }) };
  },
  prompt: ({ city }) => [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: `What is the temperature in ${city}?` },
  ],
  parse: (completion) => {
    const match = completion.match(/-?\d+/g);
    return match ? Number(match.at(-1)) : null;
  },
  score: ({ parsed, item }) => (parsed === WEATHER[item.city] ? 1 : -1),
  step: ({ messages, item }, config) => {
    const calls = z
      .array(ToolCallSchema)
      .catch([])
      .parse(messages.at(-1)?.tool_calls ?? []);
    const answers: Message[] = calls.map((c) => ({ role: 'tool', tool_call_id: c.id, content: weatherOf(c.function.arguments) }));
    if (answers.length > 0) return { messages: answers, done: false };
    if (config.any_turn_is_call) return { messages: [{ role: 'tool', content: weatherReport(item.city) }], done: false };
    return { messages: [], done: true };
  },
});
