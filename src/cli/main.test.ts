import { describe, expect, it } from 'vitest';
import gsm8k from '../../environments/gsm8k/index.js';
import toolCalling from '../../environments/tool_calling/index.js';
import toolUse from '../../environments/tool_use/index.js';
import { main } from './main.js';

const BUILT_IN = [gsm8k, toolCalling, toolUse];

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
    for (const command of ['process', 'serve', 'evaluate', 'worker', 'api', 'list', 'inference', 'temporal'])
      expect(out).toMatch(new RegExp(`^  ${command} `, 'm'));
    // The other frameworks' environments, run unchanged, are named where a user looks first.
    expect(out).toContain('--atropos env.py[:Class]');
    expect(out).toContain('--verifiers <env>');
    expect((await run('process', '--help')).out).toContain('with --verifiers <env> a verifiers (verifiers.v1)');
  });

  it("lists every flag of a command with the environment's own and the command's defaults", async () => {
    const { code, out } = await run('process', 'gsm8k', '--help');
    expect(code).toBe(0);
    for (const flag of [
      '--env.group_size',
      '--env.total_steps',
      '--env.data_path',
      '--openai.base_url',
      '--openai.server_type',
      '--teacher.<field>',
      '--steps.<step>.maximum_attempts',
      '--model',
      '--config',
    ]) {
      expect(out).toContain(flag);
    }
    expect(out).toMatch(/--env\.group_size .*\(default 8\)/);
    // process writes to data/<environment>.jsonl unless told otherwise, and its help says so.
    expect(out).toMatch(/--env\.data_path_to_save_groups .*\(default data\/gsm8k\.jsonl\)/);
    // process keeps equal-score groups by default, as Atropos's process does.
    expect(out).toMatch(/--env\.ensure_scores_are_not_same .*\(default false\)/);
  });

  it('answers --help for every command with its usage, exit 0', async () => {
    for (const command of [
      'process',
      'serve',
      'evaluate',
      'worker',
      'api',
      'list',
      'inference',
      'temporal',
      'sft-gen',
      'dpo-gen',
      'inspect',
      'view',
      'proxy',
    ]) {
      const { code, out } = await run(command, '--help');
      expect(code, command).toBe(0);
      expect(out, command).toMatch(/^Usage: clotho /m);
    }
  });

  it('exits 2 for usage errors (no environment, a missing module, a flag out of range) and names what is wrong', async () => {
    expect(await run('process')).toMatchObject({ code: 2, err: expect.stringContaining('missing <environment>') });
    expect(await run('process', './no/such/env.ts')).toMatchObject({
      code: 2,
      err: expect.stringContaining('environment module not found'),
    });
    expect(await run('worker', 'gsm8k')).toMatchObject({ code: 2, err: expect.stringContaining('--env.run_id: required') });
    expect(await run('process', 'gsm8k', '--env.total_steps', '0')).toMatchObject({
      code: 2,
      err: expect.stringContaining('--env.total_steps: expected a positive number'),
    });
    expect(await run('process', 'gsm8k', '--env.teacher_enabled')).toMatchObject({
      code: 2,
      err: expect.stringContaining('--teacher.base_url'),
    });
  });

  it('names an unknown command', async () => {
    const { code, err } = await run('proces');
    expect(code).toBe(2);
    expect(err).toContain('unknown command "proces"');
  });

  it('lists the built-in environments, one aligned line each: name, then description', async () => {
    const { code, out, err } = await run('list');
    expect(err).toBe('');
    expect(code).toBe(0);
    const lines = out.slice(0, out.indexOf('\n\n')).split('\n');
    for (const env of BUILT_IN) {
      const line = lines.find((l) => l.startsWith(`${env.name} `));
      expect(line).toBeDefined();
      expect(line!.replace(/^\S+\s+/, '')).toBe(env.description);
    }
    // Aligned: every description starts in the same column.
    const columns = new Set(lines.map((l) => l.length - l.replace(/^\S+\s+/, '').length));
    expect(columns.size).toBe(1);
  });

  it('says, after the built-in environments, how to bring the others', async () => {
    const { out } = await run('list');
    const after = out.slice(out.indexOf('\n\n'));
    expect(after).toContain('./my-env.ts');
    expect(after).toContain('--atropos env.py');
    expect(after).toMatch(/npm package/);
  });

  it('names every way to bring an environment in `clotho --help` and in the help of each command that runs one', async () => {
    const ways = [
      /<name> .*built-in.*clotho list/,
      /\.\/my-env\.ts .*TypeScript/,
      /<npm package> /,
      /--atropos env\.py\[:Class\] .*Atropos/,
    ];
    const { out } = await run('--help');
    for (const way of ways) expect(out).toMatch(way);
    for (const command of ['process', 'serve', 'evaluate', 'worker']) {
      const help = await run(command, '--help');
      expect(help.code, command).toBe(0);
      for (const way of ways) expect(help.out, command).toMatch(way);
      // And a named one's help too: the same ways, then that environment's flags.
      expect((await run(command, 'gsm8k', '--help')).out, command).toMatch(ways[3]!);
    }
  });

  it('says in one line that an --atropos file is missing, before starting anything', async () => {
    // An address nothing listens on: the answer must come before any connection to Temporal or Python is tried.
    const before = process.env.TEMPORAL_ADDRESS;
    process.env.TEMPORAL_ADDRESS = '127.0.0.1:9';
    try {
      for (const command of ['process', 'serve', 'evaluate']) {
        const { code, out, err } = await run(command, '--atropos', '/no/such/env.py:MyEnv', '--env.total_steps', '2');
        expect(code, command).toBe(2);
        expect(out, command).toBe('');
        expect(err, command).toBe(`clotho ${command}: --atropos /no/such/env.py:MyEnv: no such file /no/such/env.py`);
      }
      const help = await run('process', '--atropos', '/no/such/env.py', '--help');
      expect(help).toMatchObject({ code: 2, err: 'clotho process: --atropos /no/such/env.py: no such file /no/such/env.py' });
    } finally {
      if (before === undefined) delete process.env.TEMPORAL_ADDRESS;
      else process.env.TEMPORAL_ADDRESS = before;
    }
  });

  it('rejects an argument to list as a usage error', async () => {
    const { code, err } = await run('list', 'gsm8k');
    expect(code).toBe(2);
    expect(err).toContain('clotho list: unexpected argument "gsm8k"');
  });

  it('lists every environment with its description in the help of a command given none', async () => {
    const { code, out } = await run('process', '--help');
    expect(code).toBe(0);
    const section = out.slice(out.indexOf('Environments:'), out.indexOf('Flags ('));
    expect(section).not.toBe('');
    for (const env of BUILT_IN) expect(section).toMatch(new RegExp(`^  ${env.name} +${escape(env.description)}$`, 'm'));
  });

  it('names an unknown environment in help as a usage error, without a stack trace', async () => {
    const { code, out, err } = await run('process', 'nope', '--help');
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toMatch(/^clotho process: unknown environment "nope"/);
    expect(err).not.toContain('    at ');
  });
});

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
