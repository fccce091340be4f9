/**
 * The workers bench/memory measures, as a process of their own (as `clotho worker` runs them): workflow, LLM and
 * environment workers of bench/support's `benchEnv`. Prints `workers ready` once polling, stops on SIGTERM.
 *
 * Args: <temporal address> <store dir> <inference base URL> <task queue prefix> <group size> <llm concurrency>
 */
import { BaseEnvConfigSchema, ServerConfigSchema } from '../../src/config/schemas.js';
import { loadEnvironmentData } from '../../src/env/loaded.js';
import { createOpenAIClient } from '../../src/inference/openai-client.js';
import { FileSystemStore } from '../../src/store/trajectory-store.js';
import { startWorkers } from '../../src/workers/workers.js';
import { benchEnv } from '../support.js';
import { memoryBenchQueues, TOKENS } from './shape.js';

const [address, storeDir, baseUrl, prefix, groupSize, llmConcurrency] = process.argv.slice(2);
if (!address || !storeDir || !baseUrl || !prefix || !groupSize || !llmConcurrency) {
  console.error('usage: worker.ts <address> <store> <base url> <queue prefix> <group size> <llm concurrency>');
  process.exit(2);
}
const config = BaseEnvConfigSchema.parse({ group_size: Number(groupSize), max_token_length: TOKENS });
const environment = await loadEnvironmentData(benchEnv, config);
const inference = createOpenAIClient(ServerConfigSchema.parse({ base_url: baseUrl, model_name: 'default' }));
const workers = await startWorkers({
  address,
  namespace: 'default',
  taskQueues: memoryBenchQueues(prefix),
  environments: { [benchEnv.name]: environment },
  inference: () => inference,
  store: new FileSystemStore(storeDir),
  llmConcurrency: Number(llmConcurrency),
});
console.log('workers ready');
process.once('SIGTERM', () => void workers.shutdown().then(() => process.exit(0)));
await workers.done;
