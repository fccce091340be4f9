// The README fits on a screen or two, points into the docs, and its example environment is the guide's, which
// docs/snippets compiles and tests (so the README's code cannot drift from code that runs).
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../src/store/paths.js';

const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');

describe('README.md', () => {
  it('is at most 150 lines', () => {
    expect(readme.trimEnd().split('\n').length).toBeLessThanOrEqual(150);
  });

  it('shows the guide’s example environment as it is in docs/snippets/my-env.ts', () => {
    const code = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(code).toBe(readFileSync(join(repoRoot, 'docs/snippets/my-env.ts'), 'utf8'));
  });

  it('links only to files and folders of the repository that exist, the guides among them', () => {
    const links = [...readme.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)].map((m) => m[1]!).filter((link) => !/^[a-z]+:/.test(link));
    expect(links).toContain('docs/guide/quick-start.md');
    expect(links).toContain('docs/guide/atropos.md');
    for (const link of links) expect(existsSync(join(dirname(join(repoRoot, 'README.md')), link)), link).toBe(true);
  });

  it('names --atropos, the way to bring an Atropos environment', () => {
    expect(readme).toContain('--atropos env.py');
  });
});
