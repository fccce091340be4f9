import { expect } from 'vitest';
import { planRun } from '../../src/cli/run.js';
import { ConfigError } from '../../src/config/config-error.js';

/** The problems `planRun` refuses `argv` with; the test fails when it plans the run instead, or throws another error. */
export async function planProblems(argv: string[]): Promise<string[]> {
  const error = await planRun(argv).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConfigError);
  return (error as ConfigError).problems;
}
