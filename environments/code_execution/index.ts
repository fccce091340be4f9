import { defineEnvironment, fromItems, resolveDataset, z, type EnvConfig } from 'clotho';
import { extractCode, type ExtractedCode } from './extract.js';
import { runTests, type RunSettings } from './program.js';
import { DATASET_URLS, DATASETS, loadTasks, MBPP_SPLITS, type CodeTask, type MbppSplit } from './tasks.js';

export type { CodeTask } from './tasks.js';

export const SYSTEM_PROMPT =
  'You are an expert Python programmer. Write the code the user asks for and reply with it in a single ```python ' +
  'code block: the whole function, with its signature and the imports it needs. The code is run against tests.';

const configFields = {
  dataset: z.enum(DATASETS).default('humaneval').describe('layout of the rows (and the public copy downloaded without data_path)'),
  data_path: z
    .string()
    .nullable()
    .default(null)
    .describe('HumanEval or MBPP rows, JSONL or Parquet; unset: download the public copy into the cache'),
  split: z
    .enum(Object.keys(MBPP_SPLITS) as [MbppSplit, ...MbppSplit[]])
    .default('all')
    .describe(
      'MBPP rows by task id as its paper splits them (prompt 1-10, test 11-510, validation 511-600, train 601-974); all: every row',
    ),
  challenge_tests: z.boolean().default(false).describe('MBPP: run challenge_test_list too'),
  python: z.string().default('python3').describe('interpreter in the sandbox: a name in /usr/local/bin:/usr/bin:/bin, or an absolute path'),
  python_binds: z.array(z.string()).default([]).describe('host folders shown read-only in the sandbox (a Python installed outside /usr)'),
  timeout: z.number().positive().default(10).describe('wall-clock seconds per run, sandbox start included'),
  cpu_time: z.number().int().positive().default(10).describe('CPU seconds per process'),
  memory_mb: z.number().int().positive().default(1024).describe('address space per process, MiB'),
  max_processes: z.number().int().positive().default(32).describe('processes and threads per run'),
  max_output_kb: z.number().int().positive().default(1024).describe('stdout and stderr per run, KiB; more is cut off and the run stopped'),
  concurrency: z.number().int().min(0).default(0).describe('sandboxes at once per worker process; 0: one per CPU core'),
};

function runSettings(config: EnvConfig<typeof configFields>, signal: AbortSignal): RunSettings {
  return {
    python: config.python,
    readOnlyBinds: config.python_binds,
    concurrency: config.concurrency,
    signal,
    limits: {
      wallTimeMs: config.timeout * 1000,
      cpuSeconds: config.cpu_time,
      memoryBytes: config.memory_mb << 20,
      processes: config.max_processes,
      outputBytes: config.max_output_kb << 10,
    },
  };
}

/**
 * Python programming problems (HumanEval, MBPP) scored by running the model's code against the problem's tests in a
 * bubblewrap sandbox: +1 when every test passes, −1 when one fails, the program crashes, times out or breaks a limit.
 */
export default defineEnvironment({
  name: 'code_execution',
  description: 'Python problems (HumanEval, MBPP) whose code is run against their tests in a sandbox; +1 when all pass, -1 otherwise',
  config: configFields,
  defaults: { group_size: 8 },

  async load(config) {
    const source = DATASET_URLS[config.dataset];
    const path = await resolveDataset({ path: config.data_path, ...source });
    const tasks = await loadTasks(path, config.dataset, { split: config.split, challengeTests: config.challenge_tests });
    if (tasks.length === 0) throw new Error(`no ${config.dataset} problems in ${path} (split ${config.split})`);
    // Indices past the end wrap around: item i is the same on every worker and in every epoch.
    return fromItems(tasks);
  },

  prompt: (item: CodeTask, config) => [
    { role: 'system', content: SYSTEM_PROMPT },
    {
      role: 'user',
      content: config.dataset === 'humaneval' ? `Complete this Python function:\n\n\`\`\`python\n${item.question}\`\`\`` : item.question,
    },
  ],

  parse: (completion, item): ExtractedCode => extractCode(completion, item.entryPoint),

  async score({ item, parsed, config, signal }) {
    const hasCode = parsed.code.trim() !== '';
    const outcome = hasCode ? await runTests(item, parsed.code, runSettings(config, signal)) : null;
    const passed = outcome?.passed ?? false;
    return {
      score: passed ? 1 : -1,
      metrics: { passed: passed ? 1 : 0, timed_out: outcome?.timedOut ? 1 : 0, has_code: hasCode ? 1 : 0, fenced: parsed.fenced ? 1 : 0 },
    };
  },
});
