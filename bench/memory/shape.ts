/** What bench/memory's process and its worker process agree on. */

/** max_token_length of every group (the bench model answers a few tokens). */
export const TOKENS = 64;

/** The task queues of one bench run's workers. */
export const memoryBenchQueues = (prefix: string) => ({ workflows: `${prefix}-wf`, llm: `${prefix}-llm`, env: `${prefix}-env` });
