/**
 * What checking the per-token arrays of a completion and of a scored group costs, against parsing their JSON.
 *
 * 1. A vLLM chat-completion response of `--samples` × `--tokens` tokens (token ids, OpenAI logprob entries, the
 *    prompt's ids): `JSON.parse` alone, then `parseCompletions` (the same parse, checked and turned into completions).
 * 2. The scored group assembled from them: zod's full `ScoredDataGroupSchema`, and the loops first (`number-rows.ts`).
 *
 * Every figure is the median of `--rounds` timings of `--repeat` calls, in one process; the ratios are what to read.
 *
 * Run: npm run bench:parsing [-- --samples 8 --tokens 4096 --prompt 1024 --repeat 20 --rounds 7]
 */
import { parseArgs } from 'node:util';
import { parseCompletions } from '../../src/inference/openai-client.js';
import { parseHotFirst } from '../../src/schema/number-rows.js';
import { HotScoredDataGroupSchema, MASKED, MASKED_LOGPROB, ScoredDataGroupSchema } from '../../src/schema/scored-data.js';

const { values } = parseArgs({
  options: {
    samples: { type: 'string', default: '8' },
    tokens: { type: 'string', default: '4096' },
    prompt: { type: 'string', default: '1024' },
    repeat: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '7' },
  },
});
const [SAMPLES, TOKENS, PROMPT, REPEAT, ROUNDS] = [values.samples, values.tokens, values.prompt, values.repeat, values.rounds].map(
  Number,
) as [number, number, number, number, number];

const ids = (n: number, seed: number) => Array.from({ length: n }, (_, t) => (seed * 7919 + t * 31) % 151_000);
const logprob = (t: number) => -((t % 97) + 1) / 37;
const prompt = ids(PROMPT, 1);
const response = JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion',
  model: 'bench',
  prompt_token_ids: prompt,
  choices: Array.from({ length: SAMPLES }, (_, i) => ({
    index: i,
    message: { role: 'assistant', content: 'x'.repeat(TOKENS) },
    finish_reason: 'length',
    token_ids: ids(TOKENS, i + 2),
    logprobs: {
      content: Array.from({ length: TOKENS }, (_, t) => ({ token: `t${t}`, logprob: logprob(t), bytes: [120], top_logprobs: [] })),
    },
  })),
});

/** Median over the rounds of the mean ms per call of `f`. */
function time(f: () => unknown): number {
  for (let i = 0; i < REPEAT; i++) f();
  const rounds = Array.from({ length: ROUNDS }, () => {
    const start = performance.now();
    for (let i = 0; i < REPEAT; i++) f();
    return (performance.now() - start) / REPEAT;
  });
  return rounds.sort((a, b) => a - b)[Math.floor(ROUNDS / 2)]!;
}

const completions = parseCompletions(response, SAMPLES);
const group = {
  tokens: completions.map((c) => [...prompt, ...c.tokenIds!]),
  masks: completions.map((c) => [...prompt.map(() => MASKED), ...c.tokenIds!]),
  scores: completions.map((_, i) => (i % 2 === 0 ? 1 : -1)),
  messages: completions.map((c) => [{ role: 'user', content: 'q' }, c.message]),
  generation_params: { temperature: 1 },
  group_overrides: null,
  inference_logprobs: completions.map((c) => [...prompt.map(() => MASKED_LOGPROB), ...c.logprobs!]),
  advantages: null,
  overrides: null,
  distill_token_ids: null,
  distill_logprobs: null,
  images: null,
};

const ms = (x: number) => `${x.toFixed(2)} ms`;
const parse = time(() => JSON.parse(response));
const completionsMs = time(() => parseCompletions(response, SAMPLES));
console.log(`chat response: ${SAMPLES} × ${TOKENS} tokens with logprobs, ${PROMPT} prompt ids (${(response.length / 1e6).toFixed(1)} MB)`);
console.log(`  JSON.parse ${ms(parse)}   parseCompletions ${ms(completionsMs)}   ratio ${(completionsMs / parse).toFixed(2)}`);
const full = time(() => ScoredDataGroupSchema.parse(group));
const hot = time(() => parseHotFirst(HotScoredDataGroupSchema, ScoredDataGroupSchema, group));
console.log(`scored group: ${SAMPLES} × ${PROMPT + TOKENS} tokens`);
console.log(`  zod's full schema ${ms(full)}   loops first ${ms(hot)}   full / loops ${(full / hot).toFixed(1)}`);
