import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../config/config-error.js';
import { atroposEnvironmentName, splitAtroposArgv } from './session.js';

describe('an --atropos command line', () => {
  it("keeps Clotho's flags (store, steps, run id, batcher) and passes every other argument to Atropos unchanged", () => {
    const argv = [
      '--atropos',
      'envs/gsm8k_server.py:GSM8kEnv',
      '--env.group_size',
      '8',
      '--store=/tmp/s',
      '--steps.generate.maximum_attempts',
      '3',
      '--slurm',
      'false',
      '--env.run_id',
      'r1',
      '--batcher-id',
      'b',
      '--config',
      'run.yaml',
    ];
    expect(splitAtroposArgv(argv)).toEqual({
      spec: 'envs/gsm8k_server.py:GSM8kEnv',
      clotho: ['--store=/tmp/s', '--steps.generate.maximum_attempts', '3', '--env.run_id', 'r1', '--batcher-id', 'b'],
      atropos: ['--env.group_size', '8', '--slurm', 'false', '--config', 'run.yaml'],
    });
  });

  it('takes --rebuild-output alone or with true or false after it, leaving the next flag to Atropos', () => {
    expect(splitAtroposArgv(['--atropos', 'e.py', '--rebuild-output', '--env.group_size', '8'])).toEqual({
      spec: 'e.py',
      clotho: ['--rebuild-output'],
      atropos: ['--env.group_size', '8'],
    });
    expect(splitAtroposArgv(['--atropos', 'e.py', '--rebuild-output', 'false']).clotho).toEqual(['--rebuild-output', 'false']);
  });

  it('needs the environment file', () => {
    expect(() => splitAtroposArgv(['--atropos'])).toThrow(ConfigError);
  });

  it('names the run’s environment after the class, else the file', () => {
    expect(atroposEnvironmentName('envs/gsm8k_server.py:GSM8kEnv')).toBe('GSM8kEnv');
    expect(atroposEnvironmentName('envs/gsm8k server.py')).toBe('gsm8k_server');
  });
});
