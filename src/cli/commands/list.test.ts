import { describe, expect, it } from 'vitest';
import type { AnyEnvironment } from '../../env/define.js';
import { formatEnvironments, listEnvironments } from './list.js';

// A loader double: "broken" throws as a module with a syntax error would; the others load.
const load = async (name: string): Promise<AnyEnvironment> => {
  if (name === 'broken') throw new Error('cannot load environment broken: Unexpected token\n    at parse (x.ts:1:1)');
  return { name, description: `the ${name} task\nmore detail for the README` } as unknown as AnyEnvironment;
};

describe('listEnvironments', () => {
  it('lists the environments that load and names the one that fails, with its reason on one line', async () => {
    const entries = await listEnvironments(['math', 'broken', 'chess_openings'], load);
    expect(entries).toEqual([
      { name: 'math', description: 'the math task' },
      { name: 'broken', error: 'cannot load environment broken: Unexpected token' },
      { name: 'chess_openings', description: 'the chess_openings task' },
    ]);
    expect(formatEnvironments(entries)).toEqual([
      '  math            the math task',
      '  broken          (failed to load: cannot load environment broken: Unexpected token)',
      '  chess_openings  the chess_openings task',
    ]);
  });
});
