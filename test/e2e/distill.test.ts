import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { startLocalEngine, type RunningLocalEngine } from '../../src/inference/local/start.js';
import { GSM8K_TEST } from '../support/gsm8k-model.js';
import { processEngineGroup, useScratch } from '../support/runs.js';

/** The documented config (environments/gsm8k/README.md, "Teacher distillation"). */
const DISTILL_YAML = fileURLToPath(new URL('../../environments/gsm8k/distill.yaml', import.meta.url));

const scratch = useScratch('clotho-distill-');
let teacher: RunningLocalEngine;

beforeAll(async () => {
  // The same generated model the CLI's embedded student runs, so the two share Qwen's tokenizer.
  teacher = scratch.closeAfter(await startLocalEngine({ model: 'generate:tiny', port: 0, slots: 1, threads: 1 }));
});

type PromptPosition = Record<string, { logprob: number; rank: number | null }> | null;

/**
 * The teacher's top k at every position of `tokens`, asked of the engine directly over the wire (vLLM's
 * `prompt_logprobs` on /v1/completions with a token-id prompt), independently of Clotho's vLLM backend.
 */
async function teacherTopK(tokens: number[], k: number): Promise<{ ids: number[][]; logprobs: number[][] }> {
  const response = await fetch(`${teacher.baseUrl}/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: teacher.modelName, prompt: tokens, max_tokens: 1, temperature: 0, prompt_logprobs: k }),
  });
  expect(response.status).toBe(200);
  const body = (await response.json()) as { choices: { prompt_logprobs: PromptPosition[] }[] };
  const positions = body.choices[0]!.prompt_logprobs;
  expect(positions).toHaveLength(tokens.length);
  // Each position holds the k best plus the sequence's own token when it ranks below them.
  const top = positions.map((p) =>
    Object.entries(p ?? {})
      .filter(([, e]) => e.rank !== null && e.rank <= k)
      .sort(([, a], [, b]) => a.rank! - b.rank!),
  );
  return { ids: top.map((t) => t.map(([id]) => Number(id))), logprobs: top.map((t) => t.map(([, e]) => e.logprob)) };
}

describe('gsm8k with a teacher (environments/gsm8k/distill.yaml)', () => {
  it("writes the teacher's top-k logprobs at every token of every sequence, equal to what the teacher itself returns", async () => {
    const config = parseYaml(await readFile(DISTILL_YAML, 'utf8')) as { env: { teacher_enabled: boolean; teacher_top_k: number } };
    expect(config.env.teacher_enabled).toBe(true);
    const k = config.env.teacher_top_k;
    expect(k).toBeGreaterThan(0);

    // No --openai.base_url: the student is the CLI's own embedded engine (generate:tiny, tokenizer qwen3).
    const group = await processEngineGroup(
      [
        'gsm8k',
        '--config',
        DISTILL_YAML,
        '--teacher.base_url',
        teacher.baseUrl,
        '--teacher.tokenizer_name',
        'qwen3',
        '--env.data_path',
        GSM8K_TEST,
        '--store',
        scratch.path('store'),
      ],
      scratch.path('distill.jsonl'),
      16,
    );
    expect(group.distill_token_ids).toHaveLength(2);
    expect(group.distill_logprobs).toHaveLength(2);

    let compared = 0;
    for (const [i, tokens] of group.tokens.entries()) {
      const ids = group.distill_token_ids![i]!;
      const logprobs = group.distill_logprobs![i]!;
      // One entry per token of the whole sequence, prompt and completion alike.
      expect(ids).toHaveLength(tokens.length);
      expect(logprobs).toHaveLength(tokens.length);
      expect(group.masks[i]!.some((m) => m !== -100)).toBe(true);
      // vLLM's convention: nothing is predicted before the first token.
      expect(ids[0]).toEqual([]);
      expect(logprobs[0]).toEqual([]);
      const expected = await teacherTopK(tokens, k);
      for (let p = 1; p < tokens.length; p++) {
        expect(ids[p], `sequence ${i}, position ${p}`).toHaveLength(k);
        expect(new Set(ids[p]).size).toBe(k);
        expect(logprobs[p]).toHaveLength(k);
        for (let j = 0; j < k; j++) {
          expect(logprobs[p]![j]!).toBeLessThanOrEqual(0);
          if (j > 0) expect(logprobs[p]![j]!).toBeLessThanOrEqual(logprobs[p]![j - 1]!);
        }
        // The real check: the teacher's distribution over the token at p, given tokens[0..p), as the teacher gives it.
        expect(ids[p], `sequence ${i}, position ${p}`).toEqual(expected.ids[p]);
        expect(logprobs[p], `sequence ${i}, position ${p}`).toEqual(expected.logprobs[p]);
        compared++;
      }
    }
    expect(compared).toBe(group.tokens.reduce((n, t) => n + t.length - 1, 0));
  });
});
