import type { ModelClient } from '../env/define.js';
import { toApplicationFailure } from './errors.js';
import type { InferenceClient } from './types.js';

/**
 * A chat model as environments see it (a judge for rewards): plain text in and out, over the same clients, retries
 * and failure types as the policy. A server that fails is an infrastructure failure the calling step retries.
 */
export function modelClient(client: InferenceClient): ModelClient {
  return {
    async complete(messages, options = {}) {
      const request = { messages, n: options.n ?? 1, maxTokens: options.maxTokens ?? 1024, temperature: options.temperature ?? 0, topP: 1 };
      const call = {
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      };
      try {
        return (await client.generate(request, call)).map((c) => c.text);
      } catch (error) {
        throw toApplicationFailure(error);
      }
    },
  };
}
