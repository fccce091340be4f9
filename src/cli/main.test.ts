import { describe, expect, it } from 'vitest';
import { main } from './main.js';

async function run(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (l) => out.push(l), err: (l) => err.push(l) });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('clotho', () => {
  it('lists every command', async () => {
    const { code, out } = await run('--help');
    expect(code).toBe(0);
    for (const command of ['process', 'serve', 'evaluate', 'worker', 'api', 'inference', 'temporal']) expect(out).toMatch(new RegExp(`^  ${command} `, 'm'));
  });

  it("lists every flag of a command with the environment's own and the command's defaults", async () => {
    const { code, out } = await run('process', 'gsm8k', '--help');
    expect(code).toBe(0);
    for (const flag of ['--env.group_size', '--env.total_steps', '--env.data_path', '--openai.base_url', '--openai.server_type', '--teacher.<field>', '--steps.<step>.maximum_attempts', '--model', '--config']) {
      expect(out).toContain(flag);
    }
    expect(out).toMatch(/--env\.group_size .*\(default 8\)/);
    // process keeps equal-score groups by default, as Atropos's process does.
    expect(out).toMatch(/--env\.ensure_scores_are_not_same .*\(default false\)/);
  });

  it('names an unknown command', async () => {
    const { code, err } = await run('proces');
    expect(code).toBe(2);
    expect(err).toContain('unknown command "proces"');
  });
});
