import { afterEach, describe, expect, it, vi } from 'vitest';
import { resolveModel } from '../../inference/local/start.js';
import { inferenceCommand } from './inference.js';

describe('clotho inference', () => {
  afterEach(() => vi.restoreAllMocks());

  it('exits 2 with the usage on missing or unknown flags', async () => {
    const errors: string[] = [];
    vi.spyOn(console, 'error').mockImplementation((msg: string) => void errors.push(msg));
    expect(await inferenceCommand(['--port', '0'])).toBe(2);
    expect(errors.join('\n')).toMatch(/--model is required/);
    expect(await inferenceCommand(['--model', 'generate:tiny', '--bogus', '1'])).toBe(2);
    expect(await inferenceCommand(['--model', 'generate:tiny', '--slots', 'many'])).toBe(2);
    expect(errors.join('\n')).toMatch(/--slots/);
    expect(await inferenceCommand(['--model', 'generate:tiny', '--weights-version', 'latest'])).toBe(2);
    expect(errors.join('\n')).toMatch(/--weights-version: .*expected number/);
  });

  it('exits 1 when the model cannot be resolved', async () => {
    const errors: string[] = [];
    vi.spyOn(console, 'error').mockImplementation((msg: string) => void errors.push(msg));
    expect(await inferenceCommand(['--model', 'generate:huge'])).toBe(1);
    expect(errors.join('\n')).toMatch(/unknown generated model "huge"/);
    await expect(resolveModel('missing.gguf')).rejects.toThrow(/neither a file/);
  });
});
