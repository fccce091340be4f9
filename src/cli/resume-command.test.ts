import { describe, expect, it } from 'vitest';
import { resumeCommand } from './resume-command.js';

describe('resumeCommand', () => {
  it('names the run when the command did not, adds the flags it lacks, and quotes for a shell', () => {
    expect(resumeCommand('process', ['--atropos', 'env.py', '--env.group_size', '4'], 'r1', ['--rebuild-output'])).toBe(
      'clotho process --atropos env.py --env.group_size 4 --env.run_id r1 --rebuild-output',
    );
    expect(
      resumeCommand('serve', ['--env.run_id=r1', '--rebuild-output', '--env.wandb_name', "it's mine"], 'r1', ['--rebuild-output']),
    ).toBe(`clotho serve --env.run_id=r1 --rebuild-output --env.wandb_name 'it'\\''s mine'`);
  });
});
