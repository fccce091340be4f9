import { describe, expect, it } from 'vitest';
import { ServerConfigSchema } from '../../config/schemas.js';
import { createBackend } from './index.js';

const config = (server_type: string) => ServerConfigSchema.parse({ base_url: 'http://127.0.0.1:1/v1', server_type });

describe('createBackend', () => {
  it('gives token-id prompts to every backend and prompt logprobs to vLLM only', () => {
    const capabilities = (type: string) => {
      const b = createBackend(config(type));
      return [b.generateTokens !== undefined, b.promptLogprobs !== undefined];
    };
    expect(capabilities('openai')).toEqual([true, false]);
    expect(capabilities('vllm')).toEqual([true, true]);
    expect(capabilities('sglang')).toEqual([true, false]);
    expect(capabilities('llama')).toEqual([true, false]);
  });

  it('refuses trl, whose server returns no logprobs', () => {
    expect(() => createBackend(config('trl'))).toThrow(/--openai.server_type vllm/);
  });
});
