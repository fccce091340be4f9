// How the guides' blocks are read: the expected output's `…`, and the order of its lines.
import { describe, expect, it } from 'vitest';
import { fencesOf, guidePages, missingOutput, shellWords } from './blocks.js';

describe('a guide’s shown output', () => {
  it('matches `…` to any text, anywhere in a line, and nothing else loosely', () => {
    const stdout = 'run x\nwrote 2 groups to /a/b/out.jsonl and /a/b/out.html\n';
    expect(missingOutput(['wrote 2 groups to …/out.jsonl and …/out.html'], stdout)).toBeNull();
    expect(missingOutput(['wrote 3 groups to …'], stdout)).toBe('wrote 3 groups to …');
    expect(missingOutput(['wrote 2 groups'], stdout)).toBe('wrote 2 groups');
    expect(missingOutput(['a (b) [c] $d. * +'], 'a (b) [c] $d. * +')).toBeNull();
  });

  it('holds its lines in the order shown', () => {
    expect(missingOutput(['gsm8k …', 'tool_calling …'], 'gsm8k  x\ntool_calling y')).toBeNull();
    expect(missingOutput(['tool_calling …', 'gsm8k …'], 'gsm8k  x\ntool_calling y')).toBe('gsm8k …');
  });
});

it('splits a command line as the shell does for the guides’ commands', () => {
  expect(shellWords(`npx clotho process ./my-env.ts --env.name 'a b' --x "c d"`)).toEqual(['npx', 'clotho', 'process', './my-env.ts', '--env.name', 'a b', '--x', 'c d']);
});

it('leaves no code pasted into a guide: TypeScript and JavaScript come from files the suite compiles (<<< @/snippets/…)', () => {
  const pasted = guidePages().flatMap((page) =>
    fencesOf(page)
      .filter((fence) => /^(ts|tsx|js|mjs|typescript|javascript)\b/.test(fence.info))
      .map((fence) => `${page}:${fence.start + 1}`),
  );
  expect(pasted).toEqual([]);
});
