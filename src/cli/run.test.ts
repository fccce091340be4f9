import { describe, expect, it } from 'vitest';
import { PROCESS_PLAN } from './commands/process.js';
import { planRun } from './run.js';

describe('planRun', () => {
  it('reports Atropos fields that were set but that Clotho does not act on', async () => {
    const { notices } = await planRun(['gsm8k', '--env.use_wandb', 'true', '--env.max_num_workers', '16', '--env.group_size', '4']);
    expect(notices).toEqual([
      '--env.max_num_workers is accepted for Atropos compatibility, but Clotho does not act on it (ignored)',
      '--env.use_wandb is accepted for Atropos compatibility, but Clotho does not act on it (ignored)',
    ]);
  });

  it("says nothing about a command's own defaults", async () => {
    expect((await planRun(['gsm8k'], PROCESS_PLAN)).notices).toEqual([]);
  });
});
