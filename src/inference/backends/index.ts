import type { ServerConfig } from '../../config/schemas.js';
import type { Backend, BackendOptions } from './backend.js';
import { createLlamaBackend } from './llama.js';
import { createOpenAIBackend } from './openai.js';
import { createSglangBackend } from './sglang.js';
import { createVllmBackend } from './vllm.js';

export type { Backend, BackendOptions, PromptLogprobs, TokenizerLoader } from './backend.js';

/**
 * The backend for a server's `server_type`. `trl` (TRL's vLLM server, which returns no logprobs)
 * is refused: its rollouts could not carry `inference_logprobs`.
 */
export function createBackend(config: ServerConfig, options: BackendOptions = {}): Backend {
  switch (config.server_type) {
    case 'openai':
      return createOpenAIBackend(config, options);
    case 'vllm':
      return createVllmBackend(config, options);
    case 'sglang':
      return createSglangBackend(config, options);
    case 'llama':
      return createLlamaBackend(config);
    case 'trl':
      throw new Error(
        `server_type "trl" is not supported (${config.base_url}): TRL's server returns no logprobs; ` +
          'serve the model with vLLM and use --openai.server_type vllm',
      );
  }
}
