import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { repoRoot } from '../../src/store/paths.js';

/** The site's hand-written pages: docs/ without what `npm run docs:gen` writes (.gitignore) and the build's output. */
export const docsDir = join(repoRoot, 'docs');
const generated = ['.vitepress', '.generated', 'reference/cli', 'reference/sdk', 'reference/config.md', 'environments', 'snippets'];

/** Every hand-written page of the site, as a path relative to docs/. */
export function guidePages(): string[] {
  const pages: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      const rel = relative(docsDir, path);
      if (generated.some((g) => rel === g || rel.startsWith(`${g}/`))) continue;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) pages.push(rel);
    }
  };
  walk(docsDir);
  return pages.sort();
}

/** A fenced block marked `runnable` (```sh runnable), with the ```text output block that follows it, if any. */
export interface RunnableBlock {
  page: string;
  /** 1-based line of the opening fence. */
  line: number;
  commands: string[];
  /** The lines the output must hold, in order; `…` stands for any text. */
  output: string[] | null;
  /** The code samples the page includes (`<<< @/snippets/my-env.ts`), as paths relative to docs/. */
  snippets: string[];
}

/** A fenced block of a page: its info string (`sh runnable`), its lines, and the 0-based lines of its fences. */
export interface Fence {
  info: string;
  body: string[];
  start: number;
  end: number;
}

/**
 * The fenced blocks of a page (at the start of a line). A fence of more backticks holds shorter ones as text (a page
 * that shows how to write a runnable block).
 */
export function fencesOf(page: string): Fence[] {
  const lines = readFileSync(join(docsDir, page), 'utf8').split('\n');
  const fences: Fence[] = [];
  for (let i = 0; i < lines.length; i++) {
    // Indented too: a block inside a list item.
    const open = /^\s*(`{3,})(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const close = new RegExp(`^\\s*${open[1]}\`*\\s*$`);
    let end = i + 1;
    while (end < lines.length && !close.test(lines[end]!)) end++;
    if (end === lines.length) throw new Error(`${page}:${i + 1}: the block is never closed`);
    fences.push({ info: open[2]!.trim(), body: lines.slice(i + 1, end), start: i, end });
    i = end;
  }
  return fences;
}

/** The runnable blocks of one page. */
export function runnableBlocks(page: string): RunnableBlock[] {
  const lines = readFileSync(join(docsDir, page), 'utf8').split('\n');
  const snippets = lines.flatMap((l) => /^\s*<<< @\/(snippets\/[^\s#{]+)/.exec(l)?.[1] ?? []);
  const fences = fencesOf(page);
  const onlyBlankBetween = (from: number, to: number) => lines.slice(from + 1, to).every((l) => l.trim() === '');
  return fences.flatMap((fence, k) => {
    if (!/^\S+\s.*\brunnable\b/.test(fence.info)) return [];
    const next = fences[k + 1];
    const output = next && next.info === 'text output' && onlyBlankBetween(fence.end, next.start) ? next.body : null;
    return [{ page, line: fence.start + 1, commands: fence.body.filter((l) => l.trim() !== ''), output, snippets }];
  });
}

/** A command line split into words as a POSIX shell would for these pages: spaces, and '…' or "…" quoting. */
export function shellWords(line: string): string[] {
  const words: string[] = [];
  for (const m of line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)) words.push(m[1] ?? m[2] ?? m[3]!);
  return words;
}

/** Whether `stdout` holds the expected lines in order; `…` in a line stands for any text. The first line missing, or null. */
export function missingOutput(expected: string[], stdout: string): string | null {
  const actual = stdout.split('\n').map((line) => line.trimEnd());
  let at = 0;
  for (const want of expected) {
    const pattern = new RegExp(`^${want.trimEnd().split('…').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
    const found = actual.findIndex((line, i) => i >= at && pattern.test(line));
    if (found < 0) return want;
    at = found + 1;
  }
  return null;
}
