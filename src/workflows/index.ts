/** Every workflow Clotho runs; the only `workflowsPath` of its workers. */
export { envRun, envRunStatusQuery } from './env-run.js';
export { rolloutGroup } from './rollout-group.js';
export { batcher } from './batcher.js';
