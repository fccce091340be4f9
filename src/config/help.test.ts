import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { toy } from '../../test/support/environments.js';
import { describeFlags } from './help.js';

describe('describeFlags', () => {
  it('lists every flag with its type, the effective default and a description', () => {
    const rows = describeFlags(toy, { 'max-groups': z.number().int().positive().describe('groups to produce') });
    const row = (flag: string) => rows.find((r) => r.flag === flag);
    expect(row('--env.group_size')).toEqual({
      flag: '--env.group_size',
      type: 'positive integer',
      default: '8',
      description: 'rollouts per item',
    });
    expect(row('--env.split')).toMatchObject({ type: 'one of train, test', default: 'train', description: 'which split to read' });
    expect(row('--env.wandb_name')).toMatchObject({ type: 'string or None', default: 'None' });
    expect(row('--openai.timeout')).toMatchObject({ default: '1200', description: 'request timeout in seconds' });
    expect(row('--env.batch_size')).toMatchObject({ type: 'integer', default: '-1' });
    expect(row('--openai.tokenizer_name')!.description).not.toBe(row('--env.tokenizer_name')!.description);
    expect(row('--steps.<step>.maximum_attempts')).toMatchObject({ default: '5' });
    expect(row('--max-groups')).toMatchObject({ description: 'groups to produce' });
    // Every base, server and step field is described; only the toy's own undescribed field is not.
    expect(rows.filter((r) => r.description === '').map((r) => r.flag)).toEqual(['--env.data_path']);
  });
});
